"""Endpoint faults against a real local HTTP server: retries, timeouts, bad replies, limits."""

# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
from __future__ import annotations

import threading
import time
from email.utils import formatdate

import pytest
from kg_fixtures import (
    EMPTY_RESULT,
    USER_AGENT,
    FaultServer,
    Reply,
    fault_server,
    free_port,
    recorded_sleeps,
)

from dtkg.errors import KGError
from dtkg.kg.sparql_endpoint import SparqlKG, parse_retry_after

OK = Reply(body=EMPTY_RESULT)


def client(server: FaultServer, **kwargs: object) -> tuple[SparqlKG, list[float]]:
    waits, sleep = recorded_sleeps()
    options: dict[str, object] = {"cache_dir": "", "timeout": 2.0, "retries": 3, "sleep": sleep}
    options.update(kwargs)
    return SparqlKG(server.url, user_agent=USER_AGENT, **options), waits  # type: ignore[arg-type]


def test_429_with_retry_after_is_retried_after_that_many_seconds(
    fault_server: FaultServer,
) -> None:
    kg, waits = client(fault_server)
    fault_server.play(Reply(429, b"slow down", {"Retry-After": "7"}), OK)
    assert kg.head_relations("Q1") == []
    assert len(fault_server.requests) == 2 and waits == [7.0]
    assert kg.stats.queries == 1  # one answered query, whatever it took


def test_retry_after_is_capped(fault_server: FaultServer) -> None:
    kg, waits = client(fault_server, max_retry_wait=2.5)
    fault_server.play(Reply(429, headers={"Retry-After": "3600"}), OK)
    kg.head_relations("Q1")
    assert waits == [2.5]


def test_retry_after_as_an_http_date() -> None:
    assert 8 <= parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10  # type: ignore[operator]
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_503_without_retry_after_backs_off_exponentially(fault_server: FaultServer) -> None:
    kg, waits = client(fault_server, backoff=0.5)
    fault_server.play(Reply(503), Reply(503), Reply(503), OK)
    assert kg.tail_relations("Q1") == []
    assert len(fault_server.requests) == 4
    assert len(waits) == 3
    for wait, base in zip(waits, (0.5, 1.0, 2.0), strict=True):
        assert base <= wait <= base * 1.25  # doubling, with up to 25 % jitter


def test_a_persistent_503_ends_in_a_clear_error(fault_server: FaultServer) -> None:
    kg, waits = client(fault_server, retries=2)
    fault_server.play(Reply(503, b"Service Unavailable"))
    with pytest.raises(KGError) as info:
        kg.head_relations("Q1")
    assert len(fault_server.requests) == 3 and len(waits) == 2
    message = str(info.value)
    assert fault_server.url in message and "HTTP 503" in message and "2 retries" in message
    assert "--kg embedded" in message


def test_retries_really_wait(fault_server: FaultServer) -> None:
    kg = SparqlKG(fault_server.url, user_agent=USER_AGENT, cache_dir="", retries=1)
    fault_server.play(Reply(429, headers={"Retry-After": "1"}), OK)
    started = time.monotonic()
    kg.head_relations("Q1")
    assert 1.0 <= time.monotonic() - started < 5


def test_a_reply_slower_than_the_timeout_is_a_timeout_error(fault_server: FaultServer) -> None:
    kg, waits = client(fault_server, timeout=0.5)
    fault_server.play(Reply(delay=3.0, body=EMPTY_RESULT))
    started = time.monotonic()
    with pytest.raises(KGError, match=r"no answer within kg_timeout = 0.5 s") as info:
        kg.head_relations("Q1")
    assert time.monotonic() - started < 2.5  # not retried: a slow query stays slow
    assert fault_server.url in str(info.value) and waits == []


def test_a_reply_that_trickles_in_is_cut_at_the_timeout(fault_server: FaultServer) -> None:
    kg, _ = client(fault_server, timeout=0.6)
    fault_server.play(Reply(trickle=0.1, body=EMPTY_RESULT + b" " * 100))  # 2 s, 8 bytes a time
    started = time.monotonic()
    with pytest.raises(KGError, match="no answer within kg_timeout"):
        kg.head_relations("Q1")
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(body=b""), r"HTTP 200 .*\(empty body\)"),
        (
            Reply(body=b"<html><body>Welcome</body></html>", headers={"Content-Type": "text/html"}),
            r"HTTP 200 with text/html that is not a SPARQL JSON result .*<html>",
        ),
        (Reply(body=b'{"boolean": true}'), "not a SPARQL JSON result"),
        (Reply(body=b'{"head": {}, "results": {"bindings": [{"x": 1}]}}'), "not a SPARQL JSON"),
        (Reply(body=b"[1, 2"), "not a SPARQL JSON result"),
    ],
)
def test_a_200_without_a_sparql_result_is_an_error_not_no_facts(
    fault_server: FaultServer, reply: Reply, expected: str
) -> None:
    kg, _ = client(fault_server)
    fault_server.play(reply)
    with pytest.raises(KGError, match=expected) as info:
        kg.head_relations("Q1")
    assert "kg_endpoint" in str(info.value) and len(fault_server.requests) == 1


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, "failed the query"),
        (403, "User-Agent"),
        (404, "kg_endpoint"),
        (500, "query timeout on the server"),
        (418, r"refused the query \(HTTP 418"),
    ],
)
def test_other_http_errors_fail_at_once_with_a_remedy(
    fault_server: FaultServer, status: int, expected: str
) -> None:
    kg, waits = client(fault_server)
    fault_server.play(Reply(status, b"java.util.concurrent.TimeoutException"))
    with pytest.raises(KGError, match=expected) as info:
        kg.search_entities("Kismet")
    assert fault_server.url in str(info.value)
    assert len(fault_server.requests) == 1 and waits == []


def test_an_unreachable_endpoint_says_so() -> None:
    url = f"http://127.0.0.1:{free_port()}/sparql"  # nothing listens there
    kg = SparqlKG(url, user_agent=USER_AGENT, cache_dir="", timeout=2)
    with pytest.raises(KGError, match=r"Cannot reach SPARQL endpoint .* --kg embedded"):
        kg.entity_label("Q1")


def test_configuration_mistakes_are_refused() -> None:
    with pytest.raises(KGError, match="contact"):
        SparqlKG("https://query.wikidata.org/sparql", user_agent="python-urllib", cache_dir="")
    with pytest.raises(KGError, match="http"):
        SparqlKG("ftp://example.org/sparql", user_agent=USER_AGENT, cache_dir="")
    with pytest.raises(KGError, match="entity_search"):
        SparqlKG("http://127.0.0.1/q", user_agent=USER_AGENT, cache_dir="", entity_search="x")


def test_at_most_max_in_flight_queries_per_endpoint(fault_server: FaultServer) -> None:
    fault_server.play(Reply(delay=0.3, body=EMPTY_RESULT))
    kgs = [client(fault_server, max_in_flight=2)[0] for _ in range(3)]  # one semaphore for all
    errors: list[Exception] = []

    def ask(kg: SparqlKG, n: int) -> None:
        try:
            kg.with_stats().head_relations(f"Q{n}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(kgs[n % 3], n + 1)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(fault_server.requests) == 8
    assert fault_server.max_in_flight == 2
