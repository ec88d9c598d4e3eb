"""Users' ratings of answers: a :class:`FeedbackStore` interface (one abstract method) and its
implementations.

- :class:`SQLiteFeedbackStore` — the default; WAL mode, one connection per thread, a write lock
  and ``busy_timeout``, so concurrent submissions never lose a row.
- :class:`HubDatasetMirror` — appends every record as a JSON line to a folder that a
  ``huggingface_hub.CommitScheduler`` pushes to a (private) dataset repo every few minutes.
- :class:`TeeFeedbackStore` — writes to a primary store and, best-effort, to mirrors.

A record holds the rating, an optional category and comment, the full trace, the config, the
model ids, the KG endpoint, the app version, the UTC time and an anonymous session id (a random
id; never an IP address or request header).

The Space owner exports everything with ``python -m dtkg.feedback export OUT.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sqlite3
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dtkg.errors import ConfigError, InputError

log = logging.getLogger(__name__)

RATINGS = ("up", "down")
CATEGORIES = ("correct", "wrong answer", "wrong classification", "wrong entity", "unsupported fact")
MAX_COMMENT_CHARS = 2000
SPACE_DATA_DIR = "/data"  # a Hugging Face Space's persistent storage, when attached


# ------------------------------------------------------------------------------ record
@dataclass
class FeedbackRecord:
    """One rating, with everything needed to reproduce what the user saw."""

    rating: str  # up | down
    category: str | None
    comment: str
    question: str
    answer: str
    trace: dict[str, Any]
    config: dict[str, Any]
    models: dict[str, Any]
    kg_endpoint: str
    app_version: str
    session_id: str
    created_utc: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds")
    )
    feedback_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def create(
        cls,
        *,
        rating: str,
        category: str | None,
        comment: str | None,
        trace: Mapping[str, Any],
        session_id: str,
        app_version: str,
    ) -> FeedbackRecord:
        """Validate the user's input and fill the context from the trace's config."""
        rating = normalise_rating(rating)
        category = (category or "").strip() or None
        if category is not None and category not in CATEGORIES:
            raise InputError(
                f"Unknown feedback category {category!r}; choose one of {', '.join(CATEGORIES)}."
            )
        comment = (comment or "").strip()
        if len(comment) > MAX_COMMENT_CHARS:
            raise InputError(
                f"The comment has {len(comment)} characters; please keep it under "
                f"{MAX_COMMENT_CHARS}."
            )
        config = dict(trace.get("config") or {})
        return cls(
            rating=rating,
            category=category,
            comment=comment,
            question=str(trace.get("question", "")),
            answer=str(trace.get("answer", "")),
            trace=dict(trace),
            config=config,
            models=models_of(config),
            kg_endpoint=kg_endpoint_of(config),
            app_version=app_version,
            session_id=session_id,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def normalise_rating(rating: str) -> str:
    """``up``/``down`` (also 👍/👎, +1/-1, thumbs_up …) → ``up``/``down``."""
    value = str(rating).strip().lower()
    aliases = {
        "👍": "up",
        "+1": "up",
        "1": "up",
        "thumbs_up": "up",
        "good": "up",
        "👎": "down",
        "-1": "down",
        "thumbs_down": "down",
        "bad": "down",
    }
    value = aliases.get(value, value)
    if value not in RATINGS:
        raise InputError(f"A rating is 'up' or 'down' (👍/👎), got {rating!r}.")
    return value


def models_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The model ids a config runs (what a rating is about)."""
    return {
        "llm_backend": config.get("llm_backend"),
        "llm": config.get("llm_model"),
        "llm_gguf_file": config.get("llm_gguf_file"),
        "embedder": config.get("embedder_model"),
        "reranker": config.get("reranker_model")
        if config.get("reranker_backend") != "none"
        else None,
    }


def kg_endpoint_of(config: Mapping[str, Any]) -> str:
    """``embedded:<file or shipped slice>`` or the SPARQL endpoint URL."""
    if config.get("kg_backend") == "embedded":
        return f"embedded:{config.get('kg_file') or 'shipped-slice'}"
    return str(config.get("kg_endpoint") or "")


# ------------------------------------------------------------------------------ stores
class FeedbackStore(ABC):
    """Where ratings go. One abstract method: :meth:`add`."""

    @abstractmethod
    def add(self, record: FeedbackRecord) -> str:
        """Store ``record`` durably; return its id. Must be safe to call from many threads."""

    def close(self) -> None:  # noqa: B027 - optional hook, deliberately not abstract
        """Release resources (no-op by default)."""

    def describe(self) -> str:
        return type(self).__name__


