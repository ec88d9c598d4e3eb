"""The parallel track (paper §3.3.1): check independent facts against the KG, then answer.

Facts come from the LLM's draft answer (atomic facts) or from the question (sub-questions,
see :mod:`.decompose`); each is linked, checked (:mod:`.facts`) and reported as it is done.
Comparisons and superlatives are decided deterministically (:mod:`.compare`) from KG values:

- between named entities ("Who is older: A or B?"): each entity's value of the attribute
  the comparison word implies (date of birth, height, area, …);
- over a set ("the youngest adult male actor in the movie Inception"): the set relation of
  the entity (cast member), one ``head_relations_many`` query for the members, their
  attribute values, and the question's modifiers ("male", "adult") as filters.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date

from dtkg.errors import ModelError
from dtkg.pipeline import compare, denoise
from dtkg.pipeline.answer import checked_llm_answer, format_set
from dtkg.pipeline.compare import Comparison, is_kind
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.decompose import Part, decompose_question, draft_and_decompose, split_question
from dtkg.pipeline.facts import Check, FactChecker, expected_of, revise_prompt, sentence_from
from dtkg.pipeline.linking import Mention, link_mention
from dtkg.pipeline.parsing import DATA_RULE, clean_answer, delimit
from dtkg.pipeline.scoring import QuestionContext
from dtkg.pipeline.text import STOPWORDS, VAGUE, WH_WORDS, stem, words
from dtkg.pipeline.types import aligned_with_types
from dtkg.trace import EntityLink, Event, Fact, FactCheckedEvent, ProgressEvent, Triple

# Modifiers read as filters on set members: a word and the value words that satisfy it.
_VALUE_WORDS = {
    "male": {"male", "man", "men", "boy", "masculine"},
    "female": {"female", "woman", "women", "girl", "feminine"},
    "men": {"male", "man", "men"},
    "women": {"female", "woman", "women"},
}
ADULT_AGE = 18


@dataclass
class ParallelResult:
    answer: str = ""
    answers: list[str] = field(default_factory=list)
    abstain_reason: str = ""


def run_parallel(ctx: RunContext, links: list[tuple[Mention, EntityLink]]) -> Iterator[Event]:
    """Yields progress and one FactCheckedEvent per fact; returns a ParallelResult."""
    comparison = compare.comparison_in(ctx.question)
    parts = yield from _facts(ctx, links)
    checker = FactChecker(ctx)
    result = ParallelResult()
    facts: list[Fact] = []
    if comparison is not None and links:
        options = _options(ctx.question, links)
        with ctx.timed("compare"):
            if len(options) >= 2:
                planned, result = _compare_options(ctx, checker, comparison, options)
            elif comparison.superlative:
                planned, result = _superlative_over_set(ctx, checker, comparison, links)
            else:
                planned = []
        facts += planned
        yield from _emit(ctx, planned)
    decided = comparison is not None and bool(result.answers)
    if comparison is not None and not decided:
        ctx.note("compare: no comparable values were found, so the facts answer instead")
    # decided comparisons check only the draft's claims; otherwise every fact is checked
    to_check = [p for p in parts if p.is_claim] if decided else parts
    checks: list[Check] = []
    if to_check:
        yield ProgressEvent("verify", f"Checking {len(to_check)} fact(s) against the KG")
        checks = yield from _check(ctx, checker, to_check)
        facts += [c.fact for c in checks if c.fact is not None]
    if not decided:
        result = _rules_answer(ctx, checks)
    # the LLM's rewrites land in the same Fact objects, so the final trace shows them
    yield from _llm_finish(ctx, facts, checks, result, decided)
    return result


def _emit(ctx: RunContext, facts: list[Fact]) -> Iterator[Event]:
    """Each fact goes into the trace and out as an event as soon as it is decided."""
    for fact in facts:
        ctx.trace.facts.append(fact)
        yield FactCheckedEvent("verify", fact=fact)


# ---------------------------------------------------------------------- facts and links
def _facts(ctx: RunContext, links: list[tuple[Mention, EntityLink]]) -> Iterator[Event]:
    parts: list[Part] | None = None
    if ctx.use_llm("draft"):
        yield ProgressEvent("draft", "Drafting an answer")
        with ctx.timed("draft"):
            drafted = draft_and_decompose(ctx)
        if drafted is not None:
            ctx.trace.draft, parts = drafted
    else:
        ctx.note(
            "draft_with = rules: no draft answer; the atomic facts are the question's "
            "sub-questions (clause splitting)"
        )
    if parts is None and ctx.use_llm("decompose") and not ctx.use_llm("draft"):
        with ctx.timed("decompose"):
            parts = decompose_question(ctx)
    if parts is None:
        with ctx.timed("decompose"):
            parts = split_question(ctx.question, links)
    with ctx.timed("link"):
        _link_parts(ctx, parts, links)
    return parts[: max(ctx.config.max_facts, 1)] if parts and parts[0].is_claim else parts


def _link_parts(
    ctx: RunContext, parts: list[Part], links: list[tuple[Mention, EntityLink]]
) -> None:
    """Each part's subject: its own mention (LLM), a question entity it names, or the
    previous part's entity (pronouns)."""
    previous: Part | None = None
    for part in parts:
        if part.link is None and part.mention:
            known = [lk for m, lk in links if m.text.lower() == part.mention.lower()]
            part.link = (
                known[0] if known else link_mention(ctx, Mention(part.mention, -1, -1, "llm"))
            )
        if part.link is None:
            named = [(m, lk) for m, lk in links if m.text.lower() in part.text.lower()]
            if named:
                part.link, part.mention = named[-1][1], named[-1][0].text
        if part.link is None and previous is not None:
            part.link = previous.link
            part.pronoun = part.pronoun or "(carried over)"
            if part.link is not None and part.pronoun in _THING_PRONOUNS | _PERSON_PRONOUNS:
                part.original = part.text
                part.text = _replace_word(part.text, part.pronoun, part.link.label or "")
        if part.link is None and links:
            part.link = links[0][1]
        previous = part


