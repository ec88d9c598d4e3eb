"""The Gradio app: layout, wiring and queue. Handlers live in :mod:`dtkg.ui.handlers`.

``create_app(config)`` builds a ``gr.Blocks``; the caller launches it with
``demo.launch(**launch_kwargs())`` (Gradio 6 takes theme and CSS in ``launch``).
API endpoints: ``/ask`` (question + settings → the trace as a dict) and ``/feedback``
(rating, category, comment → ``{ok, feedback_id, message}``), both on the caller's session.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr

import dtkg
from dtkg.config import BOUNDS, MODES, DTKGConfig
from dtkg.feedback import CATEGORIES, FeedbackStore, store_from_env
from dtkg.ui import handlers, render
from dtkg.ui.about import about_md
from dtkg.ui.examples import load_examples
from dtkg.ui.gpu import on_zero_gpu, wrap_backends
from dtkg.ui.handlers import ASK_OUTPUTS, AppContext, PipelineFactory
from dtkg.ui.settings import KG_CHOICES, kg_choice_of

TITLE = "DTKG — dual-track knowledge-graph-verified question answering"
CSS = """
#status {min-height: 1.6em}
#answer h3 {margin-top: 0.2em}
"""


def launch_kwargs() -> dict[str, Any]:
    """Theme and CSS: app-level options that Gradio 6 takes in ``launch()``."""
    return {"theme": gr.themes.Soft(), "css": CSS}


def default_pipeline_factory(config: DTKGConfig) -> handlers.PipelineLike:
    from dtkg.pipeline import Pipeline

    return Pipeline(config)


def shared_backends(config: DTKGConfig) -> list[tuple[str, Any]]:
    """The process-wide backends a request with ``config`` uses (loaded lazily, once)."""
    from dtkg.backends import get_embedder, get_llm, get_reranker

    out: list[tuple[str, Any]] = [("embedder", get_embedder(config))]
    if config.uses_llm:
        out.insert(0, ("LLM", get_llm(config)))
    if config.reranker_backend != "none":
        out.append(("reranker", get_reranker(config)))
    return out


def create_app(
    config: DTKGConfig,
    *,
    pipeline_factory: PipelineFactory | None = None,
    feedback_store: FeedbackStore | None = None,
    concurrency_limit: int = 2,
    max_queue: int = 64,
    allow_private_endpoints: bool = True,
    profile_note: str = "",
    trace_dir: str | Path | None = None,
) -> gr.Blocks:
    """The DTKG web app for ``config`` (the instance defaults; users adjust per request).

    ``pipeline_factory(config)`` builds the object whose ``run(question)`` yields events
    (default: :class:`dtkg.pipeline.Pipeline`); ``feedback_store`` defaults to SQLite at the
    default location. ``concurrency_limit`` bounds the questions answered at once (GPU work
    is serialised further by the LLM backend's lock); ``max_queue`` bounds the waiting line. ``allow_private_endpoints`` False refuses custom SPARQL endpoints on
    local/private addresses (set it so on a public Space).
    """
    if pipeline_factory is None:
        pipeline_factory = default_pipeline_factory
        backends_for = shared_backends
        if on_zero_gpu():  # attach the GPU only around the backends' forward passes
            wrap_backends([backend for _, backend in shared_backends(config)])
    else:
        backends_for = lambda _config: []  # noqa: E731 - a custom pipeline brings its own
    # No environment here: app.py passes store_from_env(os.environ); the default is the plain
    # SQLite location (/data on a Space with storage, else ~/.cache/dtkg).
    store = feedback_store if feedback_store is not None else store_from_env({})
    ctx = AppContext(
        base_config=config,
        pipeline_factory=pipeline_factory,
        feedback_store=store,
        app_version=dtkg.__version__,
        trace_dir=Path(trace_dir or Path(tempfile.gettempdir()) / "dtkg-traces"),
        backends_for=backends_for,
        allow_private_endpoints=allow_private_endpoints,
    )
    with gr.Blocks(title="DTKG demo", analytics_enabled=False, delete_cache=(3600, 7200)) as demo:
        demo.dtkg_context = ctx  # type: ignore[attr-defined] - for tests and the owner
        _layout(demo, ctx, config, concurrency_limit, profile_note)
    demo.queue(default_concurrency_limit=concurrency_limit, max_size=max_queue)
    return demo


def _slider(name: str, field: str, value: float, label: str, info: str, step: float) -> gr.Slider:
    low, high = BOUNDS[field]
    return gr.Slider(
        low, high, value=value, step=step, label=label, info=info, elem_id=f"setting-{name}"
    )


def _layout(
    demo: gr.Blocks, ctx: AppContext, config: DTKGConfig, concurrency: int, profile_note: str
) -> None:
    c: dict[str, Any] = {}
    gr.Markdown(
        f"## {TITLE}\nAsk a multi-hop question; DTKG routes it to fact verification "
        "or chained reasoning over Wikidata and shows the evidence."
    )
    session = gr.State(None)  # handlers create {session_id, trace} on first use
    c["session"] = session
    with gr.Row(equal_height=True):
        question = gr.Textbox(
            label="Question",
            placeholder="Where was the director of Inception born?",
            lines=1,
            max_lines=4,
            scale=5,
            elem_id="question",
            autofocus=True,
            max_length=config.max_question_chars,
        )
        ask_btn = gr.Button("Ask", variant="primary", scale=1, elem_id="ask")
    c["status"] = gr.Markdown("", elem_id="status")
    with gr.Accordion("Settings", open=False, elem_id="settings"):
        with gr.Row():
            kg = gr.Radio(
                list(KG_CHOICES),
                value=kg_choice_of(config),
                label="Knowledge graph",
                elem_id="setting-kg",
            )
            endpoint = gr.Textbox(
                label="Custom SPARQL endpoint URL (used when the KG is 'Custom')",
                value=config.kg_endpoint if kg_choice_of(config) == "custom" else "",
                placeholder="https://example.org/sparql",
                elem_id="setting-endpoint",
            )
            mode = gr.Dropdown(
                list(MODES),
                value=config.mode,
                label="Mode",
                info="dtkg = full method; the others are the paper's ablations",
                elem_id="setting-mode",
            )
        alpha_info = (
            "combined = α·rerank + (1−α)·cosine"
            if config.reranker_backend != "none"
            else "no reranker in this profile: α is forced to 0"
        )
        with gr.Row():
            alpha = _slider("alpha", "alpha", config.alpha, "α (rerank weight)", alpha_info, 0.05)
            top_k = _slider(
                "top_k",
                "top_k_cosine",
                config.top_k_cosine,
                "K (cosine top-K)",
                "candidates kept before reranking",
                1,
            )
            width = _slider(
                "width",
                "width",
                config.width,
                "W_max (width)",
                "relations kept per expansion step",
                1,
            )
            theta = _slider(
                "theta",
                "theta",
                config.theta,
                "θ (threshold)",
                "minimum combined relation score",
                0.01,
            )
            max_depth = _slider(
                "max_depth", "max_depth", config.max_depth, "D_max (depth)", "maximum hops", 1
            )
    c["question"], c["ask_btn"] = question, ask_btn
    c["settings"] = [kg, endpoint, mode, alpha, top_k, width, theta, max_depth]

    with gr.Tabs(elem_id="tabs"):
        with gr.Tab("Answer", id="answer-tab", elem_id="tab-answer"):
            c["answer"] = gr.Markdown("*Ask a question to see the answer.*", elem_id="answer")
            c["entities"] = gr.Markdown("", elem_id="entities")
            examples = load_examples()
            gr.Examples(
                examples=[[e["question"]] for e in examples],
                inputs=[question],
                label="Examples (click one, then Ask)",
                examples_per_page=12,
            )
        with gr.Tab("Classification", id="classification-tab", elem_id="tab-classification"):
            c["cls_label"] = gr.Label(
                label="Route probability", num_top_classes=2, elem_id="cls-label"
            )
            c["cls_md"] = gr.Markdown("*Not classified yet.*", elem_id="cls-md")
        with gr.Tab("Facts", id="facts-tab", elem_id="tab-facts"):
            gr.Markdown(
                "Parallel track: each atomic fact, its best evidence triple and verdict. "
                "Ids link to Wikidata; local ids are not linked."
            )
            c["facts"] = gr.Dataframe(
                value=handlers.table(render.FACT_HEADERS, []),
                headers=render.FACT_HEADERS,
                datatype=render.FACT_TYPES,
                interactive=False,
                wrap=True,
                elem_id="facts",
                label="Facts",
                column_widths=["24%", "10%", "30%", "6%", "6%", "7%", "17%"],
            )
        with gr.Tab("Reasoning paths", id="paths-tab", elem_id="tab-paths"):
            c["paths"] = gr.Dataframe(
                value=handlers.table(render.PATH_HEADERS, []),
                headers=render.PATH_HEADERS,
                datatype=render.PATH_TYPES,
                interactive=False,
                wrap=True,
                elem_id="paths",
                label="Ranked paths",
                column_widths=["8%", "10%", "74%", "8%"],
            )
            c["paths_plot"] = gr.Plot(label="Top paths", elem_id="paths-plot")
        with gr.Tab("Trace & cost", id="trace-tab", elem_id="tab-trace"):
            c["cost"] = gr.Markdown("", elem_id="cost")
            c["stages_plot"] = gr.Plot(label="Time per stage", elem_id="stages-plot")
            c["settings_used"] = gr.Markdown("", elem_id="settings-used")
            c["trace_file"] = gr.File(label="Trace (JSON)", interactive=False, elem_id="trace-file")
            with gr.Accordion("JSON trace", open=False):
                c["trace_json"] = gr.JSON(label="Trace", elem_id="trace-json")
        with gr.Tab("Feedback", id="feedback-tab", elem_id="tab-feedback"):
            gr.Markdown(
                "Was the last answer right? Your rating is stored with the answer's "
                "trace and an anonymous session id (no IP address, no headers)."
            )
            c["category"] = gr.Dropdown(
                list(CATEGORIES), value=None, elem_id="fb-category", label="Category (optional)"
            )
            c["comment"] = gr.Textbox(
                label="Comment (optional)", lines=2, max_length=2000, elem_id="fb-comment"
            )
            with gr.Row():
                c["up_btn"] = gr.Button("👍 Good answer", elem_id="fb-up")
                c["down_btn"] = gr.Button("👎 Bad answer", elem_id="fb-down")
            c["fb_status"] = gr.Markdown("", elem_id="fb-status")
        with gr.Tab("About", id="about-tab", elem_id="tab-about"):
            gr.Markdown(about_md(config, profile_note, ctx.feedback_store.describe()))

    # Endpoints for gradio_client only (not shown in the UI).
    with gr.Column(visible=False):
        c["api_ask_btn"] = gr.Button("api-ask")
        c["api_trace"] = gr.JSON(label="trace")
        c["api_fb_btn"] = gr.Button("api-feedback")
        c["api_fb_inputs"] = [
            gr.Radio(["up", "down"], value="up", label="rating"),
            gr.Textbox(value="", label="category"),
            gr.Textbox(value="", label="comment"),
        ]
        c["api_fb_result"] = gr.JSON(label="result")
    _wire(ctx, c, concurrency)


def _wire(ctx: AppContext, c: dict[str, Any], concurrency: int) -> None:
    """Events: the streaming UI answer, the /ask and /feedback endpoints, the rating buttons.
    Questions share one concurrency group; feedback writes have their own."""
    session, settings = c["session"], c["settings"]
    outputs = [c[name] for name in ASK_OUTPUTS]

    def ask(
        question: str,
        kg: str,
        endpoint: str,
        mode: str,
        alpha: float,
        top_k: float,
        width: float,
        theta: float,
        max_depth: float,
        session: dict[str, Any] | None,
    ) -> Iterator[dict[Any, Any]]:
        values = (kg, endpoint, mode, alpha, top_k, width, theta, max_depth, session)
        for update in handlers.ask_stream(ctx, question, *values):
            yield {c[name]: value for name, value in update.items()}

    def api_ask(
        question: str,
        kg: str,
        endpoint: str,
        mode: str,
        alpha: float,
        top_k: float,
        width: float,
        theta: float,
        max_depth: float,
        session: dict[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Answer one question; returns the full trace (question, classification, branch,
        answer, answers, abstained, facts, paths, stats, config, notes)."""
        return handlers.ask_api(
            ctx, question, kg, endpoint, mode, alpha, top_k, width, theta, max_depth, session
        )

    def api_feedback(
        rating: str, category: str, comment: str, session: dict[str, Any] | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Rate the last answer of this session: rating 'up'/'down', optional category and
        comment. Returns {ok, feedback_id, message}."""
        return handlers.submit_feedback(ctx, rating, category, comment, session)

    def rate(rating: str):
        def handler(category: str | None, comment: str | None, session: dict[str, Any] | None):
            return handlers.feedback_ui(ctx, rating, category, comment, session)

        return handler

    gr.on(
        [c["ask_btn"].click, c["question"].submit],
        ask,
        inputs=[c["question"], *settings, session],
        outputs=outputs,
        api_name="ask_stream",
        api_visibility="private",
        show_progress="minimal",
        concurrency_id="pipeline",
        concurrency_limit=concurrency,
    )
    c["api_ask_btn"].click(
        api_ask,
        inputs=[c["question"], *settings, session],
        outputs=[c["api_trace"], session],
        api_name="ask",
        concurrency_id="pipeline",
        concurrency_limit=concurrency,
    )
    feedback_form = [c["category"], c["comment"]]
    for button, rating in ((c["up_btn"], "up"), (c["down_btn"], "down")):
        button.click(
            rate(rating),
            inputs=[*feedback_form, session],
            outputs=[c["fb_status"], *feedback_form, session],
            api_name=f"rate_{rating}",
            api_visibility="private",
            concurrency_id="feedback",
            concurrency_limit=16,
        )
    c["api_fb_btn"].click(
        api_feedback,
        inputs=[*c["api_fb_inputs"], session],
        outputs=[c["api_fb_result"], session],
        api_name="feedback",
        concurrency_id="feedback",
        concurrency_limit=16,
    )
