"""A scripted pipeline yielding the real event classes, for UI development and tests.

``DTKG_FAKE_PIPELINE=1 python app.py`` starts the app on it: no models, no KG, instant answers.
Questions containing "of the" or "born" take the chained track, others the parallel one; a
question containing "FAIL" raises a :class:`ModelError`, "CRASH" a plain ``RuntimeError``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from dtkg.config import DTKGConfig
from dtkg.errors import InputError, ModelError
from dtkg.trace import (
    AnswerEvent,
    Classification,
    ClassifiedEvent,
    EntityLink,
    EntityLinkedEvent,
    Event,
    Fact,
    FactCheckedEvent,
    Path,
    PathsExpandedEvent,
    ProgressEvent,
    Stats,
    Trace,
    TraceEvent,
    Triple,
)

INCEPTION = ("Inception", "Q25188")
NOLAN = ("Christopher Nolan", "Q25191")
LONDON = ("London", "Q84")


def _triple(
    s: tuple[str, str],
    r: tuple[str, str],
    o: tuple[str, str],
    score: float,
    cos: float | None = None,
) -> Triple:
    return Triple(s[0], s[1], r[0], r[1], o[0], o[1], score=score, cosine=cos, rerank=None)


class FakePipeline:
    """Same surface as :class:`dtkg.pipeline.Pipeline`: ``run(question) -> Iterator[Event]``."""

    def __init__(self, config: DTKGConfig, *, delay: float = 0.0, **_backends: object):
        self.config = config
        self.delay = delay

    def _pause(self) -> None:
        if self.delay:
            time.sleep(self.delay)

    def run(self, question: str) -> Iterator[Event]:
        question = (question or "").strip()
        if not question:
            raise InputError("Please type a question.")
        if len(question) > self.config.max_question_chars:
            raise InputError(
                f"The question has {len(question)} characters; the limit is "
                f"{self.config.max_question_chars}."
            )
        if "FAIL" in question:
            raise ModelError("The scripted model failed on purpose (FAIL in the question).")
        if "CRASH" in question:
            raise RuntimeError("scripted crash")
        start = time.perf_counter()
        trace = Trace(question=question, mode=self.config.mode, config=self.config.public_dict())
        yield ProgressEvent("classify", "Classifying the question…")
        self._pause()
        chained = "of the" in question or "born" in question
        trace.classification = Classification(
            "chained" if chained else "parallel",
            0.91 if chained else 0.12,
            "rules",
            fired=["rule 2: a relation of an unnamed intermediate entity"]
            if chained
            else ["rule 5: one relation of a named entity"],
            reason="scripted",
        )
        trace.branch = trace.classification.label
        trace.stats.seconds["classify"] = time.perf_counter() - start
        yield ClassifiedEvent("classify", trace.classification)
        link = EntityLink("Inception", INCEPTION[1], "Inception", "2010 film", 1.0, "exact label")
        trace.entities.append(link)
        yield EntityLinkedEvent("link", link)
        if chained:
            yield from self._chained(trace)
        else:
            yield from self._parallel(trace)
        yield AnswerEvent("answer", trace.answer, trace.answers, False, "")
        trace.stats = Stats(
            llm_calls=0,
            kg_queries=4,
            kg_cache_hits=1,
            kg_cache_misses=3,
            seconds={**trace.stats.seconds, "answer": 0.001},
            total_seconds=time.perf_counter() - start,
        )
        trace.notes.append("α = 0: no reranker in this profile")
        yield TraceEvent("done", trace)

    def _chained(self, trace: Trace) -> Iterator[Event]:
        yield ProgressEvent("expand", "Expanding relations of Inception…")
        self._pause()
        director = _triple(INCEPTION, ("director", "P57"), NOLAN, 0.81, 0.81)
        screenwriter = _triple(INCEPTION, ("screenwriter", "P58"), NOLAN, 0.55, 0.55)
        birth = _triple(NOLAN, ("place of birth", "P19"), LONDON, 0.9, 0.9)
        layer1 = [Path(0.81, [director]), Path(0.55, [screenwriter])]
        yield PathsExpandedEvent("expand", 1, layer1)
        self._pause()
        trace.paths = [Path(0.729, [director, birth]), Path(0.495, [screenwriter, birth])]
        yield PathsExpandedEvent("expand", 2, trace.paths)
        trace.stats.seconds["expand"] = 0.01
        trace.answer, trace.answers = "London", ["London"]

    def _parallel(self, trace: Trace) -> Iterator[Event]:
        facts = [
            Fact(
                "Inception was directed by Christopher Nolan",
                "supported",
                [_triple(INCEPTION, ("director", "P57"), NOLAN, 0.84, 0.84)],
            ),
            Fact(
                "Inception was released in 2009",
                "revised",
                [
                    Triple(
                        "Inception",
                        "Q25188",
                        "publication date",
                        "P577",
                        "2010-07-08",
                        "",
                        score=0.77,
                        cosine=0.77,
                    )
                ],
                revised="Inception was released on 2010-07-08",
            ),
            Fact(
                "Inception is set in a local place",
                "unverified",
                [
                    Triple(
                        "Inception",
                        "Q25188",
                        "narrative location",
                        "P840",
                        "Dream city",
                        "dtkg-local-1",
                        score=0.2,
                        cosine=0.2,
                    )
                ],
            ),
        ]
        for fact in facts:
            yield ProgressEvent("verify", f"Checking “{fact.claim}”…")
            self._pause()
            trace.facts.append(fact)
            yield FactCheckedEvent("verify", fact)
        trace.stats.seconds["verify"] = 0.01
        trace.answer, trace.answers = "Christopher Nolan", ["Christopher Nolan"]