_THING_PRONOUNS = {"it", "its", "this", "that"}
_PERSON_PRONOUNS = {"he", "she", "they", "him", "her", "them", "his", "their"}


def _replace_word(text: str, word: str, by: str) -> str:
    """The pronoun replaced by the entity's name, for scoring ("where did he die?")."""
    import re

    if not by:
        return text
    return re.sub(rf"\b{re.escape(word)}\b", by, text, count=1, flags=re.IGNORECASE)


def _options(
    question: str, links: list[tuple[Mention, EntityLink]]
) -> list[tuple[Mention, EntityLink]]:
    """Entities being compared: linked mentions joined by "or", "and" or commas."""
    low = question.lower()
    named = [(m, lk) for m, lk in links if m.start >= 0]
    if len(named) < 2:
        return []
    for (m1, _), (m2, _) in zip(named, named[1:]):
        between = low[m1.end : m2.start].strip(" ,")
        if between not in ("or", "and", "", "vs", "vs.", "versus", "or the", "and the"):
            return []
    return named


# ---------------------------------------------------------------------- comparisons
def _attribute_label(
    ctx: RunContext, comparison: Comparison, labels: list[str], per_entity: list[set[str]]
) -> str | None:
    """The relation the comparison is about: the label most like the comparison's hint,
    preferring labels every compared entity has."""
    if not labels:
        return None
    query = f"{comparison.hint} ({comparison.word})"
    ranked = ctx.scorer.rank(query, labels)

    def coverage(label: str) -> int:
        return sum(label in have for have in per_entity)

    best = max(ranked, key=lambda s: (coverage(labels[s.index]), s.combined))
    return labels[best.index]


def _valued(triples: list[Triple], kind: str) -> list[Triple]:
    return [t for t in triples if is_kind(t.object, kind) and not t.object_id]


def _compare_options(
    ctx: RunContext,
    checker: FactChecker,
    comparison: Comparison,
    options: list[tuple[Mention, EntityLink]],
) -> tuple[list[Fact], ParallelResult]:
    ids = [lk.qid for _, lk in options if lk.qid]
    checker.fetch(ids, tail=False)
    per_entity = [
        {t.relation for t in _valued(checker.head.get(lk.qid or "", []), comparison.kind)}
        for _, lk in options
    ]
    dropped = denoise.drop_administrative(ctx, set().union(*per_entity))
    labels = sorted(set().union(*per_entity) - dropped)
    label = _attribute_label(ctx, comparison, labels, per_entity)
    facts: list[Fact] = []
    items: list[tuple[str, str]] = []
    for mention, link in options:
        name = link.label or mention.text
        claim = f"{name}: {label or comparison.hint}?"
        evidence = [
            t
            for t in _valued(checker.head.get(link.qid or "", []), comparison.kind)
            if t.relation == label
        ]
        if not evidence:
            facts.append(
                Fact(
                    claim,
                    "unverified",
                    [],
                    None,
                    link,
                    note=f"no '{label or comparison.hint}' value in the KG",
                )
            )
            continue
        items += [(name, t.object) for t in evidence]
        facts.append(
            Fact(
                claim,
                "revised",
                _scored(evidence),
                sentence_from(evidence, name),
                link,
                note="completed from the KG (a comparison operand)",
            )
        )
    decision = compare.decide(items, comparison)
    result = ParallelResult()
    if decision.winner:
        result.answer, result.answers = decision.winner, decision.ranked
        ctx.note(f"compare (deterministic): {decision.explanation}")
    return facts, result


