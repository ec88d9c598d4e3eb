"""The on-disk SPARQL cache: hits cost no request, entries expire, threads and processes share."""

# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kg_fixtures import (
    EMPTY_RESULT,
    USER_AGENT,
    FaultServer,
    Reply,
    fault_server,
    sparql_json,
    tiny_endpoint,
    tiny_kg,
    tiny_ttl,
)

from dtkg.errors import KGError
from dtkg.kg.cache import QueryCache
from dtkg.kg.embedded import EmbeddedKG
from dtkg.kg.sparql_endpoint import SparqlKG


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def cached_client(url: str, directory: Path, ttl: float = 60.0) -> SparqlKG:
    return SparqlKG(url, user_agent=USER_AGENT, cache_dir=directory, cache_ttl=ttl)


def test_a_repeated_query_costs_no_request(fault_server: FaultServer, tmp_path: Path) -> None:
    row = {"e": "http://www.wikidata.org/entity/Q1", "label": "Kismet"}
    fault_server.play(Reply(body=sparql_json(row)))
    kg = cached_client(fault_server.url, tmp_path).with_stats()
    assert kg.entity_label("Q1") == "Kismet"
    assert kg.entity_label("Q1") == "Kismet"
    assert len(fault_server.requests) == 1
    assert (kg.stats.queries, kg.stats.cache_hits, kg.stats.cache_misses) == (1, 1, 1)


def test_entries_expire_after_the_ttl(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.play(Reply(body=EMPTY_RESULT))
    kg = cached_client(fault_server.url, tmp_path, ttl=60)
    assert kg.cache is not None
    kg.cache.clock = clock = Clock()
    kg.head_relations("Q1")
    clock.now += 59
    kg.head_relations("Q1")
    assert len(fault_server.requests) == 1
    clock.now += 2  # 61 s after it was stored
    kg.head_relations("Q1")
    assert len(fault_server.requests) == 2
    assert (kg.stats.cache_hits, kg.stats.cache_misses) == (1, 2)


def test_the_cache_persists_across_instances_and_is_keyed_by_endpoint(
    fault_server: FaultServer, tiny_endpoint: str, tiny_kg: EmbeddedKG, tmp_path: Path
) -> None:
    first = cached_client(tiny_endpoint, tmp_path)
    expected = first.head_relations("Q1000")
    assert expected == tiny_kg.head_relations("Q1000")
    again = cached_client(tiny_endpoint, tmp_path).with_stats()  # a "new process"
    assert again.head_relations("Q1000") == expected
    assert (again.stats.queries, again.stats.cache_hits) == (0, 1)
    fault_server.play(Reply(body=EMPTY_RESULT))  # same query text, other endpoint: no hit
    assert cached_client(fault_server.url, tmp_path).head_relations("Q1000") == []
    assert len(fault_server.requests) == 1


def test_errors_are_not_cached(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.play(Reply(body=b"<html>oops</html>"), Reply(body=EMPTY_RESULT))
    kg = cached_client(fault_server.url, tmp_path)
    with pytest.raises(KGError):
        kg.head_relations("Q1")
    assert kg.head_relations("Q1") == []
    assert len(fault_server.requests) == 2


def test_an_empty_cache_dir_disables_the_cache(fault_server: FaultServer) -> None:
    fault_server.play(Reply(body=EMPTY_RESULT))
    kg = SparqlKG(fault_server.url, user_agent=USER_AGENT, cache_dir="").with_stats()
    kg.head_relations("Q1")
    kg.head_relations("Q1")
    assert kg.cache is None and len(fault_server.requests) == 2
    assert (kg.stats.cache_hits, kg.stats.cache_misses) == (0, 0)


def test_copies_share_the_cache_but_count_their_own(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    fault_server.play(Reply(body=EMPTY_RESULT))
    base = cached_client(fault_server.url, tmp_path)
    a, b = base.with_stats(), base.with_stats()
    a.tail_relations("Q1")
    b.tail_relations("Q1")
    assert (a.stats.cache_misses, a.stats.queries, b.stats.cache_hits, b.stats.queries) == (
        1,
        1,
        1,
        0,
    )


def test_an_unusable_cache_directory_only_warns(
    fault_server: FaultServer, tmp_path: Path, caplog
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    fault_server.play(Reply(body=EMPTY_RESULT))
    kg = cached_client(fault_server.url, blocker / "cache")
    with caplog.at_level(logging.WARNING):
        assert kg.head_relations("Q1") == []
        assert kg.head_relations("Q1") == []
    assert "cache" in caplog.text and "disabled" in caplog.text
    assert len(fault_server.requests) == 2


HAMMER = """
import sys
from dtkg.kg.cache import QueryCache
cache, worker, found = QueryCache(sys.argv[1], ttl=3600), sys.argv[2], 0
for n in range(100):
    cache.put("http://x/sparql", f"q{n % 20}", [{"worker": worker, "n": str(n)}])
    found += cache.get("http://x/sparql", f"q{n % 20}") is not None
print(found)
"""


def test_threads_and_processes_share_one_cache_safely(tmp_path: Path) -> None:
    """Two processes and four threads write and read back the same 20 keys at once."""
    root = Path(__file__).resolve().parent.parent
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", HAMMER, str(tmp_path), f"p{w}"],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(2)
    ]
    counts: list[str] = []

    def hammer(worker: int) -> None:
        cache = QueryCache(tmp_path, ttl=3600)
        found = 0
        for n in range(100):
            cache.put("http://x/sparql", f"q{n % 20}", [{"worker": str(worker), "n": str(n)}])
            found += cache.get("http://x/sparql", f"q{n % 20}") is not None
        counts.append(str(found))

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outputs = [p.communicate(timeout=60)[0].strip() for p in processes]
    assert outputs == ["100", "100"] and counts == ["100"] * 4
    cache = QueryCache(tmp_path, ttl=3600)
    rows = [cache.get("http://x/sparql", f"q{n}") for n in range(20)]
    assert all(r is not None and len(r) == 1 for r in rows)
