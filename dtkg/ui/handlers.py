"""Event handlers: thin generators translating pipeline events into component updates.

Handlers yield ``dict[str, value]`` keyed by the output names in :data:`ASK_OUTPUTS`; keys left
out mean "leave that component as it is". :mod:`dtkg.ui.app` maps them onto components. No
pipeline logic lives here: every value shown comes from an event or the final trace.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import gradio as gr

from dtkg.config import DTKGConfig
from dtkg.errors import DTKGError, InputError
from dtkg.feedback import CATEGORIES, FeedbackRecord, FeedbackStore
from dtkg.trace import (
    AnswerEvent,
    ClassifiedEvent,
    EntityLink,
    EntityLinkedEvent,
    Event,
    Fact,
    FactCheckedEvent,
    PathsExpandedEvent,
    ProgressEvent,
    Trace,
    TraceEvent,
)
from dtkg.trace import Path as TracePath
from dtkg.ui import charts, render
from dtkg.ui.settings import RequestSettings, apply_settings

log = logging.getLogger(__name__)

ASK_OUTPUTS = (
    "status",
    "answer",
    "entities",
    "cls_label",
    "cls_md",
    "facts",
    "paths",
    "paths_plot",
    "cost",
    "stages_plot",
    "settings_used",
    "trace_file",
    "trace_json",
    "session",
)
SETTING_INPUTS = ("kg", "endpoint", "mode", "alpha", "top_k", "width", "theta", "max_depth")
NO_TRACE = "Ask a question first: there is no answer to rate yet."


class PipelineLike(Protocol):
    def run(self, question: str) -> Iterator[Event]: ...


PipelineFactory = Callable[[DTKGConfig], PipelineLike]
BackendLister = Callable[[DTKGConfig], list[tuple[str, Any]]]


@dataclass
class AppContext:
    """What the handlers of one app instance share (no per-user data here)."""

    base_config: DTKGConfig
    pipeline_factory: PipelineFactory
    feedback_store: FeedbackStore
    app_version: str
    trace_dir: Path
    backends_for: BackendLister = field(default=lambda _config: [])
    allow_private_endpoints: bool = True


# ------------------------------------------------------------------------------ session
def new_session() -> dict[str, Any]:
    """Per-browser-session state: an anonymous random id and the last trace."""
    return {"session_id": uuid.uuid4().hex, "trace": None}


def ensure_session(session: dict[str, Any] | None) -> dict[str, Any]:
    if not isinstance(session, dict) or not session.get("session_id"):
        return new_session()
    return session


# ------------------------------------------------------------------------------ helpers
def request_config(ctx: AppContext, settings: RequestSettings) -> DTKGConfig:
    """The per-request config, or a ``gr.Error`` saying which setting is wrong."""
    try:
        return apply_settings(
            ctx.base_config, settings, allow_private_endpoints=ctx.allow_private_endpoints
        )
    except DTKGError as exc:
        raise gr.Error(str(exc), title="Invalid setting", print_exception=False) from exc


def table(headers: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """A ``gr.Dataframe`` value that keeps its headers even when empty."""
    return {"headers": headers, "data": rows}


def write_trace_file(ctx: AppContext, trace: Trace, session_id: str) -> str:
    """The trace as a JSON file for download; files older than an hour are pruned."""
    ctx.trace_dir.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - 3600
    for old in ctx.trace_dir.glob("dtkg-trace-*.json"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            pass
    path = ctx.trace_dir / f"dtkg-trace-{session_id[:8]}-{uuid.uuid4().hex[:8]}.json"
    path.write_text(trace.to_json(indent=2), encoding="utf-8")
    return str(path)


def _fail(exc: BaseException) -> gr.Error:
    """A clear message for the user; the app keeps serving other requests."""
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, InputError):
        return gr.Error(str(exc), title="Please check the question", print_exception=False)
    if isinstance(exc, DTKGError):  # a model or KG fault: logged in one line, no traceback
        log.warning("%s: %s", type(exc).__name__, exc)
        return gr.Error(str(exc), title=type(exc).__name__, print_exception=False)
    log.exception("unexpected error while answering")
    return gr.Error(
        f"Something went wrong ({type(exc).__name__}: {str(exc)[:300]}). The app is still "
        "running: try again, or change the settings.",
        title="Internal error",
    )


def run_events(ctx: AppContext, question: str, config: DTKGConfig) -> Iterator[Event]:
    """The pipeline's events; backends not loaded yet are loaded first, announced by
    :class:`ProgressEvent`. Every error becomes a ``gr.Error``."""
    try:
        for what, backend in ctx.backends_for(config):
            if backend is not None and not getattr(backend, "loaded", True):
                model = getattr(backend, "model_id", "")
                yield ProgressEvent("load", f"Loading the {what} {model} (first question only)…")
                backend.load()
        pipeline = ctx.pipeline_factory(config)
        yield ProgressEvent("start", "Working on the question…")
        yield from pipeline.run(question)
    except Exception as exc:  # noqa: BLE001 - translated into a clear message
        raise _fail(exc) from exc


def _settings(values: tuple[Any, ...]) -> RequestSettings:
    return RequestSettings(**dict(zip(SETTING_INPUTS, values, strict=True)))


# ------------------------------------------------------------------------------ ask (UI)
def ask_stream(ctx: AppContext, question: str, *args: Any) -> Iterator[dict[str, Any]]:
    """Stream one answer into the tabs. ``args`` = the settings in :data:`SETTING_INPUTS`
    order, then the session state."""
    *setting_values, session = args
    session = ensure_session(session)
    config = request_config(ctx, _settings(tuple(setting_values)))
    if not (question or "").strip():
        raise gr.Error(
            "Please type a question (or click an example).",
            title="Empty question",
            print_exception=False,
        )
    start = time.perf_counter()
    entities: list[EntityLink] = []
    facts: list[Fact] = []
    paths: list[TracePath] = []
    yield {
        "status": "⏳ Starting…",
        "answer": render.answer_md(None),
        "entities": "",
        "cls_label": None,
        "cls_md": "*Classifying…*",
        "facts": table(render.FACT_HEADERS, []),
        "paths": table(render.PATH_HEADERS, []),
        "paths_plot": None,
        "cost": "",
        "stages_plot": None,
        "settings_used": "",
        "trace_file": None,
        "trace_json": None,
    }
    for event in run_events(ctx, question, config):
        elapsed = f" ({time.perf_counter() - start:.1f} s)"
        if isinstance(event, ProgressEvent):
            yield {"status": f"⏳ {render.md_escape(event.message)}{elapsed}"}
        elif isinstance(event, ClassifiedEvent):
            c = event.classification
            next_step = "expanding reasoning paths" if c.label == "chained" else "checking facts"
            yield {
                "status": f"⏳ Classified as **{c.label}**; {next_step}…{elapsed}",
                "cls_label": render.classification_label(c),
                "cls_md": render.classification_md(c),
            }
        elif isinstance(event, EntityLinkedEvent):
            entities.append(event.link)
            yield {"entities": render.entities_md(entities)}
        elif isinstance(event, FactCheckedEvent):
            facts.append(event.fact)
            yield {
                "status": f"⏳ Checked {len(facts)} fact(s){elapsed}",
                "facts": table(render.FACT_HEADERS, render.fact_rows(facts)),
            }
        elif isinstance(event, PathsExpandedEvent):
            paths = list(event.paths)
            yield {
                "status": f"⏳ Expanded depth {event.depth}: {len(paths)} path(s){elapsed}",
                "paths": table(render.PATH_HEADERS, render.path_rows(paths)),
                "paths_plot": charts.paths_figure(paths),
            }
        elif isinstance(event, AnswerEvent):
            yield {
                "status": f"⏳ Answer found; finishing the trace…{elapsed}",
                "answer": render.answer_md(
                    None,
                    answer=event.answer,
                    answers=event.answers,
                    abstained=event.abstained,
                    reason=event.reason,
                ),
            }
        elif isinstance(event, TraceEvent):
            trace = event.trace
            session = {**session, "trace": trace.to_dict()}
            yield final_updates(ctx, trace, session)
            return
    raise gr.Error("The pipeline ended without a trace; please try again.", title="Internal error")


def final_updates(ctx: AppContext, trace: Trace, session: dict[str, Any]) -> dict[str, Any]:
    """Every tab filled from the complete trace."""
    done = f"done in {trace.stats.total_seconds:.1f} s"
    if trace.error:
        status = f"⚠️ {render.md_escape(trace.error)} ({done})"
    elif trace.abstained:
        status = f"🤷 No answer: the evidence did not support one ({done})"
    else:  # the answer stays visible whichever tab is open
        status = f"✅ Answer: **{render.md_escape(trace.answer)}** ({done})"
    return {
        "status": status,
        "answer": render.answer_md(trace),
        "entities": render.entities_md(trace.entities),
        "cls_label": render.classification_label(trace.classification),
        "cls_md": render.classification_md(trace.classification),
        "facts": table(render.FACT_HEADERS, render.fact_rows(trace.facts)),
        "paths": table(render.PATH_HEADERS, render.path_rows(trace.paths)),
        "paths_plot": charts.paths_figure(trace.paths),
        "cost": render.cost_md(trace.stats),
        "stages_plot": charts.stages_figure(trace.stats),
        "settings_used": render.settings_md(trace.config, trace.notes),
        "trace_file": write_trace_file(ctx, trace, session["session_id"]),
        "trace_json": trace.to_dict(),
        "session": session,
    }


# ------------------------------------------------------------------------------ ask (API)
def ask_api(ctx: AppContext, question: str, *args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``api_name="ask"``: run one question, return its trace as a dict (and the session)."""
    *setting_values, session = args
    session = ensure_session(session)
    config = request_config(ctx, _settings(tuple(setting_values)))
    if not (question or "").strip():
        raise gr.Error(
            "Please send a non-empty question.", title="Empty question", print_exception=False
        )
    for event in run_events(ctx, question, config):
        if isinstance(event, TraceEvent):
            trace = event.trace.to_dict()
            return trace, {**session, "trace": trace}
    raise gr.Error("The pipeline ended without a trace; please try again.", title="Internal error")