_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    feedback_id TEXT NOT NULL UNIQUE,
    created_utc TEXT NOT NULL,
    session_id TEXT NOT NULL,
    rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    category TEXT,
    comment TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    trace_json TEXT NOT NULL,
    config_json TEXT NOT NULL,
    models_json TEXT NOT NULL,
    kg_endpoint TEXT NOT NULL,
    app_version TEXT NOT NULL
)
"""
_COLUMNS = (
    "feedback_id",
    "created_utc",
    "session_id",
    "rating",
    "category",
    "comment",
    "question",
    "answer",
    "trace_json",
    "config_json",
    "models_json",
    "kg_endpoint",
    "app_version",
)


class SQLiteFeedbackStore(FeedbackStore):
    """SQLite file; WAL journal, one connection per thread, writes under a lock + busy_timeout."""

    def __init__(self, path: str | Path, *, wal: bool = True, busy_timeout_ms: int = 30_000):
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"Cannot create the feedback folder {self.path.parent} ({exc}); set "
                "DTKG_FEEDBACK_DB to a writable path."
            ) from exc
        self.wal = wal
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()  # in-process writers queue here, not on SQLITE_BUSY
        with self._write_lock:
            conn = self._connection()
            if wal:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":  # e.g. a network file system
                    log.warning("SQLite refused WAL mode for %s (got %s)", self.path, mode)
            conn.execute(_SCHEMA)
            conn.commit()

    def describe(self) -> str:
        return f"SQLite {self.path}"

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, timeout=self.busy_timeout_ms / 1000, check_same_thread=False
                )
            except sqlite3.Error as exc:
                raise ConfigError(
                    f"Cannot open the feedback database {self.path} ({exc}); set "
                    "DTKG_FEEDBACK_DB to a writable path."
                ) from exc
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA synchronous=NORMAL" if self.wal else "PRAGMA synchronous=FULL")
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def add(self, record: FeedbackRecord) -> str:
        values = (
            record.feedback_id,
            record.created_utc,
            record.session_id,
            record.rating,
            record.category,
            record.comment,
            record.question,
            record.answer,
            json.dumps(record.trace, ensure_ascii=False),
            json.dumps(record.config, ensure_ascii=False),
            json.dumps(record.models, ensure_ascii=False),
            record.kg_endpoint,
            record.app_version,
        )
        placeholders = ", ".join("?" * len(_COLUMNS))
        sql = f"INSERT INTO feedback ({', '.join(_COLUMNS)}) VALUES ({placeholders})"
        conn = self._connection()
        for attempt in range(5):  # another *process* may hold the lock past busy_timeout
            try:
                with self._write_lock, conn:  # the connection context commits or rolls back
                    conn.execute(sql, values)
                return record.feedback_id
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                time.sleep(0.05 * 2**attempt)
        raise ConfigError(f"The feedback database {self.path} stayed locked; try again.")

    # -------------------------------------------------------------- reading back
    def count(self) -> int:
        return int(self._connection().execute("SELECT COUNT(*) FROM feedback").fetchone()[0])

    def records(self) -> Iterator[dict[str, Any]]:
        """Every row as a dict, JSON columns decoded, oldest first."""
        cursor = self._connection().execute(
            f"SELECT id, {', '.join(_COLUMNS)} FROM feedback ORDER BY id"
        )
        names = [d[0] for d in cursor.description]
        for row in cursor:
            item = dict(zip(names, row, strict=True))
            for column in ("trace_json", "config_json", "models_json"):
                item[column.removesuffix("_json")] = json.loads(item.pop(column))
            yield item

    def export_jsonl(self, path: str | Path) -> int:
        """Write every record as one JSON line; return the number written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        with path.open("w", encoding="utf-8") as out:
            for item in self.records():
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
                n += 1
        return n

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._connections.clear()
        self._local = threading.local()


class HubDatasetMirror(FeedbackStore):
    """Appends records as JSON lines to ``folder``; a ``CommitScheduler`` pushes that folder to
    the dataset ``repo_id`` every ``every_minutes``. Each process writes its own file, so
    several replicas never overwrite each other."""

    def __init__(
        self,
        repo_id: str,
        folder: str | Path,
        *,
        token: str | None = None,
        every_minutes: float = 5,
        private: bool = True,
        scheduler_factory: Callable[..., Any] | None = None,
    ):
        if scheduler_factory is None:
            from huggingface_hub import CommitScheduler

            scheduler_factory = CommitScheduler
        self.repo_id = repo_id
        self.folder = Path(folder).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.file = self.folder / f"feedback-{uuid.uuid4().hex}.jsonl"
        self.scheduler = scheduler_factory(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=self.folder,
            path_in_repo="data",
            every=every_minutes,
            private=private,
            token=token,
            allow_patterns=["*.jsonl"],
        )

    def describe(self) -> str:
        return f"Hugging Face dataset {self.repo_id}"

    def add(self, record: FeedbackRecord) -> str:
        with self.scheduler.lock, self.file.open("a", encoding="utf-8") as out:
            out.write(record.to_json() + "\n")
        return record.feedback_id

    def close(self) -> None:
        stop = getattr(self.scheduler, "stop", None)
        if callable(stop):
            stop()


