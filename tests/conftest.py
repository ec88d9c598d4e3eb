"""The test kit: fakes that subclass the real interfaces, and shared fixtures.

- :class:`ScriptedLLM` is a real :class:`dtkg.backends.LLM`: replies come from a script of
  (pattern → reply) rules, and option scoring reads the scripted probabilities through the
  same first-token-logprob path the real backends use.
- :class:`HashingEmbedder` is a real :class:`dtkg.backends.Embedder`: deterministic
  bag-of-words vectors (hashed unigrams and bigrams), so texts sharing words are similar.

Import them in a test module with ``from conftest import ScriptedLLM``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from dtkg.backends import Embedder, clear_cache
from dtkg.backends.llm import LLM, Completion, Message

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

# Tests never reach a model hub: everything offline comes from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# ------------------------------------------------------------------------------ LLM fake
Reply = str | dict[str, float] | Callable[[list[Message]], str | dict[str, float]]


@dataclass
class ScriptedLLM(LLM):
    """An LLM whose replies are scripted.

    ``script`` is a list of ``(regex, reply)``; the first regex found in the last user message
    wins. A reply is text, or ``{option: probability}`` for option scoring (rendered as
    first-token logprobs, the generated text is the most likely option), or a callable of the
    messages returning either. Unmatched prompts get ``default``. Every prompt is recorded.
    """

    script: list[tuple[str, Reply]] = field(default_factory=list)
    default: Reply = ""
    prompts: list[list[Message]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__("scripted")

    def _complete(
        self, messages: list[Message], *, max_new_tokens: int, top_logprobs: int
    ) -> Completion:
        self.prompts.append(messages)
        text = messages[-1]["content"]
        reply: Reply = self.default
        for pattern, candidate in self.script:
            if re.search(pattern, text, flags=re.IGNORECASE | re.DOTALL):
                reply = candidate
                break
        if callable(reply):
            reply = reply(messages)
        n_prompt = sum(len(m["content"].split()) for m in messages)
        if isinstance(reply, dict):
            logprobs = {token: math.log(max(p, 1e-9)) for token, p in reply.items()}
            best = max(reply, key=reply.__getitem__)
            return Completion(best, logprobs if top_logprobs else {}, n_prompt, 1)
        return Completion(reply, {}, n_prompt, len(reply.split()))


#: Fields every trace carries (the JSON the CLI, the API and the eval reports share).
TRACE_FIELDS = (
    "question",
    "classification",
    "branch",
    "answer",
    "answers",
    "abstained",
    "facts",
    "paths",
    "stats",
    "config",
    "notes",
)


@pytest.fixture
def scripted_llm() -> Callable[..., ScriptedLLM]:
    """Factory: ``scripted_llm([(regex, reply), ...], default=...)``."""

    def make(script: list[tuple[str, Reply]] | None = None, default: Reply = "") -> ScriptedLLM:
        return ScriptedLLM(script=list(script or []), default=default)

    return make


# ------------------------------------------------------------------------- embedder fake
class HashingEmbedder(Embedder):
    """Deterministic embeddings: hashed word unigrams + bigrams, L2-normalised."""

    name = "hashing"

    def __init__(self, dim: int = 512):
        super().__init__("hashing", batch_size=64)
        self.dim = dim

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            for gram in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
                digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
        return out


@pytest.fixture
def hashing_embedder() -> HashingEmbedder:
    return HashingEmbedder()


# ------------------------------------------------------------------------------ helpers
@pytest.fixture
def fresh_backend_cache() -> Iterator[None]:
    """For tests that must not see (or leave) shared backend instances."""
    clear_cache()
    yield
    clear_cache()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a clear message when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (benchmark data lives in ../shared beside the project)")
    return path
