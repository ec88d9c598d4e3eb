"""ZeroGPU support without the pipeline knowing about Spaces.

On a ZeroGPU Space a GPU is attached only while a function decorated with ``@spaces.GPU`` runs.
We decorate exactly the GPU-bound calls — the shared backends' model forward passes (LLM
generation, embedding, reranking) — by wrapping those methods on the shared instances; KG I/O
and everything else stay outside. Where ``spaces`` is not installed (or not on ZeroGPU, where
``spaces.GPU`` returns the function unchanged) this is a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

try:  # pragma: no cover - depends on the environment
    import spaces as _spaces
except Exception:  # noqa: BLE001 - not installed, or broken outside a Space
    _spaces = None

# Backend name → the method doing the GPU work. OpenAI-compatible servers are I/O: not wrapped.
GPU_METHODS: dict[str, str] = {
    "transformers": "_complete_many",  # LLM generation and option scoring
    "sentence-transformers": "_encode",  # embedder (rerankers below)
    "flagembedding": "_score",
}
_WRAPPED = "_dtkg_gpu_wrapped"


def spaces_available() -> bool:
    return _spaces is not None


def on_zero_gpu() -> bool:
    """True on a ZeroGPU Space (``spaces`` installed and ``SPACES_ZERO_GPU`` set)."""
    if _spaces is None:
        return False
    try:
        from spaces.config import Config
    except Exception:  # noqa: BLE001
        return False
    return bool(getattr(Config, "zero_gpu", False))


def gpu(duration: int = 60) -> Callable[[F], F]:
    """``spaces.GPU(duration=…)`` where available, else the identity decorator."""
    if _spaces is None:
        return lambda fn: fn
    return _spaces.GPU(duration=duration)  # type: ignore[no-any-return]


def wrap_backend(backend: Any, *, duration: int = 60, method: str | None = None) -> bool:
    """Replace ``backend.<gpu method>`` on the instance by its ``@spaces.GPU`` version.

    Instance attributes survive :meth:`LLM.with_usage` copies, so per-question usage views
    share the wrapped call. Returns True when something was wrapped.
    """
    if backend is None or getattr(backend, _WRAPPED, False):
        return False
    name = method
    if name is None:
        name = GPU_METHODS.get(getattr(backend, "name", ""))
        if name == "_encode" and not hasattr(backend, "_encode"):
            name = "_score"  # a sentence-transformers CrossEncoder reranker
    if name is None or not hasattr(backend, name):
        return False
    setattr(backend, name, gpu(duration)(getattr(backend, name)))
    setattr(backend, _WRAPPED, True)
    log.info("GPU-bound %s.%s wrapped with spaces.GPU", type(backend).__name__, name)
    return True


def wrap_backends(backends: list[Any], *, duration: int = 60) -> int:
    """Wrap every GPU-bound backend in ``backends``; returns how many were wrapped."""
    return sum(wrap_backend(b, duration=duration) for b in backends)
