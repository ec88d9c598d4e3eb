"""The app's handlers as plain generators, driven by a scripted pipeline that yields the real
event classes (dtkg.ui.fake.FakePipeline), plus the settings, rendering and GPU helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from dtkg.config import BOUNDS, DTKGConfig
from dtkg.errors import ConfigError
from dtkg.feedback import FeedbackRecord, FeedbackStore, SQLiteFeedbackStore
from dtkg.trace import (
    AnswerEvent,
    Classification,
    ClassifiedEvent,
    PathsExpandedEvent,
    ProgressEvent,
    Trace,
    TraceEvent,
)
from dtkg.ui import handlers
from dtkg.ui.fake import FakePipeline
from dtkg.ui.handlers import ASK_OUTPUTS, NO_TRACE, AppContext

CHAINED = "Where was the director of Inception born?"
PARALLEL = "Who directed Inception and when was it released?"
DEFAULTS = ("embedded", "", "dtkg", 0.0, 50, 3, 0.2, 3)  # the settings inputs, UI defaults


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteFeedbackStore(tmp_path / "feedback.sqlite3")
    yield s
    s.close()


@pytest.fixture
def ctx(tmp_path: Path, store: SQLiteFeedbackStore) -> AppContext:
    return AppContext(
        base_config=DTKGConfig.from_profile("cpu"),
        pipeline_factory=FakePipeline,
        feedback_store=store,
        app_version="test",
        trace_dir=tmp_path / "traces",
    )


def run(
    ctx: AppContext,
    question: str,
    settings: tuple[Any, ...] = DEFAULTS,
    session: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    return list(handlers.ask_stream(ctx, question, *settings, session))


# ------------------------------------------------------------------------ streaming order
def test_chained_stream_classification_then_paths_then_answer(ctx: AppContext) -> None:
    updates = run(ctx, CHAINED)
    assert all(set(u) <= set(ASK_OUTPUTS) for u in updates)
    first = updates[0]
    assert first["status"].startswith("⏳") and first["trace_json"] is None  # old answer cleared

    def first_with(key: str) -> int:
        return next(i for i, u in enumerate(updates) if i > 0 and key in u)

    assert first_with("cls_md") < first_with("paths") < first_with("answer") < first_with("session")
    assert first_with("session") == len(updates) - 1
    path_updates = [u for u in updates[1:-1] if "paths" in u]
    assert [len(u["paths"]["data"]) for u in path_updates] == [2, 2]  # layer 1, layer 2
    assert path_updates[-1]["paths_plot"] is not None
    final = updates[-1]
    assert final["status"].startswith("✅ Answer: **London** (done in")
    assert "London" in final["answer"] and "route **chained**" in final["answer"]
    assert final["cls_label"] == {"chained": 0.91, "parallel": 0.09}
    assert "rule 2" in final["cls_md"]
    assert (
        "[Christopher Nolan](https://www.wikidata.org/wiki/Q25191" in final["paths"]["data"][0][2]
    )
    assert "https://www.wikidata.org/wiki/Property:P57" in final["paths"]["data"][0][2]
    assert final["session"]["trace"]["answer"] == "London"
    assert json.loads(Path(final["trace_file"]).read_text())["question"] == CHAINED
    assert "KG queries | 4" in final["cost"] and final["stages_plot"] is not None
    assert "mode = `dtkg`" in final["settings_used"] and "α = 0" in final["settings_used"]


def test_parallel_stream_shows_facts_one_by_one(ctx: AppContext) -> None:
    updates = run(ctx, PARALLEL)
    fact_updates = [u for u in updates[1:-1] if "facts" in u]
    assert [len(u["facts"]["data"]) for u in fact_updates] == [1, 2, 3]
    rows = updates[-1]["facts"]["data"]
    assert (
        rows[0][1] == "✅ supported" and rows[1][1] == "✏️ revised" and rows[2][1] == "❔ unverified"
    )
    assert "https://www.wikidata.org/wiki/Q25188" in rows[0][2]
    assert rows[0][3] == "0.840" and rows[0][4] == "—"  # cosine, no rerank (α = 0)
    assert "2010" in rows[1][6]  # the revised text
    assert "Dream city" in rows[2][2] and "dtkg-local-1" not in rows[2][2]  # local id: not linked
    assert "wikidata.org/wiki/dtkg" not in rows[2][2]
    assert [u["status"] for u in fact_updates][-1].startswith("⏳ Checked 3")


def test_progress_events_drive_the_status_line(ctx: AppContext) -> None:
    statuses = [u["status"] for u in run(ctx, PARALLEL) if "status" in u]
    assert any("Checking" in s for s in statuses) and any("Classifying" in s for s in statuses)


def test_models_not_loaded_are_loaded_with_a_status(ctx: AppContext) -> None:
    class Lazy:
        model_id = "tiny-model"
        loaded = False
        calls = 0

        def load(self, progress=None) -> None:
            Lazy.calls += 1
            self.loaded = True

    lazy = Lazy()
    ctx.backends_for = lambda _config: [("LLM", lazy)]
    updates = run(ctx, CHAINED)
    assert "Loading the LLM tiny-model" in updates[1]["status"] and Lazy.calls == 1
    run(ctx, CHAINED)
    assert Lazy.calls == 1  # loaded once


# ------------------------------------------------------------------------------ settings
def test_settings_are_applied_per_request_and_shown(ctx: AppContext) -> None:
    settings = ("embedded", "", "only-chain", 0.0, 20, 5, 0.35, 2)
    final = run(ctx, CHAINED, settings)[-1]
    config = final["trace_json"]["config"]
    assert (
        config["mode"],
        config["top_k_cosine"],
        config["width"],
        config["theta"],
        config["max_depth"],
    ) == ("only-chain", 20, 5, 0.35, 2)
    assert "D_max = `2`" in final["settings_used"]
    assert ctx.base_config.mode == "dtkg"  # the instance default is untouched


@pytest.mark.parametrize(
    "settings,message",
    [
        (("embedded", "", "dtkg", 1.5, 50, 3, 0.2, 3), "α must be between 0 and 1"),
        (("embedded", "", "dtkg", 0.0, 5000, 3, 0.2, 3), "K must be between 1 and 1000"),
        (("embedded", "", "dtkg", 0.0, 50, 2.5, 0.2, 3), "W_max must be a whole number"),
        (("embedded", "", "dtkg", 0.0, 50, 3, -0.1, 3), "θ must be between"),
        (("embedded", "", "dtkg", 0.0, 50, 3, 0.2, 9), "D_max must be between 1 and 5"),
        (("embedded", "", "fast", 0.0, 50, 3, 0.2, 3), "Unknown mode"),
        (("somewhere", "", "dtkg", 0.0, 50, 3, 0.2, 3), "Unknown KG choice"),
        (("custom", "", "dtkg", 0.0, 50, 3, 0.2, 3), "Enter the SPARQL endpoint URL"),
        (("custom", "ftp://x.org/sparql", "dtkg", 0.0, 50, 3, 0.2, 3), "not an http"),
        (("custom", "https://exa mple.org", "dtkg", 0.0, 50, 3, 0.2, 3), "without spaces"),
        (("custom", "https://u:p@x.org/sparql", "dtkg", 0.0, 50, 3, 0.2, 3), "no credentials"),
        (("custom", "https://x.org:99999/sparql", "dtkg", 0.0, 50, 3, 0.2, 3), "invalid port"),
    ],
)
def test_bad_settings_raise_a_clear_error_before_anything_changes(
    ctx: AppContext, settings: tuple[Any, ...], message: str
) -> None:
    stream = handlers.ask_stream(ctx, CHAINED, *settings, None)
    with pytest.raises(gr.Error, match=message):
        next(stream)  # raised before the first update: the question and old answer stay


def test_custom_endpoint_and_private_addresses(ctx: AppContext) -> None:
    url = "https://sparql.example.org/sparql"
    final = run(ctx, CHAINED, ("custom", url, "dtkg", 0.0, 50, 3, 0.2, 3))[-1]
    assert final["trace_json"]["config"]["kg_endpoint"] == url
    assert final["trace_json"]["config"]["kg_backend"] == "wikidata"
    local = ("custom", "http://127.0.0.1:7878/query", "dtkg", 0.0, 50, 3, 0.2, 3)
    assert run(ctx, CHAINED, local)[-1]["trace_json"]["config"]["kg_endpoint"].startswith(
        "http://127"
    )
    ctx.allow_private_endpoints = False
    for host in ("127.0.0.1:7878", "localhost", "10.0.0.8", "[::1]", "metadata.internal"):
        with pytest.raises(gr.Error, match="local or private"):
            run(ctx, CHAINED, ("custom", f"http://{host}/sparql", "dtkg", 0.0, 50, 3, 0.2, 3))


def test_slider_bounds_come_from_config_bounds() -> None:
    from dtkg.ui.settings import NUMERIC, RequestSettings, apply_settings

    base = DTKGConfig.from_profile("cpu")
    for name, (field, _integer) in NUMERIC.items():
        low, high = BOUNDS[field]
        assert getattr(apply_settings(base, RequestSettings(**{name: high})), field) == high
        assert getattr(apply_settings(base, RequestSettings(**{name: low})), field) == low
    with pytest.raises(ConfigError, match="must be a number"):
        apply_settings(base, RequestSettings(alpha="lots"))  # type: ignore[arg-type]


# -------------------------------------------------------------------------------- errors
def test_empty_question_is_a_clear_error(ctx: AppContext) -> None:
    with pytest.raises(gr.Error, match="type a question"):
        run(ctx, "   ")


def test_pipeline_errors_become_clear_messages(ctx: AppContext) -> None:
    with pytest.raises(gr.Error, match="failed on purpose") as info:
        run(ctx, "FAIL please")
    assert info.value.title == "ModelError"
    with pytest.raises(gr.Error, match="Something went wrong .RuntimeError") as info:
        run(ctx, "CRASH please")
    assert info.value.title == "Internal error"
    with pytest.raises(gr.Error, match="limit is 1000") as info:
        run(ctx, "x" * 1001)
    assert info.value.title == "Please check the question"
    assert run(ctx, CHAINED)[-1]["status"].startswith("✅")  # the next request is fine


def test_a_pipeline_without_trace_is_an_error(ctx: AppContext) -> None:
    class NoTrace:
        def __init__(self, config: DTKGConfig):
            pass

        def run(self, question: str):
            yield ClassifiedEvent("classify", Classification("parallel", 0.2, "rules"))

    ctx.pipeline_factory = NoTrace
    with pytest.raises(gr.Error, match="without a trace"):
        run(ctx, CHAINED)


def test_abstention_and_answer_event_render(ctx: AppContext) -> None:
    class Abstains:
        def __init__(self, config: DTKGConfig):
            self.config = config

        def run(self, question: str):
            yield ProgressEvent("classify", "Classifying <b>now</b>")
            yield PathsExpandedEvent("expand", 1, [])
            yield AnswerEvent("answer", "", [], True, "no path reached an answer")
            trace = Trace(
                question=question,
                abstained=True,
                abstain_reason="no path reached an answer",
                config=self.config.public_dict(),
            )
            yield TraceEvent("done", trace)

    ctx.pipeline_factory = Abstains
    updates = run(ctx, CHAINED)
    assert updates[1]["status"].startswith("⏳ Working on the question")
    assert "<b>" not in updates[2]["status"]  # messages are escaped
    assert updates[3]["paths_plot"] is None
    assert "No answer" in updates[4]["answer"] and "no path reached" in updates[4]["answer"]
    assert "abstained" in updates[-1]["answer"]
    assert updates[-1]["status"].startswith("🤷 No answer")


# ------------------------------------------------------------------------------ ask API
def test_ask_api_returns_the_trace_and_keeps_it_in_the_session(ctx: AppContext) -> None:
    trace, session = handlers.ask_api(ctx, CHAINED, *DEFAULTS, None)
    assert trace["answer"] == "London" and trace["classification"]["label"] == "chained"
    assert json.dumps(trace)  # JSON-serialisable
    assert session["trace"] == trace and len(session["session_id"]) == 32
    with pytest.raises(gr.Error, match="non-empty"):
        handlers.ask_api(ctx, "", *DEFAULTS, session)


# ------------------------------------------------------------------------------ feedback
def test_feedback_before_any_answer_is_a_message(ctx: AppContext, store) -> None:
    result, session = handlers.submit_feedback(ctx, "up", None, "", None)
    assert result == {"ok": False, "feedback_id": None, "message": NO_TRACE}
    assert session["session_id"] and store.count() == 0
    with pytest.warns(UserWarning, match="Ask a question first"):  # gr.Warning outside a request
        status, category, comment, _ = handlers.feedback_ui(ctx, "down", None, "", session)
    assert status.startswith("⚠️") and "Ask a question first" in status


def test_feedback_stores_the_full_trace(ctx: AppContext, store) -> None:
    session = run(ctx, CHAINED)[-1]["session"]
    result, same = handlers.submit_feedback(ctx, "down", "wrong entity", "not that Nolan", session)
    assert result["ok"] and same["session_id"] == session["session_id"]
    [row] = list(store.records())
    assert row["feedback_id"] == result["feedback_id"]
    assert (row["rating"], row["category"], row["comment"]) == (
        "down",
        "wrong entity",
        "not that Nolan",
    )
    assert row["session_id"] == session["session_id"] and row["app_version"] == "test"
    assert row["trace"]["answer"] == "London" and row["trace"]["paths"]
    assert row["config"]["mode"] == "dtkg" and row["kg_endpoint"] == "embedded:shipped-slice"
    status, category, comment, _ = handlers.feedback_ui(ctx, "up", "correct", "", session)
    assert status.startswith("✅") and category is None and comment == ""
    assert store.count() == 2


def test_feedback_bad_input_and_broken_store(ctx: AppContext) -> None:
    session = run(ctx, CHAINED)[-1]["session"]
    result, _ = handlers.submit_feedback(ctx, "up", "rude", "", session)
    assert not result["ok"] and "Unknown feedback category" in result["message"]

    class Broken(FeedbackStore):
        def add(self, record: FeedbackRecord) -> str:
            raise OSError("disk full")

    ctx.feedback_store = Broken()
    result, _ = handlers.submit_feedback(ctx, "up", None, "", session)
    assert not result["ok"] and "could not be saved" in result["message"]


def test_session_state_is_anonymous() -> None:
    a, b = handlers.new_session(), handlers.new_session()
    assert set(a) == {"session_id", "trace"} and a["session_id"] != b["session_id"]
    assert handlers.ensure_session(a) is a and handlers.ensure_session(None)["session_id"]