def _scored(triples: list[Triple], score: float = 1.0) -> list[Triple]:
    import dataclasses

    return [
        dataclasses.replace(t, score=t.score if t.score is not None else score) for t in triples
    ]


def _superlative_over_set(
    ctx: RunContext,
    checker: FactChecker,
    comparison: Comparison,
    links: list[tuple[Mention, EntityLink]],
) -> tuple[list[Fact], ParallelResult]:
    mention, anchor = links[0]
    result = ParallelResult()
    if not anchor.qid:
        return [], result
    checker.fetch([anchor.qid])
    qctx = QuestionContext.build(
        ctx.question, [(mention.start, mention.end)] if mention.start >= 0 else []
    )
    cues = [c for c in qctx.cues if c.word != comparison.word]
    qctx.cues = cues
    # the set: the anchor's entity-valued relation that best matches the question
    groups: dict[tuple[str, bool], list[Triple]] = {}
    for t in checker.triples_of(anchor.qid):
        head = t.subject_id == anchor.qid
        far_id = t.object_id if head else t.subject_id
        if far_id and far_id != anchor.qid:
            groups.setdefault((t.relation_id, head), []).append(t)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    dropped = denoise.drop_administrative(ctx, {v[0].relation for v in groups.values()})
    groups = {k: v for k, v in groups.items() if v[0].relation not in dropped}
    if not groups:
        return [], result
    labels = list(dict.fromkeys(v[0].relation for v in groups.values()))
    scores = {s.label: s for s in ctx.relations.score(qctx, labels)}
    groups = {k: v for k, v in groups.items() if v[0].relation in scores}
    key = max(groups, key=lambda k: (scores[groups[k][0].relation].combined, k[1]))
    set_triples = groups[key]
    set_label = set_triples[0].relation
    used_cue = scores[set_label].cue
    members = {(t.object_id if key[1] else t.subject_id): t for t in set_triples}
    checker.fetch(list(members), tail=False)
    # the attribute compared
    member_labels = [
        {t.relation for t in _valued(checker.head.get(m, []), comparison.kind)} for m in members
    ]
    attr_labels = sorted(
        set().union(*member_labels) - denoise.drop_administrative(ctx, set().union(*member_labels))
    )
    attribute = _attribute_label(ctx, comparison, attr_labels, member_labels)
    if attribute is None:
        return [], result
    birth = (
        attribute
        if comparison.hint.startswith("date of birth")
        else _attribute_label(
            ctx,
            compare.Comparison("born", "date", "min", "date of birth born", False),
            sorted({t.relation for m in members for t in _valued(checker.head.get(m, []), "date")}),
            [],
        )
    )
    # modifiers: words left once the set, the comparison and the entity's type are accounted for
    member_types = set().union(*(checker.types.get(m, set()) for m in members))
    anchor_types = checker.types.get(anchor.qid, set())
    modifiers = []
    for i, cue in enumerate(cues):
        if i == used_cue or cue.word in VAGUE or cue.word in WH_WORDS or cue.word in STOPWORDS:
            continue
        if stem(cue.word) in {stem(w) for w in words(set_label)}:
            continue
        if aligned_with_types(
            cue.word, member_types | anchor_types, ctx.embedder, ctx.config.cue_threshold
        ):
            continue
        modifiers.append(cue.word)
    applied, facts, items = _filter_members(
        ctx, checker, members, modifiers, attribute, birth, comparison, anchor
    )
    ctx.note(
        f"compare: the set is '{anchor.label} → {set_label}"
        f"{'' if key[1] else ' (inverse)'}' ({len(members)} members); attribute "
        f"'{attribute}'" + (f"; filters: {', '.join(applied)}" if applied else "")
    )
    set_fact = Fact(
        f"{anchor.label}: {set_label}?",
        "revised",
        _scored(set_triples),
        sentence_from(set_triples, anchor.label or ""),
        anchor,
        note="completed from the KG (the set being compared)",
    )
    decision = compare.decide(items, comparison)
    if decision.winner:
        result.answer, result.answers = decision.winner, decision.ranked
        ctx.note(f"compare (deterministic): {decision.explanation}")
    return [set_fact, *facts], result