# ------------------------------------------------------------------------------ feedback
def submit_feedback(
    ctx: AppContext,
    rating: str,
    category: str | None,
    comment: str | None,
    session: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store a rating of the session's last answer. Returns ``({ok, feedback_id, message},
    session)``; problems (no answer yet, bad input, storage failure) come back as messages."""
    session = ensure_session(session)
    trace = session.get("trace")
    if not trace:
        return {"ok": False, "feedback_id": None, "message": NO_TRACE}, session
    if not trace.get("config"):
        trace = {**trace, "config": ctx.base_config.public_dict()}
    try:
        record = FeedbackRecord.create(
            rating=rating,
            category=category,
            comment=comment,
            trace=trace,
            session_id=session["session_id"],
            app_version=ctx.app_version,
        )
        feedback_id = ctx.feedback_store.add(record)
    except InputError as exc:
        return {"ok": False, "feedback_id": None, "message": str(exc)}, session
    except Exception as exc:  # noqa: BLE001 - the app stays up; the user is told
        log.exception("storing feedback failed")
        message = f"Sorry, your feedback could not be saved ({type(exc).__name__}); please retry."
        return {"ok": False, "feedback_id": None, "message": message}, session
    thanks = "Thanks! 👍 saved." if record.rating == "up" else "Thanks! 👎 saved — it helps."
    return {"ok": True, "feedback_id": feedback_id, "message": thanks}, session


def feedback_ui(
    ctx: AppContext,
    rating: str,
    category: str | None,
    comment: str | None,
    session: dict[str, Any] | None,
) -> tuple[str, str | None, str, dict[str, Any]]:
    """The 👍/👎 buttons: status line; category and comment cleared after a save."""
    result, session = submit_feedback(ctx, rating, category, comment, session)
    if not result["ok"]:
        gr.Warning(result["message"])
        return f"⚠️ {render.md_escape(result['message'])}", gr.skip(), gr.skip(), session
    return f"✅ {result['message']}", None, "", session


__all__ = [
    "ASK_OUTPUTS",
    "SETTING_INPUTS",
    "CATEGORIES",
    "AppContext",
    "ask_stream",
    "ask_api",
    "submit_feedback",
    "feedback_ui",
    "new_session",
    "ensure_session",
]
