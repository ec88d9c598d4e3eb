"""Shared fixtures and helpers of the knowledge-graph tests (import what a test module uses).

Real servers only: ``oxigraph serve`` on a free loopback port for SPARQL, and a scripted
``http.server`` for endpoint faults. Everything binds 127.0.0.1 and stops at teardown.
"""

from __future__ import annotations

import http.server
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dtkg.kg.embedded import EmbeddedKG, shipped_slice

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
USER_AGENT = "dtkg-tests/0.1 (https://github.com/dtkg-demo/dtkg-demo; test suite)"

# A tiny graph in the slice's shape: both namespaces, dates, aliases, a language-tagged title,
# two items with the same label, an item whose label differs only in case from another's.
TINY_TTL = """\
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix schema: <http://schema.org/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix local: <https://dtkg-demo.invalid/entity/> .
@prefix ldt: <https://dtkg-demo.invalid/prop/direct/> .

wd:P31 a wikibase:Property ; rdfs:label "instance of"@en .
wd:P57 a wikibase:Property ; rdfs:label "director"@en .
wd:P19 a wikibase:Property ; rdfs:label "place of birth"@en .
wd:P577 a wikibase:Property ; rdfs:label "publication date"@en .
wd:P1476 a wikibase:Property ; rdfs:label "title"@en .
local:nickname a wikibase:Property ; rdfs:label "nickname"@en .

wd:Q5 rdfs:label "human"@en .
wd:Q515 rdfs:label "city"@en .
wd:Q11424 rdfs:label "film"@en ; schema:description "sequence of images"@en .

wd:Q1000 rdfs:label "Kismet"@en ;
    schema:description "1944 film by William Dieterle"@en ;
    skos:altLabel "Kismet (1944 film)"@en ;
    wdt:P31 wd:Q11424 ;
    wdt:P57 wd:Q2000 ;
    wdt:P577 "1944-08-22T00:00:00Z"^^xsd:dateTime ;
    wdt:P1476 "Kismet"@en , "Kismet (Film)"@de .
wd:Q1001 rdfs:label "Juarez"@en ;
    wdt:P31 wd:Q11424 ;
    wdt:P57 wd:Q2000 ;
    wdt:P577 "1939-04-25T00:00:00Z"^^xsd:dateTime .
wd:Q2000 rdfs:label "William Dieterle"@en ;
    schema:description "German-American film director"@en ;
    skos:altLabel "Wilhelm Dieterle"@en ;
    wdt:P31 wd:Q5 ;
    wdt:P19 local:Ludwigshafen1 ;
    ldt:nickname "Dieterle"@en .
local:Ludwigshafen1 rdfs:label "Ludwigshafen"@en ;
    schema:description "city in Rhineland-Palatinate (local id)"@en ;
    wdt:P31 wd:Q515 .
wd:Q90 rdfs:label "Paris"@en ; schema:description "capital of France"@en ; wdt:P31 wd:Q515 .
wd:Q167646 rdfs:label "Paris"@en ; schema:description "Trojan prince"@en ; wdt:P31 wd:Q5 .
wd:Q3000 rdfs:label "The Lord of the Rings"@en ; wdt:P31 wd:Q11424 .
wd:Q3001 rdfs:label "The Lord of the Rings: The Two Towers"@en ; wdt:P31 wd:Q11424 .
wd:Q4000 rdfs:label "it"@en ; schema:description "novel by Stephen King"@en ; wdt:P31 wd:Q5 .
wd:Q5000 rdfs:label "DreamWorks Pictures"@en ; wdt:P31 wd:Q5 .
wd:Q4001 rdfs:label "It"@en ; schema:description "pronoun"@en ; wdt:P31 wd:Q5 .
"""


