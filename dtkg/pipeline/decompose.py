"""Atomic facts (paper eq. 1): from an LLM draft answer, or from the question itself.

``draft_with="llm"``: the LLM drafts an answer R; with ``decompose_with="llm"`` the same call
also lists R's atomic facts and each fact's subject as JSON (one call, parsed tolerantly);
with ``"rules"`` R is split into clauses. ``draft_with="rules"``: there is no draft and the
question is split into sub-questions by clause splitting: "and", commas, "both",
"respectively", coordinated entities ("Where were A and B born?" → one sub-question each)
and coordinated attributes ("the capital and population of France" → two). A pronoun
("it", "he", "they") takes the previous sub-question's entity — or, for a person pronoun,
its answer entity ("Who directed X and what other films did they make?").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dtkg.errors import ModelError
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.linking import Mention
from dtkg.pipeline.parsing import (
    DATA_RULE,
    delimit,
    parse_records,
    strip_echo,
    text_before_json,
)
from dtkg.pipeline.text import STOPWORDS, WH_WORDS, tokenize
from dtkg.trace import EntityLink

_PERSON_PRONOUNS = {"he", "she", "they", "him", "her", "them", "his", "their"}
_THING_PRONOUNS = {"it", "its", "this", "that"}
_CLAUSE_STARTERS = WH_WORDS | {
    "is",
    "are",
    "was",
    "were",
    "did",
    "does",
    "do",
    "has",
    "have",
    "had",
    "can",
    "could",
    "will",
    "would",
    "in",
    "on",
    "at",
}


@dataclass
class Part:
    """One atomic fact to check: a sub-question (rules) or a drafted claim (LLM)."""

    text: str
    link: EntityLink | None = None
    mention: str = ""
    pronoun: str | None = None  # resolved later against the previous part
    is_claim: bool = False  # True: an assertion with a value (from a draft)
    original: str = ""  # the text before a pronoun was replaced by its entity


def split_question(question: str, links: list[tuple[Mention, EntityLink]]) -> list[Part]:
    """Clause splitting of the question (see the module docstring)."""
    text = re.sub(r"\brespectively\b,?", "", question, flags=re.IGNORECASE)
    text = re.sub(r"\bboth\b\s*", "", text, flags=re.IGNORECASE)
    text = " ".join(text.split())
    clauses = _split_clauses(text)
    parts: list[Part] = []
    for clause in clauses:
        parts.extend(_split_coordinated_entities(clause, links))
    for part in parts:
        found = [(m, lk) for m, lk in links if m.text and m.text.lower() in part.text.lower()]
        if found:
            part.link, part.mention = found[-1][1], found[-1][0].text
        else:
            pronoun = next(
                (
                    w.lower
                    for w in tokenize(part.text)
                    if w.lower in _PERSON_PRONOUNS | _THING_PRONOUNS
                ),
                None,
            )
            part.pronoun = pronoun
    return parts


def _split_clauses(text: str) -> list[str]:
    """Split at "and"/"," when what follows starts a new clause (a question word or an
    auxiliary), or when it coordinates attributes of one "of X" phrase."""
    pieces = re.split(r"\s*(?:,\s*and\b|\band\b|;)\s*", text)
    if len(pieces) == 1:
        return [text]
    clauses: list[str] = [pieces[0]]
    for piece in pieces[1:]:
        first = (tokenize(piece)[:1] or [None])[0]
        if first is not None and first.lower in _CLAUSE_STARTERS:
            clauses.append(piece)
        else:
            clauses[-1] = clauses[-1] + " and " + piece
    out: list[str] = []
    for clause in clauses:
        out.extend(_split_attributes(clause))
    return [c.strip(" ,?") + "?" for c in out if c.strip(" ,?")]


def _split_attributes(clause: str) -> list[str]:
    """ "What is the capital and population of France" → two questions."""
    match = re.match(
        r"^(?P<left>.*?\b(?:the|its|their)\s+)(?P<a>[\w' -]+?)\s+and\s+(?:the\s+)?"
        r"(?P<b>[\w' -]+?)\s+(?P<tail>(?:of|for|in)\s+.+)$",
        clause,
        re.IGNORECASE,
    )
    if not match:
        return [clause]
    left, a, b, tail = match["left"], match["a"], match["b"], match["tail"]
    if any(w.lower() in WH_WORDS for w in (a.split() + b.split())):
        return [clause]
    return [f"{left}{a} {tail}", f"{left}{b} {tail}"]


def _split_coordinated_entities(clause: str, links: list[tuple[Mention, EntityLink]]) -> list[Part]:
    """ "Where were A and B born?" → "Where were A born?", "Where were B born?"."""
    names = [m.text for m, _ in links if m.text and m.text.lower() in clause.lower()]
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            pattern = re.compile(
                rf"({re.escape(first)})\s*(?:,|\band\b|\bor\b|,\s*and\b|,\s*or\b)\s*({re.escape(second)})",
                re.IGNORECASE,
            )
            match = pattern.search(clause)
            if match:
                before, after = clause[: match.start()], clause[match.end() :]
                return [Part(f"{before}{first}{after}"), Part(f"{before}{second}{after}")]
    return [Part(clause)]


# ---------------------------------------------------------------------- LLM drafting
DRAFT_SYSTEM = "You answer questions briefly and factually. " + DATA_RULE


def draft_prompt(question: str, decompose: bool) -> str:
    if not decompose:
        return f"{delimit(question)}\nAnswer in one or two short factual sentences."
    return (
        f"{delimit(question)}\n"
        "First answer the question in one or two short factual sentences. Then list the "
        "atomic facts your answer relies on: each one indivisible, with a subject, a verb and "
        "an object, and name each fact's subject exactly. Write the list as JSON in this "
        'shape:\n[{"fact": "<subject> <verb> <object>.", "subject": "<subject>"}]'
    )


def decompose_prompt(question: str) -> str:
    return (
        f"{delimit(question)}\n"
        "Split the question into independent sub-questions, one per fact needed, and name "
        "each one's subject entity exactly. Reply as JSON in this shape:\n"
        '[{"fact": "<sub-question>", "subject": "<subject>"}]'
    )


def _records_to_parts(records: list[dict], claim: bool, limit: int, question: str) -> list[Part]:
    parts = []
    for record in records[:limit]:
        text = next(
            (
                record[k]
                for k in ("fact", "claim", "question", "text")
                if isinstance(record.get(k), str)
            ),
            None,
        )
        text = strip_echo(text or "", question if claim else "")
        if not text or "<" in text or (claim and _same_text(text, question)):
            continue  # empty, the format template copied back, or the question repeated
        subject = record.get("subject") if isinstance(record.get("subject"), str) else ""
        parts.append(Part(text.strip()[:400], mention=subject.strip()[:120], is_claim=claim))
    return parts


def draft_and_decompose(ctx: RunContext) -> tuple[str, list[Part]] | None:
    """Draft answer and its atomic facts (LLM), or None when the LLM fails."""
    decompose = ctx.use_llm("decompose")
    try:
        reply = ctx.llm.generate(
            draft_prompt(ctx.question, decompose),
            max_new_tokens=ctx.config.llm_max_new_tokens,
            system=DRAFT_SYSTEM,
        )
    except ModelError as exc:
        ctx.note(f"draft: the LLM failed ({exc}); facts come from the question (clause splitting)")
        return None
    draft = strip_echo(text_before_json(reply) if decompose else reply, ctx.question)
    parts: list[Part] = []
    if decompose:
        parts = _records_to_parts(parse_records(reply), True, ctx.config.max_facts, ctx.question)
        if not parts:
            ctx.note(
                "decompose: no atomic facts could be read from the LLM reply; the draft "
                "was split into clauses instead"
            )
    if not parts:
        parts = [
            Part(s, is_claim=True)
            for s in split_sentences(draft)
            if not _same_text(s, ctx.question)
        ][: ctx.config.max_facts]
    return draft, parts


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).strip(" ?.!") == " ".join(b.lower().split()).strip(" ?.!")


def decompose_question(ctx: RunContext) -> list[Part] | None:
    try:
        reply = ctx.llm.generate(
            decompose_prompt(ctx.question), max_new_tokens=200, system=DRAFT_SYSTEM
        )
    except ModelError as exc:
        ctx.note(f"decompose: the LLM failed ({exc}); clause splitting was used")
        return None
    parts = _records_to_parts(parse_records(reply), False, ctx.config.max_facts, ctx.question)
    if not parts:
        ctx.note(
            "decompose: no sub-questions could be read from the LLM reply; clause "
            "splitting was used"
        )
        return None
    return parts


def split_sentences(text: str) -> list[str]:
    """Sentences, then "X and Y" clauses whose second half has its own verb."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?;])\s+", text or "") if s.strip()]
    out: list[str] = []
    for sentence in sentences:
        pieces = re.split(
            r",?\s+and\s+(?=(?:he|she|it|they|was|is|were|has|had)\b|[A-Z])", sentence
        )
        out.extend(p.strip().rstrip(",;") for p in pieces if len(tokenize(p)) >= 2)
    return out


def content_tokens(text: str) -> list[str]:
    return [t.lower for t in tokenize(text) if t.lower not in STOPWORDS]
