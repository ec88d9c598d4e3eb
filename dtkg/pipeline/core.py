"""The pipeline: classify → parallel or chained track → answer, as a stream of typed events.

``Pipeline(config).run(question)`` validates the question (raising :class:`InputError`
before any event), then yields :class:`~dtkg.trace.ProgressEvent` for model loading and long
steps, :class:`ClassifiedEvent` first among the stage events, :class:`EntityLinkedEvent`,
:class:`FactCheckedEvent` per fact (parallel) or :class:`PathsExpandedEvent` per layer
(chained), :class:`AnswerEvent`, and always ends with :class:`TraceEvent`. Backend failures
(KG endpoint down, model errors) end the run with an abstention whose reason names them.

Modes: ``dtkg`` (classifier routes), ``only-fact`` / ``only-chain`` (fixed branch),
``random`` (seeded coin per question), ``no-denoise`` (dtkg without denoising), ``cot``
(the LLM alone, no KG — the only mode that answers without KG evidence).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator

from dtkg.backends.embedding import Embedder, Reranker
from dtkg.backends.llm import LLM
from dtkg.config import DTKGConfig
from dtkg.errors import DTKGError
from dtkg.kg.base import KnowledgeGraph
from dtkg.pipeline import answer as answering
from dtkg.pipeline.chained import search_anchor, top_paths
from dtkg.pipeline.compare import comparison_in
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.linking import central_entity, link_question
from dtkg.pipeline.parallel import run_parallel, superlative_over_ends
from dtkg.pipeline.scoring import QuestionContext
from dtkg.pipeline.text import answer_type, validate_question
from dtkg.trace import (
    AnswerEvent,
    Classification,
    ClassifiedEvent,
    EntityLinkedEvent,
    Event,
    ProgressEvent,
    Trace,
    TraceEvent,
)

Classifier = Callable[..., Classification]


class Pipeline:
    """DTKG over one set of backends; thread-safe (per-question state lives in a context)."""

    def __init__(
        self,
        config: DTKGConfig,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        kg: KnowledgeGraph | None = None,
        classifier: Classifier | None = None,
    ) -> None:
        from dtkg.backends import get_embedder, get_llm, get_reranker

        self.config = config
        self.llm = llm if llm is not None else (get_llm(config) if config.uses_llm else None)
        self.embedder = embedder if embedder is not None else get_embedder(config)
        self.reranker = reranker if reranker is not None else get_reranker(config)
        if kg is None:
            from dtkg.kg import open_kg

            kg = open_kg(config)
        self.kg = kg
        self._classifier = classifier

    # ------------------------------------------------------------------ public API
    def run(self, question: str) -> Iterator[Event]:
        """Validate now (InputError before any event), then stream the stage events."""
        text = validate_question(question, self.config.max_question_chars)
        return self._run(text)

    def answer(self, question: str) -> Trace:
        """Run to the end and return the trace."""
        trace = None
        for event in self.run(question):
            if isinstance(event, TraceEvent):
                trace = event.trace
        assert trace is not None
        return trace

    # ------------------------------------------------------------------ the run
    def _context(self, question: str) -> RunContext:
        trace = Trace(question=question, mode=self.config.mode, config=self.config.public_dict())
        kg = self.kg.with_stats() if hasattr(self.kg, "with_stats") else self.kg
        llm = self.llm.with_usage() if self.llm is not None else None
        return RunContext(question, self.config, llm, self.embedder, self.reranker, kg, trace)

    def _run(self, question: str) -> Iterator[Event]:
        started = time.perf_counter()
        ctx = self._context(question)
        trace = ctx.trace
        try:
            yield from self._load(ctx)
            yield from self._stages(ctx)
        except DTKGError as exc:
            trace.error = f"{type(exc).__name__}: {exc}"
            trace.abstained, trace.abstain_reason = True, f"a backend failed: {exc}"
            trace.answer, trace.answers = "", []
            yield AnswerEvent("answer", "", [], True, trace.abstain_reason)
        self._finish_stats(ctx, started)
        yield TraceEvent("trace", trace=trace)

    def _load(self, ctx: RunContext) -> Iterator[Event]:
        """Load weights before the first stage so the UI can show it."""
        needs_embedder = ctx.config.mode != "cot"
        backends = [
            ("embedder", self.embedder if needs_embedder else None),
            ("reranker", self.reranker if needs_embedder else None),
            ("LLM", self.llm),
        ]
        for what, backend in backends:
            if backend is not None and not getattr(backend, "loaded", True):
                yield ProgressEvent("load", f"Loading the {what} ({backend.model_id})…")
                with ctx.timed("load"):
                    backend.load()
        if self.reranker is None and needs_embedder:
            ctx.note("no reranker: α = 0 (combined score = cosine)")

    def _stages(self, ctx: RunContext) -> Iterator[Event]:
        config, trace = ctx.config, ctx.trace
        if config.mode == "cot":
            yield from self._cot(ctx)
            return
        with ctx.timed("classify"):
            classification = self._classify(ctx)
        trace.classification = classification
        trace.branch = classification.label
        yield ClassifiedEvent("classify", classification=classification)
        with ctx.timed("link"):
            if (
                classification.label == "parallel"
                and ctx.use_llm("draft")
                and ctx.use_llm("decompose")
                and ctx.use_llm("link")
            ):
                ctx.note(
                    "link_with = llm: the draft names each fact's subject, so the "
                    "question's own entities are found by label matching (no extra call)"
                )
                links = link_question(ctx, llm_mentions=[])
            else:
                links = link_question(ctx)
        if not links:
            reason = "no entity of the question was found in the knowledge graph"
            yield from self._abstain(ctx, reason)
            return
        anchors = central_entity(links) if classification.label == "chained" else links
        for _mention, link in anchors:
            trace.entities.append(link)
            yield EntityLinkedEvent("link", link=link)
        if classification.label == "chained":
            yield from self._chained(ctx, anchors)
        else:
            result = yield from run_parallel(ctx, links)
            if result.abstain_reason or not result.answer:
                yield from self._abstain(ctx, result.abstain_reason or "no answer found")
                return
            yield from self._answer(ctx, result.answer, result.answers)

    # ------------------------------------------------------------------ classification
    def _classify(self, ctx: RunContext) -> Classification:
        mode = ctx.config.mode
        if mode == "only-fact":
            return Classification("parallel", 0.0, "fixed:only-fact", reason="mode only-fact")
        if mode == "only-chain":
            return Classification("chained", 1.0, "fixed:only-chain", reason="mode only-chain")
        if mode == "random":
            digest = hashlib.sha256(f"{ctx.config.seed}:{ctx.question}".encode()).hexdigest()
            coin = random.Random(int(digest[:16], 16)).random()
            label = "chained" if coin < 0.5 else "parallel"
            ctx.note(
                f"random routing: seeded coin {coin:.3f} (seed {ctx.config.seed} + "
                "question hash) → " + label
            )
            return Classification(label, 0.5, "random", reason=f"coin {coin:.3f}")
        classify = self._classifier
        if classify is None:
            from dtkg.pipeline.classify import classify
        return classify(ctx.question, ctx.config, llm=ctx.llm, embedder=ctx.embedder)

    # ------------------------------------------------------------------ chained
    def _chained(self, ctx: RunContext, anchors) -> Iterator[Event]:
        config, trace = ctx.config, ctx.trace
        mention = anchors[0][0]
        expected = answer_type(
            ctx.question, [(mention.start, mention.end)] if mention.start >= 0 else None
        )
        ctx.note(
            f"expected answer: {expected.kind}" + (f" ('{expected.noun}')" if expected.noun else "")
        )
        results = []
        for mention, link in anchors[:2]:
            spans = [(mention.start, mention.end)] if mention.start >= 0 else []
            qctx = QuestionContext.build(ctx.question, spans)
            found = yield from search_anchor(
                ctx, link.qid, link.label or mention.text, qctx, expected
            )
            results.append(found)
            if found.branches and (found.branches[0].sufficient or found.decided_by == "llm"):
                break
            if len(anchors) > 1 and not results[1:]:
                ctx.note(f"chained: no sufficient path from {link.label}; trying the next entity")
        good = [
            r for r in results if r.branches and (r.branches[0].sufficient or r.decided_by == "llm")
        ]
        result = (good or [r for r in results if r.branches] or [None])[0]
        if result is None:
            yield from self._abstain(
                ctx, "no path from the question's entity reached an answer of the kind it asks for"
            )
            return
        best = result.branches[0]
        ends = best.ranked_ends()
        comparison = comparison_in(ctx.question)
        if comparison is not None and comparison.superlative and len(ends) > 1:
            with ctx.timed("compare"):
                decision = superlative_over_ends(ctx, [(e.id, e.label) for e in ends], comparison)
            if decision is not None:
                best.priority = {label: i for i, label in enumerate(decision.ranked)}
                answers = [e.label for e in best.ranked_ends()][: config.max_answers]
                trace.paths = top_paths(result.branches, config.top_paths)
                yield from self._answer(ctx, decision.winner or answers[0], answers)
                return
        trace.paths = top_paths(result.branches, config.top_paths)
        ends = ends[: config.max_answers]
        answers = [e.label for e in ends]
        rules_answer = answering.format_set(answers)
        answer = None
        if ctx.use_llm("answer"):
            yield ProgressEvent("answer", "Generating the answer from the top paths")
            with ctx.timed("answer"):
                answer = answering.llm_answer_from_paths(ctx, trace.paths)
        else:
            ctx.note(
                "answer_with = rules: the answer is the end entities of the best path "
                f"({best.relations()})"
            )
        yield from self._answer(ctx, answer or rules_answer, answers)

    # ------------------------------------------------------------------ cot
    def _cot(self, ctx: RunContext) -> Iterator[Event]:
        ctx.trace.branch = "cot"
        if ctx.llm is None:
            yield from self._abstain(ctx, "cot mode needs an LLM (llm_backend is none)")
            return
        yield ProgressEvent("answer", "Answering with the LLM alone (chain of thought)")
        with ctx.timed("answer"):
            answer = answering.cot_answer(ctx)
        ctx.note("cot: the LLM answered alone, without KG evidence (baseline)")
        if not answer:
            yield from self._abstain(ctx, "the LLM gave no answer")
            return
        yield from self._answer(ctx, answer, [answer])

    # ------------------------------------------------------------------ endings
    def _answer(self, ctx: RunContext, answer: str, answers: list[str]) -> Iterator[Event]:
        trace = ctx.trace
        trace.answer = answer
        trace.answers = list(dict.fromkeys(answers))[: ctx.config.max_answers]
        yield AnswerEvent("answer", trace.answer, list(trace.answers), False, "")

    def _abstain(self, ctx: RunContext, reason: str) -> Iterator[Event]:
        trace = ctx.trace
        trace.abstained, trace.abstain_reason = True, reason
        trace.answer, trace.answers = "", []
        ctx.note(f"abstained: {reason}")
        yield AnswerEvent("answer", "", [], True, reason)

    def _finish_stats(self, ctx: RunContext, started: float) -> None:
        stats = ctx.trace.stats
        if ctx.llm is not None:
            usage = ctx.llm.usage
            stats.llm_calls = usage.calls
            stats.llm_prompt_tokens = usage.prompt_tokens
            stats.llm_completion_tokens = usage.completion_tokens
            stats.llm_tokens = usage.tokens
            stats.llm_seconds = round(usage.seconds, 4)
        kg_stats = getattr(ctx.kg, "stats", None)
        if kg_stats is not None:
            stats.kg_queries = kg_stats.queries
            stats.kg_cache_hits = kg_stats.cache_hits
            stats.kg_cache_misses = kg_stats.cache_misses
        stats.total_seconds = round(time.perf_counter() - started, 4)
