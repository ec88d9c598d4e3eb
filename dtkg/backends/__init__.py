"""Backends chosen by name from the config, built once per process and shared by all requests.

Registries map a backend name to a factory taking the config; ``register_*`` adds your own.
Instances are cached by the settings that define them, so every question (and every Gradio
session) reuses the same loaded model; weights load lazily on first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from dtkg.backends.embedding import (
    CrossEncoderReranker,
    Embedder,
    FlagEmbeddingReranker,
    Reranker,
    SentenceTransformerEmbedder,
)
from dtkg.backends.llm import LLM, Completion, OptionScores, Usage
from dtkg.config import GPU_LLM, DTKGConfig
from dtkg.errors import ConfigError

__all__ = [
    "LLM",
    "Completion",
    "OptionScores",
    "Usage",
    "Embedder",
    "Reranker",
    "get_llm",
    "get_embedder",
    "get_reranker",
    "register_llm",
    "register_embedder",
    "register_reranker",
    "resolve_auto_profile",
    "clear_cache",
]


def _transformers_llm(c: DTKGConfig) -> LLM:
    from dtkg.backends.transformers_llm import TransformersLLM

    return TransformersLLM(
        c.llm_model, gguf_file=c.llm_gguf_file, device=c.device, dtype=c.llm_dtype
    )


def _openai_llm(c: DTKGConfig) -> LLM:
    from dtkg.backends.openai_llm import OpenAILLM

    return OpenAILLM(
        c.llm_model, base_url=c.llm_base_url or "", api_key=c.llm_api_key, timeout=c.llm_timeout
    )


LLM_BACKENDS: dict[str, Callable[[DTKGConfig], LLM]] = {
    "transformers": _transformers_llm,
    "openai": _openai_llm,
}
EMBEDDER_BACKENDS: dict[str, Callable[[DTKGConfig], Embedder]] = {
    "sentence-transformers": lambda c: SentenceTransformerEmbedder(
        c.embedder_model, device=c.device, batch_size=c.embedder_batch_size
    ),
}
RERANKER_BACKENDS: dict[str, Callable[[DTKGConfig], Reranker]] = {
    "sentence-transformers": lambda c: CrossEncoderReranker(
        c.reranker_model or "", device=c.device
    ),
    "flagembedding": lambda c: FlagEmbeddingReranker(c.reranker_model or "", device=c.device),
}

_instances: dict[tuple[Any, ...], Any] = {}
_instances_lock = threading.Lock()


def _cached(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    with _instances_lock:
        if key not in _instances:
            _instances[key] = build()
        return _instances[key]


def _pick(registry: dict[str, Any], name: str, kind: str) -> Any:
    if name not in registry:
        raise ConfigError(
            f"Unknown {kind} backend {name!r}; choose one of {', '.join(sorted(registry))}."
        )
    return registry[name]


def get_llm(config: DTKGConfig) -> LLM | None:
    """The shared LLM for these settings, or None when ``llm_backend = "none"``."""
    if config.llm_backend == "none":
        return None
    factory = _pick(LLM_BACKENDS, config.llm_backend, "LLM")
    key = (
        "llm",
        config.llm_backend,
        config.llm_model,
        config.llm_gguf_file,
        config.llm_base_url,
        config.device,
        config.llm_dtype,
        config.llm_timeout,
    )
    return _cached(key, lambda: factory(config))


def get_embedder(config: DTKGConfig) -> Embedder:
    factory = _pick(EMBEDDER_BACKENDS, config.embedder_backend, "embedder")
    key = ("embedder", config.embedder_backend, config.embedder_model, config.device)
    return _cached(key, lambda: factory(config))


def get_reranker(config: DTKGConfig) -> Reranker | None:
    """The shared reranker, or None when ``reranker_backend = "none"`` (then α is forced to 0)."""
    if config.reranker_backend == "none" or not config.reranker_model:
        return None
    factory = _pick(RERANKER_BACKENDS, config.reranker_backend, "reranker")
    key = ("reranker", config.reranker_backend, config.reranker_model, config.device)
    return _cached(key, lambda: factory(config))


def register_llm(name: str, factory: Callable[[DTKGConfig], LLM]) -> None:
    LLM_BACKENDS[name] = factory


def register_embedder(name: str, factory: Callable[[DTKGConfig], Embedder]) -> None:
    EMBEDDER_BACKENDS[name] = factory


def register_reranker(name: str, factory: Callable[[DTKGConfig], Reranker]) -> None:
    RERANKER_BACKENDS[name] = factory


def clear_cache() -> None:
    """Forget every shared backend instance (tests use this)."""
    with _instances_lock:
        _instances.clear()


def resolve_auto_profile(model_id: str = GPU_LLM) -> tuple[str, str]:
    """``auto`` → ("gpu", why) when CUDA is present and the LLM weights are reachable,
    else ("cpu", why). Reachable means in the local HF cache, or the hub is not disabled."""
    from dtkg.backends.transformers_llm import cuda_available

    if not cuda_available():
        return "cpu", "no CUDA device found, so the offline cpu profile runs"
    if os.path.isdir(model_id):
        return "gpu", f"CUDA found and {model_id} is a local folder"
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # noqa: BLE001 - any hub-client problem means "not cached"
        cached = None
    if isinstance(cached, str):
        return "gpu", f"CUDA found and {model_id} is in the local model cache"
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(model_id, timeout=5)  # gated repos answer 200 for metadata
        return "gpu", f"CUDA found and {model_id} is reachable on the Hugging Face Hub"
    except Exception as exc:  # noqa: BLE001
        return (
            "cpu",
            f"CUDA found but {model_id} is unreachable ({type(exc).__name__}), so cpu runs",
        )
