"""Per-question state shared by the stages: the config, per-question views of the backends
(so concurrent questions count their own LLM calls and KG queries), the trace being built,
stage timers, and the one place that decides whether a stage uses the LLM."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dtkg.backends.embedding import Embedder, Reranker
from dtkg.backends.llm import LLM
from dtkg.config import DTKGConfig
from dtkg.kg.base import KnowledgeGraph
from dtkg.pipeline.scoring import HybridScorer, RelationScorer, relation_scorer
from dtkg.trace import Trace


@dataclass
class RunContext:
    question: str
    config: DTKGConfig
    llm: LLM | None
    embedder: Embedder
    reranker: Reranker | None
    kg: KnowledgeGraph
    trace: Trace
    _scorer: HybridScorer | None = field(default=None, repr=False)
    _relation_scorer: RelationScorer | None = field(default=None, repr=False)
    _nested: list[float] = field(default_factory=list, repr=False)

    # ------------------------------------------------------------------ notes and timing
    def note(self, text: str) -> None:
        """Record a fallback or a deterministic decision (once)."""
        if text not in self.trace.notes:
            self.trace.notes.append(text)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the block's time to ``stats.seconds[stage]``. Times are exclusive: a stage
        timed inside another (KG queries inside verification) is not counted twice, so the
        stages add up to the run's time."""
        start = time.perf_counter()
        self._nested.append(0.0)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            inner = self._nested.pop()
            if self._nested:
                self._nested[-1] += elapsed
            seconds = self.trace.stats.seconds
            seconds[stage] = round(seconds.get(stage, 0.0) + elapsed - inner, 4)

    # ------------------------------------------------------------------ stage methods
    def use_llm(self, stage: str) -> bool:
        """True when ``<stage>_with`` is "llm" and an LLM is there; notes the fallback when
        the LLM was asked for but is missing."""
        wanted = getattr(self.config, f"{stage}_with") == "llm"
        if wanted and self.llm is None:
            self.note(
                f"{stage}: no LLM available (llm_backend = none), so the deterministic "
                "method ran instead"
            )
            return False
        return wanted

    # ------------------------------------------------------------------ scorers
    @property
    def alpha(self) -> float:
        return self.config.alpha if self.reranker is not None else 0.0

    @property
    def scorer(self) -> HybridScorer:
        if self._scorer is None:
            self._scorer = HybridScorer(
                self.embedder, self.reranker, self.alpha, self.config.top_k_cosine
            )
        return self._scorer

    @property
    def relations(self) -> RelationScorer:
        if self._relation_scorer is None:
            self._relation_scorer = relation_scorer(
                self.config.relation_scorer, self.embedder, self.reranker, self.alpha
            )
            self._relation_scorer.cue_threshold = self.config.cue_threshold
            self._relation_scorer.top_k = self.config.top_k_cosine
        return self._relation_scorer