# Labels that break naive escaping (quotes, backslashes, \u escapes, controls, braces, …).
HOSTILE = [
    "",
    '"',
    "\\",
    '\\"',
    "\\\\",
    "\\u0022",
    "\\U00000022",
    '" } ; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #',
    '"@en . ?item ?p ?o } UNION { ?item ?p ?o',
    "'single' \"double\" '''triple''' \"\"\"triple\"\"\"",
    "line\nbreak\r\nand\ttab",
    "{braces} and # hash <angle> | pipe ^ caret ` backtick",
    "Zürich – Ελληνικά – 東京 – 🎬 – \u200b zero width",
    "nul\x00char \x01\x1f\x7f\x85",
    "lone \ud800 surrogate",
    "ends with backslash \\",
    "\\n literally",
    "%22 url-encoded %0A",
    "ünïcödé\u0301 combining",
]


def random_hostile(rng: random.Random, n: int) -> list[str]:
    alphabet = list("\"\\'{}#<>@.;,:^$?*()[]|`~\n\r\t\x00\x0b\x7fuUnrt0123456789aZ é東🎬") + [
        "\\u",
        "\\U",
        '\\"',
        "\\\\",
        "\ud83c",
    ]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(n)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_ttl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kg") / "tiny.ttl"
    path.write_text(TINY_TTL, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_kg(tiny_ttl: Path) -> EmbeddedKG:
    return EmbeddedKG(tiny_ttl)


def slice_or_skip() -> Path:
    path = shipped_slice()
    if not path.exists():
        pytest.skip(f"the shipped slice {path} is not there yet (another issue writes it)")
    return path


# --------------------------------------------------------------------- oxigraph serve
class OxigraphServer:
    """``oxigraph load`` a file into a fresh directory, then ``oxigraph serve`` it."""

    def __init__(self, data: Path, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/query"
        location = workdir / f"db-{self.port}"
        self.log = open(workdir / f"oxigraph-{self.port}.log", "wb")  # noqa: SIM115 - closed in stop()
        subprocess.run(
            [OXIGRAPH, "load", "--location", str(location), "--file", str(data)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        self.process = subprocess.Popen(
            [
                OXIGRAPH,
                "serve-read-only",
                "--location",
                str(location),
                "--bind",
                f"127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self._wait_ready()

    def _wait_ready(self, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        probe = self.url + "?query=ASK%7B%7D"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.close()
                raise RuntimeError(f"oxigraph serve exited; see {self.log.name}")
            try:
                with urllib.request.urlopen(probe, timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("oxigraph serve did not answer within 30 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def serve(data: Path, workdir: Path) -> Iterator[str]:
    """Generator for fixtures: the endpoint URL of a served copy of ``data``."""
    server = OxigraphServer(data, workdir)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tiny_endpoint(tiny_ttl: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(tiny_ttl, tmp_path_factory.mktemp("oxigraph"))


# --------------------------------------------------------------------- fault server
@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0  # seconds between body chunks of 8 bytes (a reply that never ends)


EMPTY_RESULT = b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}'


def sparql_json(*rows: dict[str, str]) -> bytes:
    import json

    names = sorted({name for row in rows for name in row})
    bindings = [{k: {"type": "literal", "value": v} for k, v in row.items()} for row in rows]
    return json.dumps({"head": {"vars": names}, "results": {"bindings": bindings}}).encode()


class FaultServer:
    """An HTTP server that plays a script of replies (the last one repeats) and records the
    requests it got (method, path, headers)."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, object]] = []
        self.in_flight = self.max_in_flight = 0
        lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with lock:
                    server.requests.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": body,
                        }
                    )
                    index = min(len(server.requests), len(server.script)) - 1
                    reply = server.script[index] if server.script else Reply(body=EMPTY_RESULT)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/sparql-results+json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    if not reply.trickle:
                        self.wfile.write(reply.body)
                    for start in range(0, len(reply.body) if reply.trickle else 0, 8):
                        self.wfile.write(reply.body[start : start + 8])
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with lock:
                        server.in_flight -= 1

            do_GET = do_POST = _reply

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/sparql"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def play(self, *replies: Reply) -> None:
        self.script = list(replies)
        self.requests.clear()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def recorded_sleeps() -> tuple[list[float], Callable[[float], None]]:
    """A fake ``sleep`` for the SPARQL backend that records the waits it is asked for."""
    waits: list[float] = []
    return waits, waits.append
