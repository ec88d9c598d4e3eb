"""The ``wikidata`` backend: SPARQLWrapper against any SPARQL 1.1 endpoint (default WDQS).

Polite and robust by construction: a descriptive User-Agent, a per-query timeout, at most
``max_in_flight`` queries in flight per endpoint per process, retries with backoff on 429 /
502 / 503 / 504 (honouring ``Retry-After``, capped), strict parsing of the JSON reply (an HTTP
200 that is not a SPARQL result is an error, never "no facts"), and the on-disk cache of
:mod:`.cache`. Every failure is a :class:`KGError` that names the endpoint and the remedy.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from SPARQLWrapper import JSON, POST, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import SPARQLWrapperException

from dtkg.errors import KGError
from dtkg.kg.base import KnowledgeGraph, Row
from dtkg.kg.cache import DEFAULT_DIR, QueryCache

RETRY_STATUSES = (429, 502, 503, 504)
WDQS_HOST = "query.wikidata.org"
_GET_MAX = 1500  # longer queries are POSTed (URL length limits)

_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def in_flight_semaphore(endpoint: str, limit: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore for ``endpoint`` (the first caller's ``limit`` sizes it)."""
    with _SEMAPHORES_LOCK:
        if endpoint not in _SEMAPHORES:
            _SEMAPHORES[endpoint] = threading.BoundedSemaphore(max(1, limit))
        return _SEMAPHORES[endpoint]


class _Retryable(Exception):
    def __init__(self, status: int, retry_after: float | None, detail: str) -> None:
        super().__init__(detail)
        self.status, self.retry_after, self.detail = status, retry_after, detail


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date); ``None`` if absent."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def parse_results(body: bytes, content_type: str, endpoint: str) -> list[Row]:
    """Rows of a SPARQL 1.1 JSON SELECT result; anything else is a :class:`KGError`."""
    snippet = body[:120].decode("utf-8", "replace").strip() or "(empty body)"
    try:
        data = json.loads(body)
        bindings = data["results"]["bindings"]
        if not isinstance(data["head"], dict) or not isinstance(bindings, list):
            raise TypeError("bad shape")
        return [{name: term["value"] for name, term in b.items()} for b in bindings]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KGError(
            f"SPARQL endpoint {endpoint} answered HTTP 200 with {content_type or 'no type'} "
            f"that is not a SPARQL JSON result ({snippet!r}). Check that kg_endpoint is the "
            "SPARQL endpoint URL itself (e.g. https://query.wikidata.org/sparql) and that no "
            "proxy or captive portal is answering instead."
        ) from exc


class SparqlKG(KnowledgeGraph):
    """Any SPARQL 1.1 endpoint over HTTP."""

    name = "wikidata"

    def __init__(
        self,
        endpoint: str,
        *,
        user_agent: str,
        timeout: float = 20.0,
        max_in_flight: int = 5,
        retries: int = 3,
        cache_dir: str | Path | None = None,
        cache_ttl: float = 7 * 24 * 3600.0,
        result_limit: int = 300,
        entity_search: str = "auto",
        backoff: float = 1.0,
        max_retry_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(result_limit=result_limit)
        if urlparse(endpoint).scheme not in ("http", "https"):
            raise KGError(f"SPARQL endpoint {endpoint!r} is not an http(s) URL.")
        if "(" not in user_agent or "http" not in user_agent:
            raise KGError(
                f"User-Agent {user_agent!r} lacks contact information; Wikimedia blocks such "
                "clients. Set kg_user_agent to 'name/version (https://contact-url; purpose)'."
            )
        if entity_search not in ("auto", "mwapi", "sparql"):
            raise KGError(f"entity_search must be auto, mwapi or sparql, not {entity_search!r}.")
        self.source = endpoint
        self.user_agent = user_agent
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_wait = max_retry_wait
        self.sleep = sleep
        self.semaphore = in_flight_semaphore(endpoint, max_in_flight)
        if entity_search == "auto":
            entity_search = "mwapi" if urlparse(endpoint).hostname == WDQS_HOST else "sparql"
        self.fuzzy_route = entity_search
        if cache_dir != "":  # None = the default directory; "" disables the cache
            self.cache = QueryCache(DEFAULT_DIR if cache_dir is None else cache_dir, cache_ttl)

    def _select(self, query: str) -> list[Row]:
        for attempt in range(self.retries + 1):
            try:
                with self.semaphore:
                    body, content_type = self._request(query)
                return parse_results(body, content_type, self.source)
            except _Retryable as exc:
                if attempt == self.retries:
                    raise KGError(
                        f"SPARQL endpoint {self.source} is overloaded or rate-limiting "
                        f"({exc.detail}) and still was after {self.retries} retries. Try again "
                        "in a minute, lower kg_max_in_flight, or use --kg embedded."
                    ) from None
                self.sleep(self._wait(attempt, exc.retry_after))
        raise AssertionError("unreachable")

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait)
        jitter = 1.0 + 0.25 * random.random()
        return min(self.backoff * (2**attempt) * jitter, self.max_retry_wait)

    def _request(self, query: str) -> tuple[bytes, str]:
        """One HTTP exchange; raises :class:`_Retryable` or :class:`KGError`."""
        wrapper = SPARQLWrapper(self.source, agent=self.user_agent)
        wrapper.setQuery(query)
        wrapper.setReturnFormat(JSON)
        wrapper.timeout = self.timeout  # type: ignore[assignment]  # setTimeout() int()s it
        if len(query) > _GET_MAX:
            wrapper.setMethod(POST)
        where = f"SPARQL endpoint {self.source}"
        try:
            deadline = time.monotonic() + self.timeout
            with wrapper.query().response as response:
                body = bytearray()
                while chunk := response.read1(1 << 16):  # the socket timeout is per read:
                    body += chunk  # also bound the whole reply
                    if time.monotonic() > deadline:
                        raise TimeoutError
                return bytes(body), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            exc.close()
            detail = f"HTTP {exc.code} {exc.reason}"
            if exc.code in RETRY_STATUSES:
                wait = parse_retry_after(exc.headers.get("Retry-After"))
                raise _Retryable(exc.code, wait, detail) from None
            hint = (
                "Wikimedia refuses clients without a descriptive User-Agent: check kg_user_agent."
                if exc.code == 403
                else "Check kg_endpoint, or use --kg embedded."
            )
            raise KGError(f"{where} refused the query ({detail}). {hint}") from None
        except SPARQLWrapperException as exc:  # 400, 401, 404, 414, 500 (body included)
            raise KGError(
                f"{where} failed the query: {_short(exc)}. On HTTP 500 a query timeout on the "
                "server is the usual cause: try again later or use --kg embedded; on 404 check "
                "kg_endpoint."
            ) from None
        except TimeoutError as exc:
            raise self._timeout_error() from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timeout_error() from exc
            raise KGError(
                f"Cannot reach {where} ({exc.reason}). Check the network and kg_endpoint, "
                "or use --kg embedded to work offline."
            ) from None
        except (OSError, ValueError) as exc:  # connection reset mid-body, bad URL …
            raise KGError(f"{where} failed: {exc}. Try again, or use --kg embedded.") from None

    def _timeout_error(self) -> KGError:
        return KGError(
            f"SPARQL endpoint {self.source} sent no answer within kg_timeout = {self.timeout:g} s. "
            "The endpoint may be overloaded: try again, raise kg_timeout, or use --kg embedded."
        )


def _short(exc: Exception, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + " …"