def superlative_over_ends(
    ctx: RunContext, ends: list[tuple[str, str]], comparison: Comparison
) -> compare.Decision | None:
    """A superlative applied to the end set of a chained path ("which film directed by X was
    released first?" reached as X → director (inverse) → films): one query for the ends'
    values, then the deterministic compare."""
    ids = [i for i, _ in ends if i]
    if len(ids) < 2:
        return None
    checker = FactChecker(ctx)
    checker.fetch(ids, tail=False)
    per_end = [{t.relation for t in _valued(checker.head.get(i, []), comparison.kind)} for i in ids]
    labels = sorted(set().union(*per_end) - denoise.drop_administrative(ctx, set().union(*per_end)))
    attribute = _attribute_label(ctx, comparison, labels, per_end)
    if attribute is None:
        return None
    names = dict(ends)
    items = [
        (names[i], t.object)
        for i in ids
        for t in _valued(checker.head.get(i, []), comparison.kind)
        if t.relation == attribute
    ]
    decision = compare.decide(items, comparison)
    if decision.winner:
        ctx.note(
            f"compare (deterministic) over the path's {len(ids)} ends by '{attribute}': "
            f"{decision.explanation}"
        )
    return decision if decision.winner else None


def _filter_members(ctx, checker, members, modifiers, attribute, birth, comparison, anchor):
    """Apply the modifiers that apply to at least one member; return the applied ones, a
    fact per member and the (member, value) items to compare."""
    today = date.today()
    applied: list[str] = []
    tests = []
    for word in modifiers:
        if word == "adult" and birth:
            tests.append(
                (
                    word,
                    lambda triples, b=birth: any(
                        (d := compare.parse_date(t.object)) and d.age_on(today) >= ADULT_AGE
                        for t in triples
                        if t.relation == b
                    ),
                )
            )
            applied.append(word)
            continue
        accepted = _VALUE_WORDS.get(word, {word})

        def test(triples, accepted=accepted):
            return [t for t in triples if t.object_id and set(words(t.object)) & accepted]

        if any(test(checker.head.get(m, [])) for m in members):
            tests.append((word, lambda triples, f=test: bool(f(triples))))
            applied.append(word)
        else:
            ctx.note(f"compare: the modifier '{word}' matches no member's facts and was ignored")
    facts: list[Fact] = []
    items: list[tuple[str, str]] = []
    for member, set_triple in members.items():
        triples = checker.head.get(member, [])
        name = set_triple.object if set_triple.object_id == member else set_triple.subject
        values = [t for t in _valued(triples, comparison.kind) if t.relation == attribute]
        passed = all(check(triples) for _, check in tests)
        support = [
            t
            for t in triples
            if any(set(words(t.object)) & _VALUE_WORDS.get(w, {w}) for w in applied if w != "adult")
        ]
        link = EntityLink(name, member, name, score=1.0, method="set member")
        claim = f"{name}: {attribute}?"
        if not values:
            facts.append(
                Fact(
                    claim,
                    "unverified",
                    _scored(support),
                    None,
                    link,
                    note=f"no '{attribute}' value in the KG",
                )
            )
            continue
        evidence = _scored(values + support)
        note = "completed from the KG" + (
            "" if passed else "; filtered out by " + ", ".join(applied)
        )
        facts.append(Fact(claim, "revised", evidence, sentence_from(values, name), link, note=note))
        if passed:
            items += [(name, t.object) for t in values]
    return applied, facts, items


# ---------------------------------------------------------------------- plain facts
def _check(ctx: RunContext, checker: FactChecker, parts: list[Part]) -> Iterator[Event]:
    """Checks every part (one batched KG fetch for all) and yields each fact as soon as its
    verdict is in; returns the checks."""
    checks = [Check(p, expected_of(p)) for p in parts]
    # "what other films …": the entities named before are not the answer
    named = {p.link.qid for p in parts if p.link and p.link.qid}
    for check in checks:
        if "other" in words(check.part.text) or "else" in words(check.part.text):
            check.exclude = set(named) - {check.part.link.qid if check.part.link else ""}
            check.exclude |= {t.object_id for c in checks for t in c.evidence if t.object_id}
    with ctx.timed("verify"):
        checker.gather(checks)
        checker.denoise(checks)
    previous: Check | None = None
    for check in checks:
        if check.part.pronoun and previous is not None and _person_pronoun(check.part.pronoun):
            with ctx.timed("verify"):
                _follow_previous_answer(ctx, checker, check, previous)
        if "other" in words(check.part.text) and previous is not None:
            check.exclude |= {t.object_id or t.subject_id for t in previous.answer_triples}
            check.exclude |= {previous.part.link.qid} if previous.part.link else set()
            check.candidates = [
                t
                for t in check.candidates
                if (t.subject_id if t.object_id == check.part.link.qid else t.object_id)
                not in check.exclude
            ]
        with ctx.timed("verify"):
            checker.choose(check)
            check.fact = checker.verdict(check)
        if check.fact is not None:
            yield from _emit(ctx, [check.fact])
        previous = check
    return checks


