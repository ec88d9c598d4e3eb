"""Entity linking (paper eq. 2): mentions → KG ids, disambiguated.

Mentions come from the LLM (``link_with="llm"``: a JSON list, parsed tolerantly) or from the
question itself: [bracketed] and "quoted" spans first, then runs of capitalised words, then
(for all-lowercase questions) word n-grams, longest first. Each mention is searched in the
KG by label; candidates are ranked by label match (exact > alias > fuzzy) plus the
similarity of their label and description to the question, and the runners-up go into the
trace. User text reaches the KG only through ``search_entities`` (escaped there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dtkg.errors import KGError, ModelError
from dtkg.kg.base import EntityCandidate
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.parsing import DATA_RULE, delimit, parse_list, strip_echo
from dtkg.pipeline.text import STOPWORDS, WH_WORDS, marked_spans, tokenize
from dtkg.trace import EntityLink

# lower-case words inside names and titles ("Tales from the Gimli Hospital"); a run that is
# not a label as a whole is split at them again (see _link_sub_runs)
_CONNECTORS = {
    "of",
    "the",
    "de",
    "van",
    "von",
    "der",
    "la",
    "le",
    "du",
    "da",
    "di",
    "y",
    "upon",
    "on",
    "and",
    "&",
    "-",
    "a",
    "an",
    "in",
    "to",
    "for",
    "from",
    "with",
    "at",
    "by",
}
_ARTICLES = {"the", "a", "an"}
MAX_SEARCHES = 12  # n-gram searches for one question (each is a KG query)
MIN_FUZZY = 0.7  # fuzzy matches below this score are not links


@dataclass
class Mention:
    text: str
    start: int
    end: int
    method: str  # marked | capitalised | ngram | llm


def mentions_by_rules(question: str) -> list[Mention]:
    """Candidate mentions, most trustworthy first (marked, then capitalised runs)."""
    found = [Mention(text, s, e, "marked") for s, e, text in marked_spans(question)]
    covered = [(m.start, m.end) for m in found]
    tokens = tokenize(question)
    run: list = []

    def flush() -> None:
        while run and run[-1].lower in _CONNECTORS:
            run.pop()
        if run and all(t.lower in STOPWORDS or t.lower in _CONNECTORS for t in run):
            run.clear()  # "I", "Her": a capitalised function word alone is no name
        if run:
            start, end = run[0].start, run[-1].end
            if not any(s <= start < e for s, e in covered):
                found.append(Mention(question[start:end], start, end, "capitalised"))
        run.clear()

    for i, token in enumerate(tokens):
        capital = token.text[:1].isupper() or (token.text[:1].isdigit() and run)
        gap = question[tokens[i - 1].end : token.start].strip() if i else ""
        sentence_start = i == 0 or (gap != "" and all(c in ".?!:;" for c in gap))
        if capital and sentence_start and token.lower in (STOPWORDS | WH_WORDS):
            following = tokens[i + 1].text[:1] if i + 1 < len(tokens) else ""
            # "The Way is a film …": a leading article before a capital may start a title
            capital = token.lower in _ARTICLES and following.isupper()
        if capital or (
            run
            and token.lower in _CONNECTORS
            and question[run[-1].end : token.start].strip() in ("", "-")
        ):
            run.append(token)
        else:
            flush()
    flush()
    return found


def ngram_mentions(question: str, max_n: int = 5) -> list[Mention]:
    """Content-word n-grams, longest first (for questions without capitals or marks)."""
    tokens = tokenize(question)
    out: list[Mention] = []
    for n in range(min(max_n, len(tokens)), 0, -1):
        for i in range(len(tokens) - n + 1):
            gram = tokens[i : i + n]
            if gram[0].lower in STOPWORDS or gram[-1].lower in STOPWORDS:
                continue
            if n == 1 and (gram[0].lower in WH_WORDS or len(gram[0].text) < 3):
                continue
            start, end = gram[0].start, gram[-1].end
            out.append(Mention(question[start:end], start, end, "ngram"))
    return out


LINK_SYSTEM = "You extract entity names from questions. " + DATA_RULE


def mentions_by_llm(ctx: RunContext) -> list[Mention] | None:
    prompt = (
        "List the named entities (people, places, organisations, works, products, other "
        "specific things) that the question mentions, the one the question is about first. "
        "Copy each name exactly as written. Reply with a JSON list of strings: "
        '["<name>", "<name>"].\n' + delimit(ctx.question)
    )
    try:
        text = ctx.llm.generate(prompt, max_new_tokens=64, system=LINK_SYSTEM)
    except ModelError as exc:
        ctx.note(f"linking: the LLM failed ({exc}); mentions were found by label matching")
        return None
    names = [
        n
        for n in (strip_echo(x, ctx.question) for x in parse_list(text))
        if 0 < len(n) <= 120 and "<" not in n
    ]
    mentions = []
    low = ctx.question.lower()
    for name in names:
        position = low.find(name.lower())
        if position >= 0:
            mentions.append(
                Mention(
                    ctx.question[position : position + len(name)],
                    position,
                    position + len(name),
                    "llm",
                )
            )
        else:
            mentions.append(Mention(name, -1, -1, "llm"))
    if not mentions:
        ctx.note(
            "linking: no entity names could be read from the LLM reply; mentions were "
            "found by label matching"
        )
        return None
    return mentions


def _rank(
    ctx: RunContext, mention: Mention, found: list[EntityCandidate]
) -> list[tuple[float, EntityCandidate]]:
    texts = [f"{c.label}: {c.description}" if c.description else c.label for c in found]
    context = ctx.embedder.similarity(ctx.question, texts) if texts else []
    ranked = []
    for cand, sim in zip(found, context):
        case_bonus = 0.05 if cand.matched == mention.text or cand.label == mention.text else 0.0
        ranked.append((round(cand.score + 0.3 * float(sim) + case_bonus, 4), cand))
    ranked.sort(key=lambda pair: -pair[0])
    return ranked


def link_mention(
    ctx: RunContext, mention: Mention, *, allow_fuzzy: bool = True
) -> EntityLink | None:
    try:
        found = ctx.kg.search_entities(mention.text, limit=5, fuzzy=allow_fuzzy)
    except KGError as exc:
        ctx.note(f"linking: searching '{mention.text}' failed ({exc})")
        return None
    found = [c for c in found if c.match != "fuzzy" or (allow_fuzzy and c.score >= MIN_FUZZY)]
    if not found:
        return None
    ranked = _rank(ctx, mention, found)
    score, best = ranked[0]
    runners = [
        {"qid": c.qid, "label": c.label, "description": c.description, "score": s, "match": c.match}
        for s, c in ranked[1:]
    ]
    return EntityLink(
        mention.text,
        best.qid,
        best.label,
        best.description,
        score,
        f"{mention.method}:{best.match}",
        runners,
    )


def link_question(
    ctx: RunContext, *, llm_mentions: list[Mention] | None = None
) -> list[tuple[Mention, EntityLink]]:
    """Every entity the question mentions, linked; non-overlapping, in question order."""
    mentions: list[Mention] | None = llm_mentions or None
    if llm_mentions is None and ctx.use_llm("link"):
        mentions = mentions_by_llm(ctx)
    links: list[tuple[Mention, EntityLink]] = []
    if mentions:
        for mention in mentions:
            link = link_mention(ctx, mention)
            if link is not None:
                links.append((mention, link))
        if links:
            return _ordered(links)
        ctx.note("linking: none of the LLM's mentions is in the KG; trying label matching")
    by_rules = mentions_by_rules(ctx.question)
    for mention in by_rules:
        link = link_mention(ctx, mention)
        if link is not None:
            links.append((mention, link))
        elif mention.method == "capitalised" and " " in mention.text:
            _link_sub_runs(ctx, mention, links)
    if links:
        return _ordered(links)
    if any(m.method == "marked" for m in by_rules):
        ctx.note(
            "linking: the marked entity ("
            + ", ".join(m.text for m in by_rules if m.method == "marked")
            + ") is not in the KG"
        )
        return []
    searches = 0
    taken: list[tuple[int, int]] = []
    for mention in ngram_mentions(ctx.question):
        if searches >= MAX_SEARCHES:
            ctx.note(f"linking: stopped after {MAX_SEARCHES} n-gram searches")
            break
        if any(mention.start < e and s < mention.end for s, e in taken):
            continue
        searches += 1
        link = link_mention(ctx, mention, allow_fuzzy=False)
        if link is not None:
            links.append((mention, link))
            taken.append((mention.start, mention.end))
    return _ordered(links)


def _link_sub_runs(ctx: RunContext, mention: Mention, links: list) -> None:
    """A capitalised run that is not a label as a whole ("Inception Christopher Nolan"):
    try its parts, longest first."""
    tokens = tokenize(mention.text)
    taken: list[tuple[int, int]] = []
    for n in range(len(tokens) - 1, 0, -1):
        for i in range(len(tokens) - n + 1):
            start = mention.start + tokens[i].start
            end = mention.start + tokens[i + n - 1].end
            if any(start < e and s < end for s, e in taken):
                continue
            text = ctx.question[start:end]
            if tokens[i].lower in _CONNECTORS or tokens[i + n - 1].lower in _CONNECTORS:
                continue
            link = link_mention(ctx, Mention(text, start, end, mention.method), allow_fuzzy=False)
            if link is not None:
                links.append((Mention(text, start, end, mention.method), link))
                taken.append((start, end))


def _ordered(links: list[tuple[Mention, EntityLink]]) -> list[tuple[Mention, EntityLink]]:
    seen: set[str] = set()
    out = []
    for mention, link in sorted(links, key=lambda ml: ml[0].start if ml[0].start >= 0 else 10**6):
        if link.qid in seen:
            continue
        seen.add(link.qid or "")
        out.append((mention, link))
    return out


def central_entity(links: list[tuple[Mention, EntityLink]]) -> list[tuple[Mention, EntityLink]]:
    """Anchors for the chained search, best first: marked spans, then the better-linked and
    later mentions (the anchor of "the X of the Y of E" comes last); a short all-capitals
    word ("CEO") that may be a role rather than a name goes last."""

    def key(pair: tuple[Mention, EntityLink]) -> tuple[float, ...]:
        mention, link = pair
        acronym = len(links) > 1 and mention.text.isupper() and len(mention.text) <= 4
        return (mention.method == "marked", not acronym, round(link.score, 1), mention.start)

    return sorted(links, key=key, reverse=True)


def word_spans(question: str, text: str) -> list[tuple[int, int]]:
    """Character spans of ``text`` in ``question`` (case-insensitive)."""
    if not text:
        return []
    return [(m.start(), m.end()) for m in re.finditer(re.escape(text), question, re.IGNORECASE)]
