"""The LLM interface: one abstract method, :meth:`LLM._complete`; generation and option
scoring are built on it.

Option scoring (the classifier and every yes/no stage) never parses free text: it reads the
probability of each option's first token from the next-token log-probabilities, sums the
case/space variants of each option, and normalises over the options.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}
Prompt = str | list[Message]

# An option missing from the returned top log-probabilities gets this much less than the
# least likely token that was returned (a floor, not zero, so the distribution stays proper).
_MISSING_OPTION_MARGIN = 5.0


@dataclass
class Completion:
    text: str
    # log-probabilities of the most likely *first* generated tokens: token text → logprob
    first_token_logprobs: dict[str, float] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Usage:
    """What a backend (or one question's view of it) has spent."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class OptionScores:
    """A proper distribution over the given options, and how it was obtained."""

    probs: dict[str, float]
    method: str = "logprobs"  # logprobs | text-match (server gave no logprobs) | uniform

    @property
    def best(self) -> str:
        return max(self.probs, key=self.probs.__getitem__)


def as_messages(prompt: Prompt, system: str | None = None) -> list[Message]:
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if system and not any(m["role"] == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system})
    return messages


class LLM(ABC):
    """A chat model. Subclasses implement :meth:`_complete` (and may batch :meth:`_complete_many`)."""

    name: str = "llm"

    def __init__(self, model_id: str = "") -> None:
        self.model_id = model_id
        self.usage = Usage()
        self._usage_lock = threading.Lock()

    @abstractmethod
    def _complete(
        self, messages: list[Message], *, max_new_tokens: int, top_logprobs: int
    ) -> Completion:
        """Greedy completion of a chat; ``top_logprobs`` > 0 asks for first-token logprobs."""

    def _complete_many(
        self, batch: list[list[Message]], *, max_new_tokens: int, top_logprobs: int
    ) -> list[Completion]:
        """Several independent prompts; backends that can batch override this."""
        return [
            self._complete(m, max_new_tokens=max_new_tokens, top_logprobs=top_logprobs)
            for m in batch
        ]

    # ------------------------------------------------------------------ accounting
    def with_usage(self) -> LLM:
        """A view sharing the model but counting its own usage (one per question)."""
        clone = copy.copy(self)
        clone.usage = Usage()
        clone._usage_lock = threading.Lock()
        return clone

    def _record(self, completions: list[Completion], seconds: float) -> None:
        with self._usage_lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += sum(c.prompt_tokens for c in completions)
            self.usage.completion_tokens += sum(c.completion_tokens for c in completions)
            self.usage.seconds += seconds

    # ------------------------------------------------------------------ conveniences
    def complete_many(
        self,
        prompts: list[Prompt],
        *,
        max_new_tokens: int = 256,
        top_logprobs: int = 0,
        system: str | None = None,
    ) -> list[Completion]:
        """One counted call for a batch of prompts."""
        if not prompts:
            return []
        start = time.perf_counter()
        batch = [as_messages(p, system) for p in prompts]
        out = self._complete_many(batch, max_new_tokens=max_new_tokens, top_logprobs=top_logprobs)
        self._record(out, time.perf_counter() - start)
        return out

    def complete(
        self,
        prompt: Prompt,
        *,
        max_new_tokens: int = 256,
        top_logprobs: int = 0,
        system: str | None = None,
    ) -> Completion:
        return self.complete_many(
            [prompt], max_new_tokens=max_new_tokens, top_logprobs=top_logprobs, system=system
        )[0]

    def generate(
        self, prompt: Prompt, *, max_new_tokens: int = 256, system: str | None = None
    ) -> str:
        return self.complete(prompt, max_new_tokens=max_new_tokens, system=system).text.strip()

    def score_options_many(
        self, prompts: list[Prompt], options: list[str], *, system: str | None = None
    ) -> list[OptionScores]:
        """For each prompt, P(option) over ``options`` from next-token logprobs (one call)."""
        if len(options) < 2 or len(set(o.strip().lower() for o in options)) != len(options):
            raise ValueError("score_options needs at least two distinct options")
        out = self.complete_many(prompts, max_new_tokens=4, top_logprobs=20, system=system)
        return [option_distribution(c, options) for c in out]

    def score_options(
        self, prompt: Prompt, options: list[str], *, system: str | None = None
    ) -> OptionScores:
        return self.score_options_many([prompt], options, system=system)[0]


def _normalise_token(token: str) -> str:
    return token.replace("Ġ", " ").replace("▁", " ").strip().lower()


def option_distribution(completion: Completion, options: list[str]) -> OptionScores:
    """Turn first-token logprobs into a distribution over ``options``.

    A token counts for an option when, stripped and lower-cased, it is a non-empty prefix of
    the option (so " Yes", "yes", "YES" all count for "yes"; "ch" counts for "chained").
    Without logprobs (some servers), fall back to finding the option in the generated text.
    """
    keys = [o.strip().lower() for o in options]
    logprobs = completion.first_token_logprobs
    if logprobs:
        floor = min(logprobs.values()) - _MISSING_OPTION_MARGIN
        mass = {o: 0.0 for o in options}
        for token, lp in logprobs.items():
            norm = _normalise_token(token)
            if not norm:
                continue
            matching = [o for o, k in zip(options, keys) if k.startswith(norm)]
            if len(matching) == 1:  # a token shared by two options tells nothing
                mass[matching[0]] += math.exp(lp)
        if any(mass.values()):
            raw = {o: max(m, math.exp(floor)) for o, m in mass.items()}
            total = sum(raw.values())
            return OptionScores({o: v / total for o, v in raw.items()}, "logprobs")
    text = completion.text.strip().lower()
    hits = [o for o, k in zip(options, keys) if text.startswith(k)] or [
        o for o, k in zip(options, keys) if k in text
    ]
    if len(hits) == 1:
        return OptionScores({o: float(o == hits[0]) for o in options}, "text-match")
    return OptionScores({o: 1.0 / len(options) for o in options}, "uniform")