def _person_pronoun(pronoun: str) -> bool:
    return pronoun in {"he", "she", "they", "him", "her", "them", "his", "their"}


def _follow_previous_answer(
    ctx: RunContext, checker: FactChecker, check: Check, previous: Check
) -> None:
    """ "Who directed X and what other films did they make?": 'they' is the first answer
    when that answer is an entity of the expected kind (a person)."""
    far = [
        t.object_id if t.subject_id == previous.answer_subject else t.subject_id
        for t in previous.answer_triples
    ]
    far = [f for f in far if f]
    if not far or not previous.part.link:
        return
    checker.fetch(far[:1], tail=False)
    if not any(w in t for t in checker.types.get(far[0], set()) for w in ("human", "person")):
        return
    first = previous.answer_triples[0]
    name = first.object if first.object_id == far[0] else first.subject
    check.part.link = EntityLink(name, far[0], name, score=1.0, method="previous answer")
    check.part.text = _replace_word(
        check.part.original or check.part.text, check.part.pronoun or "", name
    )
    check.exclude.add(previous.part.link.qid or "")
    checker.gather([check])
    ctx.note(
        f"facts: '{check.part.pronoun}' in '{check.part.original}' was read as {name} "
        "(the previous sub-question's answer)"
    )


FINISH_SYSTEM = (
    "You work only from the knowledge-graph facts you are given and reply briefly. " + DATA_RULE
)


def _rules_answer(ctx: RunContext, checks: list[Check]) -> ParallelResult:
    with_values = _answered(checks)
    if not with_values:
        reason = (
            "no fact could be checked against the KG"
            if checks
            else "the question gave no fact to check"
        )
        return ParallelResult(abstain_reason=reason)
    unverified = [c for c in checks if c not in with_values]
    if unverified:
        ctx.note(f"answer: {len(unverified)} fact(s) could not be verified and are left out")
    answers = list(dict.fromkeys(v for c in with_values for v in c.values))
    return ParallelResult("; ".join(format_set(c.values) for c in with_values), answers)


def _answered(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.fact and c.fact.verdict != "unverified" and c.values]


def _llm_finish(
    ctx: RunContext, facts: list[Fact], checks: list[Check], result: ParallelResult, decided: bool
) -> Iterator[Event]:
    """The LLM's rewrites of revised claims and its answer from the checked facts, in ONE
    batched call (each part only when its stage uses the LLM)."""
    claims = [f for f in facts if f.verdict == "revised" and f.note.startswith("the claim")]
    revise = bool(claims) and ctx.use_llm("revise")
    if claims and not revise:
        ctx.note("revise_with = rules: revised facts were rewritten from their triples")
    evidence = [t for c in _answered(checks) for t in c.evidence]
    answer = not decided and bool(evidence) and ctx.use_llm("answer")
    if not decided and evidence and not answer:
        ctx.note("answer_with = rules: the answer joins the checked facts' values")
    prompts = [revise_prompt(f.claim, f.evidence) for f in claims] if revise else []
    if answer:
        lines = "\n".join(t.arrow() for t in evidence)
        prompts.append(
            f"Knowledge-graph facts:\n{lines}\n\n{delimit(ctx.question)}\n"
            "Answer the question using only these facts. Reply with the answer "
            "only (names, dates or numbers; separate the parts of a several-part "
            "question with '; '), or 'unknown'. Answer:"
        )
    if not prompts:
        return
    yield ProgressEvent("answer", "Asking the LLM to rewrite facts and answer")
    try:
        with ctx.timed("answer"):
            replies = ctx.llm.complete_many(prompts, max_new_tokens=80, system=FINISH_SYSTEM)
    except ModelError as exc:
        ctx.note(f"answer: the LLM failed ({exc}); deterministic rewrites and answer were used")
        return
    if revise:
        for fact, reply in zip(claims, replies):
            text = clean_answer(reply.text)
            if text:
                fact.revised = text
    if answer:
        checked = checked_llm_answer(ctx, replies[-1].text, evidence)
        if checked:
            result.answer = checked
