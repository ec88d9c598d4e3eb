"""Two-stage hybrid scoring (paper eq. 3–4), shared by both tracks.

Stage I keeps the top K candidates by embedding cosine; stage II scores those with the
reranker (when there is one) and fuses: ``combined = α·rerank + (1−α)·cos``. Without a
reranker α is 0 and the trace says so.

:class:`RelationScorer` scores relation *labels* against a question in context: the label
against the whole question (mention masked), and against the question's individual cue
words and short phrases ("director" ↔ "director", "wife" ↔ "spouse", "acted" ↔ "starred
actors"), plus shared word roots. The chained track also uses its word-level alignments to
decide which question cues a path has used up. Register another scorer with
:func:`register_relation_scorer` and select it with ``config.relation_scorer``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dtkg.backends.embedding import Embedder, Reranker
from dtkg.pipeline.text import STOPWORDS, VAGUE, WH_WORDS, stem, stems, tokenize


@dataclass
class Scored:
    index: int
    cosine: float
    rerank: float | None
    combined: float


class HybridScorer:
    """Cosine top-K, then reranker, fused with α (paper eq. 4)."""

    def __init__(self, embedder: Embedder, reranker: Reranker | None, alpha: float, top_k: int):
        self.embedder = embedder
        self.reranker = reranker
        self.alpha = alpha if reranker is not None else 0.0
        self.top_k = top_k

    def rank(self, query: str, texts: Sequence[str]) -> list[Scored]:
        """The top-K texts by cosine, reranked and fused; best first."""
        if not texts:
            return []
        cosines = self.embedder.similarity(query, list(texts))
        order = np.argsort(-cosines, kind="stable")[: self.top_k]
        reranks: list[float | None] = [None] * len(order)
        if self.reranker is not None and self.alpha > 0:
            scores = self.reranker.score(query, [texts[i] for i in order])
            reranks = [float(s) for s in scores]
        out = []
        for i, rerank in zip(order, reranks):
            cos = float(cosines[i])
            combined = cos if rerank is None else self.alpha * rerank + (1 - self.alpha) * cos
            out.append(Scored(int(i), cos, rerank, combined))
        out.sort(key=lambda s: -s.combined)
        return out


# ---------------------------------------------------------------------- question context
@dataclass
class Cue:
    """A content word of the question outside the entity mentions."""

    word: str
    index: int  # token index
    distance: float  # tokens (+ characters/100) to the nearest mention: chain order
    phrases: list[str] = field(default_factory=list)  # short n-grams around it
    side: int = -1  # -1 before the (first) mention, +1 after it


@dataclass
class QuestionContext:
    """The question as the relation scorer sees it: mentions masked, cue words listed."""

    question: str
    masked: str  # mentions replaced by "X"
    cues: list[Cue]
    mention_spans: list[tuple[int, int]]

    @classmethod
    def build(cls, question: str, mentions: Sequence[tuple[int, int]]) -> QuestionContext:
        tokens = tokenize(question)
        inside = [any(s <= t.start < e for s, e in mentions) for t in tokens]
        mention_tokens = [t.index for t, hit in zip(tokens, inside) if hit]
        mention_chars = [(s, e) for s, e in mentions]
        masked_parts: list[str] = []
        for t, hit in zip(tokens, inside):
            if hit:
                if not masked_parts or masked_parts[-1] != "X":
                    masked_parts.append("X")
            else:
                masked_parts.append(t.text)
        cues: list[Cue] = []
        kept = [t for t, hit in zip(tokens, inside) if not hit]
        for t in kept:
            low = t.lower
            if low in STOPWORDS or low in WH_WORDS or low in VAGUE or low.isdigit() or len(low) < 2:
                continue
            distance = min((abs(t.index - m) for m in mention_tokens), default=len(tokens))
            gap = min((max(s - t.end, t.start - e, 0) for s, e in mention_chars), default=0)
            distance += min(gap, 99) / 100
            side = 1 if mention_tokens and t.index > mention_tokens[0] else -1
            cues.append(Cue(low, t.index, distance, _phrases(tokens, inside, t.index), side))
        return cls(question, " ".join(masked_parts), cues, list(mentions))

    def residual(self, used: set[int] | frozenset[int]) -> str:
        """The masked question without the cue words a path has already used: what is left
        to explain."""
        if not used:
            return self.masked
        drop = {self.cues[i].word for i in used}
        return " ".join(w for w in self.masked.split() if w.lower() not in drop) or self.masked


def _phrases(tokens, inside, index: int) -> list[str]:
    """n-grams (n ≤ 3) containing token ``index`` that do not cross a mention and do not
    start or end with a function word."""
    out = []
    for n in (2, 3):
        for start in range(index - n + 1, index + 1):
            end = start + n
            if start < 0 or end > len(tokens) or any(inside[start:end]):
                continue
            gram = [t.lower for t in tokens[start:end]]
            if gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                continue
            out.append(" ".join(gram))
    return out


# ---------------------------------------------------------------------- a small thesaurus
# General English words that name the same kind of relation, for pairs a small sentence
# embedder does not connect ("what type of film" ↔ genre, "words that describe" ↔ tags).
# Word roots (see text.stem); a question word in a group aligns with a label containing
# another word of the group at RELATED_ALIGNMENT.
_GROUPS = [
    "type kind sort genre category class style",
    "describe description word about topic subject term keyword tag theme",
    "wife husband spouse married marry partner",
    "act actor actress star starr cast appear play perform performer",
    "direct director filmmaker",
    "writ author screenwriter script screenplay penn",
    "rate rating good opinion review score",
    "popular famous popularity vote",
    "language speak",
    "found founder establish",
    "locat headquarter based",
    "child son daughter",
    "parent father mother",
    "sibling brother sister",
    "birth birthday birthplace",
    "death",
]
RELATED_ALIGNMENT = 0.8


def _related() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for group in _GROUPS:
        roots = {stem(w) for w in group.split()}
        for root in roots:
            out.setdefault(root, set()).update(roots - {root})
    return {k: frozenset(v) for k, v in out.items()}


RELATED = _related()


# ---------------------------------------------------------------------- relation scoring
@dataclass
class RelationScore:
    label: str
    cosine: float  # in-context similarity in [0, 1]
    rerank: float | None
    combined: float
    cue: int | None  # index into QuestionContext.cues of the best-aligned unused cue word
    alignment: float  # that cue's word-level alignment (a hop "uses" the cue when high)


class RelationScorer:
    """Scores relation labels against a question (see the module docstring)."""

    # how much the best cue alignment counts against the whole-question cosine
    cue_weight: float = 0.6
    use_thesaurus: bool = True  # the RELATED word groups ("hybrid-plain" turns them off)

    def __init__(
        self,
        embedder: Embedder,
        reranker: Reranker | None = None,
        alpha: float = 0.0,
        cue_threshold: float = 0.6,
        top_k: int = 50,
    ):
        self.embedder = embedder
        self.reranker = reranker
        self.alpha = alpha if reranker is not None else 0.0
        self.cue_threshold = cue_threshold
        self.top_k = top_k  # stage I: only the top K labels by in-context cosine go on

    def alignments(
        self, ctx: QuestionContext, labels: Sequence[str], *, phrases: bool = False
    ) -> np.ndarray:
        """(cues × labels) alignment in [0, 1]: 1 for a shared word root, 0.8 for related
        words (the thesaurus), else the cosine of the cue word — or, with ``phrases``, the
        best cosine of the word or a short phrase around it — with the label."""
        if not ctx.cues or not labels:
            return np.zeros((len(ctx.cues), len(labels)), dtype=np.float32)
        texts = []
        owners = []
        for ci, cue in enumerate(ctx.cues):
            for text in [cue.word, *(cue.phrases if phrases else [])]:
                texts.append(text)
                owners.append(ci)
        vectors = self.embedder.encode([*texts, *labels])
        sims = vectors[: len(texts)] @ vectors[len(texts) :].T
        out = np.full((len(ctx.cues), len(labels)), -1.0, dtype=np.float32)
        for row, owner in enumerate(owners):
            out[owner] = np.maximum(out[owner], sims[row])
        label_stems = [stems(label) for label in labels]
        for ci, cue in enumerate(ctx.cues):
            cue_stem = stem(cue.word)
            related = RELATED.get(cue_stem, frozenset()) if self.use_thesaurus else frozenset()
            for li, root in enumerate(label_stems):
                if cue_stem in root and len(cue_stem) >= 3:
                    out[ci, li] = 1.0
                elif related & root:
                    out[ci, li] = max(out[ci, li], RELATED_ALIGNMENT)
        return np.clip(out, 0.0, 1.0)

    def score(
        self,
        ctx: QuestionContext,
        labels: Sequence[str],
        used: set[int] | frozenset[int] = frozenset(),
    ) -> list[RelationScore]:
        """Score each label; cues in ``used`` (already consumed by the path) are ignored."""
        if not labels:
            return []
        labels = list(labels)
        sentence = np.clip(self.embedder.similarity(ctx.residual(used), labels), 0.0, 1.0)
        align = self.alignments(ctx, labels)
        phrase = self.alignments(ctx, labels, phrases=True)
        out = []
        for li, label in enumerate(labels):
            best_cue, best = None, 0.0
            for ci in range(len(ctx.cues)):
                if ci in used:
                    continue
                value = float(align[ci, li])
                if value > best + 1e-6 or (
                    best_cue is not None
                    and abs(value - best) <= 1e-6
                    and ctx.cues[ci].distance < ctx.cues[best_cue].distance
                ):
                    best_cue, best = ci, value
            in_phrase = max(
                (float(phrase[ci, li]) for ci in range(len(ctx.cues)) if ci not in used),
                default=0.0,
            )
            if best >= self.cue_threshold:  # the label names a word of the question
                cos = self.cue_weight * max(best, in_phrase) + (1 - self.cue_weight) * float(
                    sentence[li]
                )
            else:  # a bridge: only what is left of the question speaks for it
                cos = max(float(sentence[li]), self.cue_weight * in_phrase)
            cos = max(cos, float(sentence[li]))
            out.append(RelationScore(label, cos, None, cos, best_cue, best))
        # stage I keeps the top K by cosine; stage II reranks those and fuses (eq. 4)
        out.sort(key=lambda r: -r.cosine)
        out = out[: self.top_k]
        if self.reranker is not None and self.alpha > 0 and out:
            scores = self.reranker.score(ctx.question, [r.label for r in out])
            for r, rerank in zip(out, scores):
                r.rerank = float(rerank)
                r.combined = self.alpha * r.rerank + (1 - self.alpha) * r.cosine
        return out


class PlainRelationScorer(RelationScorer):
    """The hybrid scorer without the thesaurus: embeddings and word roots only."""

    use_thesaurus = False


RELATION_SCORERS: dict[str, Callable[[Embedder, Reranker | None, float], RelationScorer]] = {
    "hybrid": RelationScorer,
    "hybrid-plain": PlainRelationScorer,
}


def register_relation_scorer(
    name: str, factory: Callable[[Embedder, Reranker | None, float], RelationScorer]
) -> None:
    """Plug in another relation scorer (e.g. for benchmarking); select it by name with
    ``config.relation_scorer``."""
    RELATION_SCORERS[name] = factory


def relation_scorer(
    name: str, embedder: Embedder, reranker: Reranker | None, alpha: float
) -> RelationScorer:
    from dtkg.errors import ConfigError

    if name not in RELATION_SCORERS:
        raise ConfigError(
            f"Unknown relation scorer {name!r}; choose one of {', '.join(sorted(RELATION_SCORERS))}."
        )
    return RELATION_SCORERS[name](embedder, reranker, alpha)