class TeeFeedbackStore(FeedbackStore):
    """The primary store must succeed; mirrors are best-effort (a hub hiccup loses no row)."""

    def __init__(self, primary: FeedbackStore, *mirrors: FeedbackStore):
        self.primary = primary
        self.mirrors = list(mirrors)

    def describe(self) -> str:
        return " + ".join(s.describe() for s in [self.primary, *self.mirrors])

    def add(self, record: FeedbackRecord) -> str:
        feedback_id = self.primary.add(record)
        for mirror in self.mirrors:
            try:
                mirror.add(record)
            except Exception:  # noqa: BLE001 - the row is already safe in the primary store
                log.exception("feedback mirror %s failed", mirror.describe())
        return feedback_id

    def close(self) -> None:
        for store in [self.primary, *self.mirrors]:
            store.close()


# ------------------------------------------------------------------ building from the env
def default_db_path(environ: Mapping[str, str], data_dir: str | Path = SPACE_DATA_DIR) -> Path:
    """``DTKG_FEEDBACK_DB``, else a Space's persistent ``/data`` when writable, else
    ``~/.cache/dtkg/feedback.sqlite3``."""
    if environ.get("DTKG_FEEDBACK_DB"):
        return Path(environ["DTKG_FEEDBACK_DB"]).expanduser()
    data = Path(data_dir)
    if data.is_dir() and os.access(data, os.W_OK):
        return data / "dtkg" / "feedback.sqlite3"
    return Path("~/.cache/dtkg/feedback.sqlite3").expanduser()


def store_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    data_dir: str | Path = SPACE_DATA_DIR,
    scheduler_factory: Callable[..., Any] | None = None,
) -> FeedbackStore:
    """The store an app instance uses: SQLite, plus a dataset mirror when
    ``DTKG_FEEDBACK_DATASET`` and ``HF_TOKEN`` are both set. Called at the edges only."""
    environ = os.environ if environ is None else environ
    db_path = default_db_path(environ, data_dir)
    store: FeedbackStore = SQLiteFeedbackStore(db_path)
    dataset = environ.get("DTKG_FEEDBACK_DATASET")
    token = environ.get("HF_TOKEN")
    if dataset and token:
        folder = environ.get("DTKG_FEEDBACK_PUSH_DIR") or db_path.parent / "feedback-push"
        every = float(environ.get("DTKG_FEEDBACK_PUSH_MINUTES") or 5)
        try:
            mirror = HubDatasetMirror(
                dataset,
                folder,
                token=token,
                every_minutes=every,
                scheduler_factory=scheduler_factory,
            )
        except Exception as exc:  # noqa: BLE001 - never stop the app for the mirror
            log.warning("feedback push to %s disabled: %s", dataset, exc)
        else:
            store = TeeFeedbackStore(store, mirror)
    elif dataset:
        log.warning("DTKG_FEEDBACK_DATASET is set but HF_TOKEN is not; feedback stays local.")
    return store


# ------------------------------------------------------------------------------ CLI
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dtkg.feedback export OUT.jsonl [--db PATH]`` / ``count [--db PATH]``."""
    parser = argparse.ArgumentParser(
        prog="python -m dtkg.feedback", description="Feedback database tools."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="write every feedback record as JSON lines")
    export.add_argument("out", help="output .jsonl file")
    count = sub.add_parser("count", help="print the number of feedback records")
    for p in (export, count):
        p.add_argument("--db", help="SQLite file (default: DTKG_FEEDBACK_DB, /data, ~/.cache/dtkg)")
    args = parser.parse_args(argv)
    path = Path(args.db).expanduser() if args.db else default_db_path(os.environ)
    if not path.exists():
        print(
            f"error: no feedback database at {path} (set --db or DTKG_FEEDBACK_DB)", file=sys.stderr
        )
        return 2
    store = SQLiteFeedbackStore(path)
    try:
        if args.command == "export":
            n = store.export_jsonl(args.out)
            print(f"wrote {n} records to {args.out}")
        else:
            print(store.count())
    finally:
        store.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
