# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
"""The SPARQL backend against a real ``oxigraph serve``: same answers as the embedded store."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
from kg_fixtures import (
    HOSTILE,
    USER_AGENT,
    FaultServer,
    Reply,
    fault_server,
    random_hostile,
    serve,
    slice_or_skip,
    sparql_json,
    tiny_endpoint,
    tiny_kg,
    tiny_ttl,
)

from dtkg.kg import KnowledgeGraph, ids
from dtkg.kg.embedded import EmbeddedKG
from dtkg.kg.sparql_endpoint import SparqlKG

SEARCHES = [
    "Kismet", "kismet", "KISMET", "William Dieterle", "william dieterle", "Wilhelm Dieterle",
    "wilhelm dieterle", "kismet (1944 film)", "Paris", "paris", "it", "It", "The Lord of the Rings",
    "the lord of the rings", "lord of the rings", "Dieterle", "ludwigshafen", "director", "Zanzibar",
    "rings", "", "dreamworks pictures",
]  # fmt: skip
ENTITIES = ["Q1000", "Q1001", "Q2000", "Ludwigshafen1", "Q90", "Q5", "Q11424", "Q999999"]


def remote(url: str, **kwargs: object) -> SparqlKG:
    return SparqlKG(url, user_agent=USER_AGENT, cache_dir="", **kwargs)  # type: ignore[arg-type]


def same_answers(a: KnowledgeGraph, b: KnowledgeGraph, texts: list[str], qids: list[str]) -> None:
    for text in texts:
        assert a.search_entities(text, 10) == b.search_entities(text, 10), text
    assert a.head_relations_many(qids) == b.head_relations_many(qids)
    assert a.tail_relations_many(qids) == b.tail_relations_many(qids)
    for qid in qids:
        assert a.head_relations(qid) == b.head_relations(qid), qid
        assert a.tail_relations(qid) == b.tail_relations(qid), qid
        assert a.entity_label(qid) == b.entity_label(qid), qid
    assert a.entity_info_many(qids) == b.entity_info_many(qids)


def test_served_tiny_graph_answers_like_the_embedded_store(
    tiny_endpoint: str, tiny_kg: EmbeddedKG
) -> None:
    kg = remote(tiny_endpoint)
    same_answers(kg, tiny_kg, SEARCHES, ENTITIES)
    for pid in ("P57", "P31", "nickname", "P999"):
        assert kg.property_label(pid) == tiny_kg.property_label(pid)
    assert kg.head_relations("Q1000")[2].object == "1944-08-22"  # a real non-empty answer


def test_a_served_graph_needs_no_search_keys_for_case_insensitive_search(
    tiny_endpoint: str,
) -> None:
    # oxigraph serve holds the raw file (no dtkg:labelKey): the case variants and the
    # portable fuzzy route still give exact matches their exact rank.
    kg = remote(tiny_endpoint).with_stats()
    [hit] = kg.search_entities("THE LORD OF THE RINGS")  # a case variant finds it
    assert (hit.qid, hit.match, hit.score, kg.stats.queries) == ("Q3000", "exact", 0.95, 1)
    [hit] = kg.search_entities("dreamworks pictures")  # no variant spells it "DreamWorks"
    assert (hit.qid, hit.match, hit.score, kg.stats.queries) == ("Q5000", "exact", 0.95, 3)


@pytest.fixture(scope="module")
def hostile_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    texts = [t for t in HOSTILE + random_hostile(random.Random(5), 80) if t.strip()]
    texts = list(dict.fromkeys(t for t in texts if t.encode("utf-8", "replace").decode() == t))
    label, p31 = ox.NamedNode(ids.RDFS_LABEL), ox.NamedNode(ids.WDT + "P31")
    triples = []
    for n, text in enumerate(texts, 1):
        node = ox.NamedNode(f"{ids.WD}Q{n}")
        triples.append(ox.Triple(node, label, ox.Literal(text, language="en")))
        triples.append(ox.Triple(node, p31, ox.Literal(text)))  # a hostile literal value too
    path = tmp_path_factory.mktemp("hostile") / "hostile.ttl"
    ox.serialize(triples, str(path), ox.RdfFormat.TURTLE)
    return path, texts


@pytest.fixture(scope="module")
def hostile_endpoint(
    hostile_graph: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from serve(hostile_graph[0], tmp_path_factory.mktemp("oxigraph-hostile"))


def test_hostile_labels_over_http_match_exactly_and_like_embedded(
    hostile_graph: tuple[Path, list[str]], hostile_endpoint: str
) -> None:
    path, texts = hostile_graph
    served, embedded = remote(hostile_endpoint), EmbeddedKG(path)
    for n, text in enumerate(texts, 1):
        hits, local_hits = served.search_entities(text, 50), embedded.search_entities(text, 50)
        assert f"Q{n}" in {c.qid for c in hits if c.match == "exact"}, repr(text)
        if sum(ids.search_key(t) == ids.search_key(text) for t in texts) == 1:
            assert hits == local_hits, repr(text)
        else:  # e.g. "4\r" and " \r4": the stored keys also find spellings no variant covers
            assert {c.qid for c in hits} <= {c.qid for c in local_hits}, repr(text)
        [triple] = served.head_relations(f"Q{n}")
        assert triple.object == ids.format_value(text) and triple.subject == text


def test_requests_carry_the_user_agent_and_long_queries_are_posted(
    fault_server: FaultServer,
) -> None:
    kg = remote(fault_server.url)
    fault_server.play()  # every reply: an empty, valid result
    kg.head_relations("Q1")
    kg.head_relations_many([f"Q{n}" for n in range(1, 60)])
    short, long = fault_server.requests
    assert short["headers"]["User-Agent"] == USER_AGENT
    assert short["method"] == "GET" and "query=" in str(short["path"])
    assert long["method"] == "POST" and b"query=" in long["body"]  # type: ignore[operator]


def test_rows_from_the_endpoint_become_triples(fault_server: FaultServer) -> None:
    row = {
        "e": ids.WD + "Q1", "eLabel": "Kismet", "p": ids.WDT + "P577", "pLabel": "publication date",
        "x": "1944-08-22T00:00:00Z", "xIri": "false",
    }  # fmt: skip
    fault_server.play(Reply(body=sparql_json(row)))
    [triple] = remote(fault_server.url).head_relations("Q1")
    assert triple.arrow() == "Kismet → publication date → 1944-08-22"
    assert triple.object_id == ""


# ------------------------------------------------------------------------- the shipped slice
@pytest.fixture(scope="module")
def slice_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(slice_or_skip(), tmp_path_factory.mktemp("oxigraph-slice"))


@pytest.mark.slow
def test_served_slice_answers_like_the_embedded_slice(slice_endpoint: str) -> None:
    embedded = EmbeddedKG(slice_or_skip())
    rows = embedded.select(
        "SELECT ?e ?label WHERE { ?e <http://www.w3.org/2000/01/rdf-schema#label> ?label . "
        "FILTER(LANG(?label) = 'en') } ORDER BY ?e"
    )
    sample = random.Random(3).sample(rows, min(40, len(rows)))
    qids = [q for q in (ids.entity_id(r["e"]) for r in sample) if q and not ids.is_pid(q)]
    texts = [r["label"] for r in sample] + [r["label"].lower() for r in sample[:15]]
    same_answers(remote(slice_endpoint), embedded, texts, qids)
