"""LLM backend for any OpenAI-compatible chat-completions server (vLLM, TGI, Ollama,
llama.cpp server). Option scoring uses the returned ``logprobs``/``top_logprobs``; a server
that returns none falls back to matching the option in the generated text (the trace then
shows ``method: text-match`` and a 0/1 probability).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from dtkg.backends.llm import LLM, Completion, Message
from dtkg.errors import ModelError


class OpenAILLM(LLM):
    name = "openai"

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_parallel: int = 4,
    ) -> None:
        super().__init__(model_id)
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_parallel = max_parallel
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    loaded = True

    def load(self, progress: Any = None) -> None:
        """Nothing to load: the server holds the weights."""

    def _complete(
        self, messages: list[Message], *, max_new_tokens: int, top_logprobs: int
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            "max_tokens": max_new_tokens,
            "temperature": 0,
        }
        if top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = min(top_logprobs, 20)
        url = f"{self.base_url}/chat/completions"
        try:
            response = self._client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise ModelError(
                f"LLM server {self.base_url} did not answer within {self.timeout:g} s; "
                "check the server or raise llm_timeout."
            ) from exc
        except httpx.HTTPError as exc:
            raise ModelError(
                f"Cannot reach LLM server {self.base_url} ({exc}); check llm_base_url and that "
                "the server is running."
            ) from exc
        if response.status_code != 200:
            raise ModelError(
                f"LLM server {self.base_url} answered HTTP {response.status_code}: "
                f"{response.text[:200]!r}; check the model name ({self.model_id!r}) and server logs."
            )
        try:
            return parse_chat_completion(response.json())
        except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise ModelError(
                f"LLM server {self.base_url} returned a reply that is not an OpenAI chat "
                f"completion ({type(exc).__name__}: {exc}); is llm_base_url the /v1 root of an "
                "OpenAI-compatible server?"
            ) from exc

    def _complete_many(
        self, batch: list[list[Message]], *, max_new_tokens: int, top_logprobs: int
    ) -> list[Completion]:
        if len(batch) == 1:
            return [
                self._complete(batch[0], max_new_tokens=max_new_tokens, top_logprobs=top_logprobs)
            ]
        with ThreadPoolExecutor(self.max_parallel) as pool:
            return list(
                pool.map(
                    lambda m: self._complete(
                        m, max_new_tokens=max_new_tokens, top_logprobs=top_logprobs
                    ),
                    batch,
                )
            )


def parse_chat_completion(payload: dict[str, Any]) -> Completion:
    choice = payload["choices"][0]
    text = choice["message"]["content"] or ""
    first: dict[str, float] = {}
    content = (choice.get("logprobs") or {}).get("content") or []
    if content:
        head = content[0]
        for alt in head.get("top_logprobs") or [
            {"token": head["token"], "logprob": head["logprob"]}
        ]:
            token, value = alt["token"], float(alt["logprob"])
            first[token] = max(first.get(token, float("-inf")), value)
    usage = payload.get("usage") or {}
    return Completion(
        text=text,
        first_token_logprobs=first,
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
    )
