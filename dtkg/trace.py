"""The trace (the audit record of one question) and the events the pipeline yields.

Everything the UI shows comes from a :class:`Trace`; it is what feedback stores and what
``python -m dtkg ask --json`` prints. All classes are plain dataclasses and serialise with
:func:`Trace.to_dict` / :func:`Trace.to_json`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Label = Literal["chained", "parallel"]
Verdict = Literal["supported", "revised", "unverified"]


@dataclass
class Triple:
    """One KG statement; ``score`` is the relevance the stage that chose it gave it."""

    subject: str
    subject_id: str
    relation: str
    relation_id: str
    object: str
    object_id: str
    score: float | None = None
    # Optional detail from two-stage scoring (cosine, rerank, combined = score).
    cosine: float | None = None
    rerank: float | None = None

    def text(self) -> str:
        """The triple as a sentence-like string, for embedding and prompts."""
        return f"{self.subject} {self.relation} {self.object}"

    def arrow(self) -> str:
        """KG-CoT style serialisation: ``A → relation → B``."""
        return f"{self.subject} → {self.relation} → {self.object}"


@dataclass
class Classification:
    label: Label
    p_chained: float
    method: str  # "llm", "rules", "rules+embedding", "random", "fixed:<mode>", "fallback:rules"
    fired: list[str] = field(default_factory=list)  # rules/cues/nearest examples that fired
    reason: str = ""


@dataclass
class EntityLink:
    mention: str
    qid: str | None
    label: str | None = None
    description: str = ""
    score: float = 0.0
    method: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)  # runners-up


@dataclass
class Fact:
    claim: str
    verdict: Verdict
    evidence: list[Triple] = field(default_factory=list)
    revised: str | None = None
    entity: EntityLink | None = None
    note: str = ""


@dataclass
class Path:
    score: float
    hops: list[Triple] = field(default_factory=list)

    def arrow(self) -> str:
        """``A → r1 → B → r2 → C``; a hop walked against its direction (the path reached its
        object first) is written ``B ← r2 ← C``."""
        if not self.hops:
            return ""
        first = self.hops[0]
        inverse = (
            len(self.hops) > 1
            and first.subject_id
            and first.subject_id in (self.hops[1].subject_id, self.hops[1].object_id)
        )
        at = first.object_id if inverse else first.subject_id
        out = first.object if inverse else first.subject
        for hop in self.hops:
            if at and hop.object_id == at and hop.subject_id != at:
                out += f" ← {hop.relation} ← {hop.subject}"
                at = hop.subject_id
            else:
                out += f" → {hop.relation} → {hop.object}"
                at = hop.object_id
        return out


@dataclass
class Stats:
    llm_calls: int = 0
    llm_tokens: int = 0
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_seconds: float = 0.0
    kg_queries: int = 0
    kg_cache_hits: int = 0
    kg_cache_misses: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    total_seconds: float = 0.0


@dataclass
class Trace:
    question: str
    mode: str = "dtkg"
    classification: Classification | None = None
    branch: Label | Literal["cot", "none"] | None = None
    answer: str = ""
    answers: list[str] = field(default_factory=list)  # ranked candidate labels
    abstained: bool = False
    abstain_reason: str = ""
    facts: list[Fact] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    entities: list[EntityLink] = field(default_factory=list)
    draft: str = ""  # the LLM's draft answer (parallel branch) if any
    stats: Stats = field(default_factory=Stats)
    config: dict[str, Any] = field(default_factory=dict)  # the settings that produced this
    notes: list[str] = field(default_factory=list)  # fallbacks, deterministic decisions, α=0 …
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        kwargs.setdefault("ensure_ascii", False)
        return json.dumps(self.to_dict(), **kwargs)


# ---------------------------------------------------------------------------- events


@dataclass
class Event:
    """Base of everything :meth:`dtkg.pipeline.Pipeline.run` yields."""

    stage: str


@dataclass
class ProgressEvent(Event):
    """A long step started (model loading, KG query, generation); for progress display."""

    message: str = ""


@dataclass
class ClassifiedEvent(Event):
    classification: Classification = None  # type: ignore[assignment]


@dataclass
class EntityLinkedEvent(Event):
    link: EntityLink = None  # type: ignore[assignment]


@dataclass
class FactCheckedEvent(Event):
    fact: Fact = None  # type: ignore[assignment]


@dataclass
class PathsExpandedEvent(Event):
    depth: int = 0
    paths: list[Path] = field(default_factory=list)  # current best paths after this layer


@dataclass
class AnswerEvent(Event):
    answer: str = ""
    answers: list[str] = field(default_factory=list)
    abstained: bool = False
    reason: str = ""


@dataclass
class TraceEvent(Event):
    """Always the last event: the complete trace."""

    trace: Trace = None  # type: ignore[assignment]
