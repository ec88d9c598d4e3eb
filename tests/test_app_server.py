"""The app started on a free loopback port and driven with gradio_client (scripted pipeline;
see test_app_real.py for the real one)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import free_port
from gradio_client import Client
from gradio_client.exceptions import AppError

from dtkg.config import DTKGConfig
from dtkg.feedback import SQLiteFeedbackStore
from dtkg.ui import create_app
from dtkg.ui.fake import FakePipeline

pytestmark = pytest.mark.slow  # starts a server

CHAINED = "Where was the director of Inception born?"


@dataclass
class Served:
    url: str
    store: SQLiteFeedbackStore

    def client(self) -> Client:
        return Client(self.url, verbose=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("app")
    store = SQLiteFeedbackStore(tmp / "feedback.sqlite3")
    demo = create_app(
        DTKGConfig.from_profile("cpu"),
        pipeline_factory=lambda config: FakePipeline(config, delay=0.05),
        feedback_store=store,
        concurrency_limit=4,
        max_queue=128,
        trace_dir=tmp / "traces",
    )
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        yield Served(f"http://127.0.0.1:{port}/", store)
    finally:
        demo.close()
        store.close()


def test_api_lists_ask_and_feedback_only(served: Served) -> None:
    info = served.client().view_api(print_info=False, return_format="dict")
    assert set(info["named_endpoints"]) == {"/ask", "/feedback"}
    params = {p["parameter_name"] for p in info["named_endpoints"]["/ask"]["parameters"]}
    assert params == {
        "question",
        "kg",
        "endpoint",
        "mode",
        "alpha",
        "top_k",
        "width",
        "theta",
        "max_depth",
    }


def test_ask_returns_the_trace(served: Served) -> None:
    trace = served.client().predict(question=CHAINED, api_name="/ask")
    assert isinstance(trace, dict)
    assert trace["question"] == CHAINED and trace["answer"] == "London"
    assert trace["classification"]["label"] == "chained" and trace["paths"]
    assert set(trace["stats"]) >= {"llm_calls", "kg_queries", "seconds"}


def test_ask_settings_are_applied(served: Served) -> None:
    trace = served.client().predict(
        question=CHAINED, mode="only-chain", theta=0.4, max_depth=2, api_name="/ask"
    )
    assert (trace["config"]["mode"], trace["config"]["theta"], trace["config"]["max_depth"]) == (
        "only-chain",
        0.4,
        2,
    )


def test_feedback_lands_in_sqlite_with_the_trace(served: Served) -> None:
    client = served.client()
    before = served.store.count()
    result = client.predict(rating="up", api_name="/feedback")
    assert result["ok"] is False and "Ask a question first" in result["message"]
    trace = client.predict(question=CHAINED, api_name="/ask")
    result = client.predict(
        rating="down", category="wrong answer", comment="it was Paris?", api_name="/feedback"
    )
    assert result["ok"] is True
    assert served.store.count() == before + 1
    row = next(r for r in served.store.records() if r["feedback_id"] == result["feedback_id"])
    assert (row["rating"], row["category"], row["comment"]) == (
        "down",
        "wrong answer",
        "it was Paris?",
    )
    assert row["trace"] == trace and row["question"] == CHAINED and len(row["session_id"]) == 32
    bad = client.predict(rating="up", category="whatever", api_name="/feedback")
    assert bad["ok"] is False and "Unknown feedback category" in bad["message"]


def test_errors_are_clear_and_the_app_keeps_serving(served: Served) -> None:
    client = served.client()
    with pytest.raises(AppError, match="non-empty question"):
        client.predict(question="  ", api_name="/ask")
    with pytest.raises(AppError, match="greater than maximum value 1"):  # the slider's check
        client.predict(question=CHAINED, alpha=3.0, api_name="/ask")
    with pytest.raises(AppError, match="W_max must be a whole number"):  # ours
        client.predict(question=CHAINED, width=2.5, api_name="/ask")
    with pytest.raises(AppError, match="not an http"):
        client.predict(
            question=CHAINED, kg="custom", endpoint="file:///etc/passwd", api_name="/ask"
        )
    with pytest.raises(AppError, match="failed on purpose"):
        client.predict(question="FAIL now", api_name="/ask")
    with pytest.raises(AppError, match="Something went wrong"):
        client.predict(question="CRASH now", api_name="/ask")
    assert client.predict(question=CHAINED, api_name="/ask")["answer"] == "London"


def test_eight_concurrent_asks_all_answered(served: Served) -> None:
    questions = [f"Where was the director of Inception born? #{i}" for i in range(8)]
    clients = [served.client() for _ in range(2)]
    start = time.perf_counter()
    jobs = [clients[i % 2].submit(question=q, api_name="/ask") for i, q in enumerate(questions)]
    traces = [job.result(timeout=120) for job in jobs]
    elapsed = time.perf_counter() - start
    assert [t["question"] for t in traces] == questions
    assert all(t["answer"] == "London" for t in traces)
    print(f"8 concurrent asks answered in {elapsed:.2f} s")


def test_fifty_concurrent_feedback_submissions_lose_no_row(served: Served) -> None:
    clients = [served.client() for _ in range(5)]
    for client in clients:
        client.predict(question=CHAINED, api_name="/ask")
    before = served.store.count()

    def submit(i: int) -> dict:
        return clients[i % 5].predict(
            rating="up" if i % 2 else "down", comment=f"row {i}", api_name="/feedback"
        )

    with ThreadPoolExecutor(50) as pool:
        results = list(pool.map(submit, range(50)))
    assert all(r["ok"] for r in results)
    assert len({r["feedback_id"] for r in results}) == 50
    assert served.store.count() == before + 50
    comments = {r["comment"] for r in served.store.records()}
    assert {f"row {i}" for i in range(50)} <= comments


def test_trace_file_is_written_for_the_ui(served: Served, tmp_path: Path) -> None:
    # The UI's streaming endpoint is private (not callable through the API); its trace file
    # and tabs are exercised by the handler tests and the browser test.
    info = served.client().view_api(print_info=False, return_format="dict")
    assert "/ask_stream" not in info["named_endpoints"]
    assert "/ask_stream" not in info["unnamed_endpoints"]


@pytest.mark.slow
def test_app_py_starts_from_the_environment(tmp_path: Path) -> None:
    """``python app.py`` as the Space runs it: env → config → app on GRADIO_SERVER_* ."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    port = free_port()
    env = {
        **os.environ,
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_SERVER_PORT": str(port),
        "DTKG_FAKE_PIPELINE": "1",
        "DTKG_FEEDBACK_DB": str(tmp_path / "f.sqlite3"),
        "DTKG_MODE": "only-chain",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        client = None
        while client is None:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else "app.py exited"
            assert time.monotonic() < deadline, "app.py did not start within 120 s"
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(1)
        trace = client.predict(question=CHAINED, api_name="/ask")
        assert trace["config"]["mode"] == "only-chain"  # DTKG_MODE reached the config
        assert client.predict(rating="up", api_name="/feedback")["ok"]
        store = SQLiteFeedbackStore(tmp_path / "f.sqlite3")
        assert store.count() == 1
        store.close()
    finally:
        proc.terminate()
        proc.wait(30)
