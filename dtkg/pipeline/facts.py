"""Fact checking against the KG (paper §3.3.1, eq. 3–5).

For each atomic fact: the subject's triples (head, and tail where useful) are fetched for all
facts at once (one ``*_many`` query per direction), scored against the fact by the two-stage
hybrid scorer (cosine top-K → reranker → α-fusion), denoised (administrative relations,
necessity, triples claimed by several facts), and the best relation's triples become the
evidence. The verdict compares the fact with the evidence:

- ``supported``: the claim names the evidence's value (label, date or number);
- ``revised``: the evidence answers the fact but the claim says otherwise or says nothing
  (a sub-question): the fact is rewritten from the evidence (LLM, or a sentence built from
  the triples);
- ``unverified``: the subject or a fitting relation is not in the KG — never "supported".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from dtkg.pipeline import denoise
from dtkg.pipeline.answer import format_set
from dtkg.pipeline.compare import dates_in, numbers_in, parse_date, parse_quantity, value_kind
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.decompose import Part
from dtkg.pipeline.parsing import DATA_RULE, delimit
from dtkg.pipeline.text import ANY, DATE, QUANTITY, AnswerType, answer_type, words
from dtkg.pipeline.types import NO, YES, fits
from dtkg.trace import Fact, Triple


@dataclass
class Check:
    """A fact under check: its part, candidates and (once chosen) evidence."""

    part: Part
    expected: AnswerType
    candidates: list[Triple] = field(default_factory=list)
    evidence: list[Triple] = field(default_factory=list)
    fact: Fact | None = None
    exclude: set[str] = field(default_factory=set)  # entity ids not to give as answers

    answer_triples: list[Triple] = field(default_factory=list)  # evidence minus bridges
    answer_subject: str = ""  # the entity the answer triples hang on

    @property
    def values(self) -> list[str]:
        """The answer this fact contributes: the far ends of its answer triples."""
        out = [
            t.object
            if t.subject_id == self.answer_subject or t.object_id != self.answer_subject
            else t.subject
            for t in self.answer_triples
        ]
        return list(dict.fromkeys(v for v in out if v))


class FactChecker:
    """Fetches, scores and judges the triples of a set of facts (see the module docstring)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.head: dict[str, list[Triple]] = {}
        self.tail: dict[str, list[Triple]] = {}
        self.types: dict[str, set[str]] = {}
        self._type_labels = {t.lower() for t in ctx.config.type_relations}

    # ------------------------------------------------------------------ KG
    def fetch(self, ids: Sequence[str], *, tail: bool = True) -> None:
        ids = [i for i in dict.fromkeys(ids) if i]
        with self.ctx.timed("kg"):
            need = [i for i in ids if i not in self.head]
            if need:
                found = self.ctx.kg.head_relations_many(need)
                for qid in need:
                    self.head[qid] = found.get(qid, [])
                    self.types[qid] = {
                        t.object for t in self.head[qid] if t.relation.lower() in self._type_labels
                    }
            need = [i for i in ids if i not in self.tail] if tail else []
            if need:
                found = self.ctx.kg.tail_relations_many(need)
                for qid in need:
                    self.tail[qid] = found.get(qid, [])

    def triples_of(self, qid: str, *, tail: bool = True) -> list[Triple]:
        return list(self.head.get(qid, [])) + (list(self.tail.get(qid, [])) if tail else [])

    # ------------------------------------------------------------------ candidates
    def gather(self, checks: list[Check]) -> None:
        """Candidates of every fact: fetched together, then scored (two-stage hybrid)."""
        self.fetch([c.part.link.qid for c in checks if c.part.link and c.part.link.qid])
        for check in checks:
            link = check.part.link
            if not link or not link.qid:
                continue
            triples = [
                t
                for t in self.triples_of(link.qid)
                if not (t.object_id and t.object_id in check.exclude and t.subject_id == link.qid)
            ]
            dropped = denoise.drop_administrative(self.ctx, {t.relation for t in triples})
            triples = [t for t in triples if t.relation not in dropped]
            check.candidates = self.score(check.part.text, triples)

    def score(self, query: str, triples: list[Triple]) -> list[Triple]:
        """Top-K triples by cosine, reranked, fused (eq. 3–4); best first, scores filled in."""
        with self.ctx.timed("score"):
            ranked = self.ctx.scorer.rank(query, [t.text() for t in triples])
        return [
            dataclasses.replace(
                triples[s.index],
                score=round(s.combined, 4),
                cosine=round(s.cosine, 4),
                rerank=None if s.rerank is None else round(s.rerank, 4),
            )
            for s in ranked
        ]

    # ------------------------------------------------------------------ denoising
    def denoise(self, checks: list[Check]) -> None:
        """Necessity per relation label (one batched LLM call for all facts, or the hybrid
        score relative to each fact's best), then cross-redundant triples."""
        ctx = self.ctx
        if ctx.config.mode == "no-denoise":
            return
        labels = list(dict.fromkeys(t.relation for c in checks for t in c.candidates[:20]))
        p_need = denoise.necessity_by_llm(ctx, labels) if ctx.use_llm("necessity") else None
        threshold = ctx.config.necessity_threshold
        for check in checks:
            if not check.candidates:
                continue
            if p_need is not None:
                kept = [t for t in check.candidates if p_need.get(t.relation, 1.0) >= threshold]
            else:  # a relation is as necessary as its best triple, relative to the fact's best
                best = max(check.candidates[0].score or 0.0, 1e-6)
                by_relation: dict[str, float] = {}
                for t in check.candidates:
                    by_relation[t.relation] = max(by_relation.get(t.relation, 0.0), t.score or 0.0)
                kept = [t for t in check.candidates if by_relation[t.relation] / best >= threshold]
            check.candidates = kept or check.candidates[:1]
        if p_need is None:
            ctx.note(
                "denoise: relations whose best triple scores below necessity_threshold × "
                "their fact's best were dropped (necessity_with = rules)"
            )
        pruned, removed = denoise.cross_redundant([c.candidates for c in checks])
        for check, kept in zip(checks, pruned):
            check.candidates = kept
        if removed:
            ctx.note(
                f"denoise: {removed} triple(s) retrieved by several facts were kept only "
                "for the fact they serve best"
            )

    # ------------------------------------------------------------------ evidence
    def choose(self, check: Check) -> None:
        """Evidence: the best relation's triples among the candidates that fit the expected
        answer type; when none fits and the best object is an entity, one bridging hop."""
        link = check.part.link
        if not link or not link.qid or not check.candidates:
            return
        expected = check.expected
        fitting = [t for t in check.candidates if self._fits(expected, [t], link.qid) != NO]
        check.answer_subject = link.qid
        if fitting:
            check.evidence = check.answer_triples = self._relation_group(fitting, link.qid)
            return
        if self._bridge(check):
            return
        check.evidence = check.answer_triples = self._relation_group(check.candidates, link.qid)

    def _far(self, t: Triple, subject: str) -> tuple[str, str]:
        if t.subject_id == subject:
            return t.object_id, t.object
        return t.subject_id, t.subject

    def _fits(self, expected: AnswerType, triples: list[Triple], subject: str) -> str:
        if expected.kind == ANY:
            return YES
        ends = [self._far(t, subject) for t in triples]
        ids = [i for i, _ in ends if i and i not in self.types]
        if ids and expected.kind not in (DATE, QUANTITY):
            self.fetch(ids, tail=False)
        return fits(
            expected,
            [lb for _, lb in ends],
            [self.types.get(i, set()) for i, _ in ends],
            self.ctx.embedder,
            self.ctx.config.cue_threshold,
            [i for i, _ in ends],
        )

    def _relation_group(self, ranked: list[Triple], subject: str) -> list[Triple]:
        """Every triple of the best triple's relation (same direction): a set-valued answer
        keeps all its values, in a stable (alphabetical) order."""
        best = ranked[0]
        same = {
            (t.subject_id, t.relation_id, t.object_id or t.object): t
            for t in ranked
            if t.relation_id == best.relation_id
            and (t.subject_id == subject) == (best.subject_id == subject)
        }
        ordered = sorted(
            same.values(),
            key=lambda t: (
                (t.object if t.subject_id == subject else t.subject).lower(),
                t.object_id,
            ),
        )
        return ordered[: self.ctx.config.max_answers]

    def _bridge(self, check: Check) -> bool:
        """ "Who first climbed Mount Everest?": Everest → significant event → expedition →
        participant → the climbers. One extra hop from the best entity objects."""
        subject = check.part.link.qid
        firsts = [t for t in check.candidates[:5] if self._far(t, subject)[0]]
        if not firsts:
            return False
        middle = [self._far(t, subject)[0] for t in firsts]
        self.fetch(middle, tail=False)
        options: list[Triple] = []
        origin: dict[tuple[str, str, str], Triple] = {}
        for first, mid in zip(firsts, middle):
            for t in self.head.get(mid, []):
                if t.object_id == subject:
                    continue
                origin[(t.subject_id, t.relation_id, t.object_id or t.object)] = first
                options.append(t)
        if not options:
            return False
        dropped = denoise.drop_administrative(self.ctx, {t.relation for t in options})
        options = [t for t in options if t.relation not in dropped]
        scored = self.score(check.part.text, options)
        for t in scored:
            mid = t.subject_id
            group = self._relation_group(
                [t, *(o for o in scored if o.subject_id == mid and o.relation_id == t.relation_id)],
                mid,
            )
            if self._fits(check.expected, group, mid) == YES:
                first = origin[(t.subject_id, t.relation_id, t.object_id or t.object)]
                self.ctx.note(
                    f"facts: '{check.part.text}' needed one more hop "
                    f"({first.relation} → {t.relation}) to reach a fitting answer"
                )
                check.answer_triples = group[: self.ctx.config.max_answers]
                check.answer_subject = mid
                check.evidence = [first, *check.answer_triples]
                return True
        return False

    # ------------------------------------------------------------------ verdicts
    def verdict(self, check: Check) -> Fact:
        part = check.part
        link = part.link
        if not link or not link.qid:
            return Fact(
                part.text,
                "unverified",
                [],
                None,
                link,
                note="the fact's subject entity was not found in the KG",
            )
        if not check.evidence:
            return Fact(
                part.text,
                "unverified",
                [],
                None,
                link,
                note="no relation of the subject in the KG fits this fact",
            )
        values = check.values
        if part.is_claim and claim_matches(part.text, values):
            return Fact(
                part.text,
                "supported",
                check.evidence,
                None,
                link,
                note="the claim names the KG value",
            )
        revised = sentence_from(check.evidence, link.label or link.mention)
        note = (
            "completed from the KG (a sub-question, not a claim)"
            if not part.is_claim
            else "the claim differs from the KG; rewritten from the evidence"
        )
        return Fact(part.text, "revised", check.evidence, revised, link, note=note)


