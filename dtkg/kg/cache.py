"""A persistent cache of SPARQL results: one SQLite file, keyed by endpoint + query, with a TTL.

SQLite (WAL mode, a busy timeout) makes it safe for many threads and processes at once; each
thread of each process opens its own connection. A cache that cannot be opened or written
only logs a warning: a broken cache must never fail a question.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_DIR = Path("~/.cache/dtkg/sparql")
_SCHEMA = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, stored REAL, rows TEXT)"


def cache_key(namespace: str, query: str) -> str:
    return hashlib.sha256(f"{namespace}\n{query}".encode("utf-8", "replace")).hexdigest()


class QueryCache:
    """``get``/``put`` rows of SELECT results; entries older than ``ttl`` seconds are misses."""

    def __init__(
        self, directory: str | Path, ttl: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = Path(directory).expanduser() / "results.sqlite3"
        self.ttl = ttl
        self.clock = clock
        self._local = threading.local()
        self._broken = False

    def _connection(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # a cache: durability not needed
            conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            self._disable(exc)
            return None
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _disable(self, exc: Exception) -> None:
        self._broken = True
        log.warning(
            "SPARQL cache at %s disabled (%s); queries go to the endpoint every time. "
            'Fix the directory\'s permissions or set kg_cache_dir ("" disables the cache).',
            self.path,
            exc,
        )

    def get(self, namespace: str, query: str) -> list[dict[str, str]] | None:
        conn = self._connection()
        if conn is None:
            return None
        try:
            row = conn.execute(
                "SELECT stored, rows FROM results WHERE key = ?", (cache_key(namespace, query),)
            ).fetchone()
        except sqlite3.Error as exc:
            log.warning("SPARQL cache read failed (%s); treating as a miss.", exc)
            return None
        if row is None or self.clock() - row[0] > self.ttl:
            return None
        try:
            return json.loads(row[1])
        except ValueError:
            return None

    def put(self, namespace: str, query: str, rows: list[dict[str, str]]) -> None:
        conn = self._connection()
        if conn is None:
            return
        try:
            conn.execute(
                "INSERT OR REPLACE INTO results (key, stored, rows) VALUES (?, ?, ?)",
                (cache_key(namespace, query), self.clock(), json.dumps(rows)),
            )
        except sqlite3.Error as exc:
            log.warning("SPARQL cache write failed (%s); result not cached.", exc)
