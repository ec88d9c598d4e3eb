"""Embedder and reranker interfaces, each with one abstract method, and their
sentence-transformers (and optional FlagEmbedding) implementations.

Embeddings are cached per text: relation labels and triples repeat across questions, so a
warm process mostly encodes only the question.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dtkg.config import resolve_model_path
from dtkg.errors import ModelError


class Embedder(ABC):
    name: str = "embedder"

    def __init__(self, model_id: str = "", *, batch_size: int = 64, cache_size: int = 200_000):
        self.model_id = model_id
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.cache_hits = 0
        self.cache_misses = 0

    @abstractmethod
    def _encode(self, texts: list[str]) -> np.ndarray:
        """Embed a batch; rows L2-normalised, shape (len(texts), dim)."""

    loaded = True

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        """Load weights if the backend has any (no-op by default)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached, batched); returns an (n, dim) float32 array."""
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            self.cache_hits += len(texts) - len(missing)
            self.cache_misses += len(missing)
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            vectors = np.asarray(self._encode(chunk), dtype=np.float32)
            with self._lock:
                for text, vector in zip(chunk, vectors):
                    self._cache[text] = vector
                    if len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        with self._lock:
            rows = [self._cache.get(t) for t in texts]
        if any(r is None for r in rows):  # evicted meanwhile by another thread: recompute
            return np.asarray(self._encode(texts), dtype=np.float32)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(rows)

    def similarity(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each text."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        vectors = self.encode([query, *texts])
        return vectors[1:] @ vectors[0]


class Reranker(ABC):
    name: str = "reranker"

    def __init__(self, model_id: str = ""):
        self.model_id = model_id

    @abstractmethod
    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Relevance of each (query, document) pair, in [0, 1]."""

    loaded = True

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        """Load weights if the backend has any (no-op by default)."""

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        if not documents:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._score([(query, d) for d in documents]), dtype=np.float32)


class _LazyModel:
    """Loads a model once, thread-safely, on first use; records the load time."""

    def __init__(self, loader: Callable[[], Any], what: str):
        self._loader = loader
        self._what = what
        self._model: Any = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def get(self, progress: Callable[[str], None] | None = None) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    if progress:
                        progress(f"Loading {self._what}…")
                    start = time.perf_counter()
                    self._model = self._loader()
                    self.load_seconds = time.perf_counter() - start
        return self._model


def _load_failure(kind: str, model_id: str, exc: Exception) -> ModelError:
    return ModelError(
        f"Could not load {kind} {model_id!r} ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}). "
        "Fix: with no network use --profile cpu (models shipped in PyPI packages), or point the "
        "setting at a local folder holding the model."
    )


def _device(device: str) -> str:
    if device != "auto":
        return device
    from dtkg.backends.transformers_llm import cuda_available

    return "cuda" if cuda_available() else "cpu"


class SentenceTransformerEmbedder(Embedder):
    name = "sentence-transformers"

    def __init__(self, model_id: str, *, device: str = "auto", batch_size: int = 64):
        super().__init__(model_id, batch_size=batch_size)

        def load() -> Any:
            from sentence_transformers import SentenceTransformer

            try:
                return SentenceTransformer(resolve_model_path(model_id), device=_device(device))
            except Exception as exc:  # noqa: BLE001
                raise _load_failure("embedder", model_id, exc) from exc

        self._lazy = _LazyModel(load, f"embedder {model_id}")

    @property
    def loaded(self) -> bool:  # type: ignore[override]
        return self._lazy.loaded

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        self._lazy.get(progress)

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self._lazy.get()
        return model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


class CrossEncoderReranker(Reranker):
    name = "sentence-transformers"

    def __init__(self, model_id: str, *, device: str = "auto", batch_size: int = 32):
        super().__init__(model_id)
        self.batch_size = batch_size

        def load() -> Any:
            from sentence_transformers import CrossEncoder

            try:
                return CrossEncoder(resolve_model_path(model_id), device=_device(device))
            except Exception as exc:  # noqa: BLE001
                raise _load_failure("reranker", model_id, exc) from exc

        self._lazy = _LazyModel(load, f"reranker {model_id}")

    @property
    def loaded(self) -> bool:  # type: ignore[override]
        return self._lazy.loaded

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        self._lazy.get(progress)

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        model = self._lazy.get()
        scores = np.asarray(
            model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False),
            dtype=np.float32,
        )
        if scores.ndim > 1:  # several labels: take the last ("relevant") column
            scores = scores[:, -1]
        if scores.size and (scores.min() < 0.0 or scores.max() > 1.0):  # raw logits
            scores = 1.0 / (1.0 + np.exp(-scores))
        return scores.tolist()


class FlagEmbeddingReranker(Reranker):
    """BGE reranker through FlagEmbedding, where that package imports beside the rest."""

    name = "flagembedding"

    def __init__(self, model_id: str, *, device: str = "auto"):
        super().__init__(model_id)

        def load() -> Any:
            try:
                from FlagEmbedding import FlagReranker
            except Exception as exc:  # noqa: BLE001
                raise ModelError(
                    f"FlagEmbedding cannot be imported here ({type(exc).__name__}: {exc}); use "
                    "reranker_backend='sentence-transformers', which serves the same BGE models "
                    "(see README, 'Dependency choices')."
                ) from exc
            try:
                return FlagReranker(
                    resolve_model_path(model_id), use_fp16=_device(device) == "cuda"
                )
            except Exception as exc:  # noqa: BLE001
                raise _load_failure("reranker", model_id, exc) from exc

        self._lazy = _LazyModel(load, f"reranker {model_id}")

    @property
    def loaded(self) -> bool:  # type: ignore[override]
        return self._lazy.loaded

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        self._lazy.get(progress)

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        scores = self._lazy.get().compute_score([list(p) for p in pairs], normalize=True)
        return [float(s) for s in (scores if isinstance(scores, list) else [scores])]