def claim_matches(claim: str, values: Sequence[str]) -> bool:
    """Does the claim state one of the values (label, date to its precision, number)?"""
    low = claim.lower()
    claim_words = set(words(low))
    claim_dates = dates_in(claim) + [d for d in map(parse_date, words(claim)) if d]
    claim_numbers = numbers_in(claim)
    for value in values:
        kind = value_kind(value)
        if kind == "year" and any(abs(n - float(value)) < 0.5 for n in claim_numbers):
            return True
        if kind in ("date", "year"):
            date = parse_date(value)
            if date and any(
                d.year == date.year
                and (not d.month or not date.month or (d.month, d.day) == (date.month, date.day))
                for d in claim_dates
            ):
                return True
        elif kind == "quantity":
            number = parse_quantity(value)
            if number is not None and any(
                abs(n - number) <= max(1e-6, 0.005 * abs(number)) for n in claim_numbers
            ):
                return True
        elif value and (value.lower() in low or set(words(value)) <= claim_words):
            return True
    return False


def sentence_from(evidence: Sequence[Triple], subject_label: str) -> str:
    """A deterministic rewrite: "Subject relation value(s)." from the evidence triples."""
    if not evidence:
        return ""
    groups: dict[tuple[str, str], list[str]] = {}
    for t in evidence:
        groups.setdefault((t.subject, t.relation), []).append(t.object)
    sentences = [
        f"{s} {r} {format_set(list(dict.fromkeys(objs)))}." for (s, r), objs in groups.items()
    ]
    return " ".join(sentences)


REVISE_SYSTEM = "You rewrite a claim so that it agrees with the given facts. " + DATA_RULE


def revise_prompt(claim: str, evidence: Sequence[Triple]) -> str:
    facts = "\n".join(t.arrow() for t in evidence)
    return (
        f"Knowledge-graph facts:\n{facts}\n\n{delimit(claim, 'CLAIM')}\n"
        "Rewrite the claim as one short sentence that agrees with the facts. Rewritten claim:"
    )


def expected_of(part: Part) -> AnswerType:
    return answer_type(part.text) if not part.is_claim else AnswerType()
