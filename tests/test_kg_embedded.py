# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
"""The embedded backend and the shared query code of the base class, on a tiny graph."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pyoxigraph as ox
import pytest
from kg_fixtures import HOSTILE, TINY_TTL, random_hostile, slice_or_skip, tiny_kg, tiny_ttl

from dtkg.config import DTKGConfig
from dtkg.errors import ConfigError, KGError
from dtkg.kg import KnowledgeGraph, ids, open_kg
from dtkg.kg.embedded import EmbeddedKG, load_store
from dtkg.kg.sparql_endpoint import SparqlKG
from dtkg.trace import Triple


def found(kg: KnowledgeGraph, text: str, limit: int = 5) -> list[tuple[str, float, str]]:
    return [(c.qid, c.score, c.match) for c in kg.search_entities(text, limit)]


# ------------------------------------------------------------------------- search
def test_exact_label_scores_one_and_carries_label_and_description(tiny_kg: EmbeddedKG) -> None:
    [hit] = tiny_kg.search_entities("William Dieterle")
    assert (hit.qid, hit.label, hit.score, hit.match) == ("Q2000", "William Dieterle", 1.0, "exact")
    assert hit.description == "German-American film director"


def test_exact_search_ignores_case_and_spacing(tiny_kg: EmbeddedKG) -> None:
    assert found(tiny_kg, "william dieterle") == [("Q2000", 0.95, "exact")]
    assert found(tiny_kg, "  WILLIAM   dieterle ") == [("Q2000", 0.95, "exact")]
    assert found(tiny_kg, "the lord of the rings") == [("Q3000", 0.95, "exact")]


def test_the_identical_spelling_ranks_above_a_case_variant(tiny_kg: EmbeddedKG) -> None:
    assert found(tiny_kg, "it") == [("Q4000", 1.0, "exact"), ("Q4001", 0.95, "exact")]
    assert found(tiny_kg, "It") == [("Q4001", 1.0, "exact"), ("Q4000", 0.95, "exact")]


def test_equal_labels_tie_break_by_lower_id(tiny_kg: EmbeddedKG) -> None:
    assert [c.qid for c in tiny_kg.search_entities("Paris")] == ["Q90", "Q167646"]
    assert [c.qid for c in tiny_kg.search_entities("Paris", limit=1)] == ["Q90"]


def test_aliases_match_below_labels(tiny_kg: EmbeddedKG) -> None:
    [hit] = tiny_kg.search_entities("Wilhelm Dieterle")
    assert (hit.qid, hit.label, hit.score, hit.match, hit.matched) == (
        "Q2000",
        "William Dieterle",
        0.9,
        "alias",
        "Wilhelm Dieterle",
    )
    assert found(tiny_kg, "kismet (1944 FILM)") == [("Q1000", 0.85, "alias")]


def test_fuzzy_only_when_nothing_matches_exactly(tiny_kg: EmbeddedKG) -> None:
    fuzzy = tiny_kg.search_entities("lord of the rings")
    assert [c.qid for c in fuzzy] == ["Q3000", "Q3001"]
    assert all(c.match == "fuzzy" and 0 < c.score < 0.8 for c in fuzzy)
    assert fuzzy[0].score > fuzzy[1].score  # the closer label first
    # "Kismet" matches exactly, so the longer alias "Kismet (1944 film)" is not offered.
    assert found(tiny_kg, "Kismet") == [("Q1000", 1.0, "exact")]


def test_exact_only_search_skips_the_fuzzy_scan(tiny_kg: EmbeddedKG) -> None:
    kg = tiny_kg.with_stats()
    assert kg.search_entities("lord of the rings", fuzzy=False) == []
    assert kg.stats.queries == 1  # the exact/alias query only
    assert [c.qid for c in kg.search_entities("Kismet", fuzzy=False)] == ["Q1000"]


def test_search_finds_local_ids_and_never_properties(tiny_kg: EmbeddedKG) -> None:
    assert found(tiny_kg, "ludwigshafen") == [("Ludwigshafen1", 0.95, "exact")]
    assert tiny_kg.search_entities("director") == []  # P57's label
    assert tiny_kg.search_entities("nickname") == []  # a local property's label


def test_empty_or_unknown_text_finds_nothing(tiny_kg: EmbeddedKG) -> None:
    assert tiny_kg.search_entities("   ") == []
    assert tiny_kg.search_entities("Kismet", limit=0) == []
    assert tiny_kg.search_entities("Zanzibar") == []


# ------------------------------------------------------------------------- relations
def test_head_relations_fill_ids_and_labels(tiny_kg: EmbeddedKG) -> None:
    assert tiny_kg.head_relations("Q1000") == [
        Triple("Kismet", "Q1000", "instance of", "P31", "film", "Q11424"),
        Triple("Kismet", "Q1000", "director", "P57", "William Dieterle", "Q2000"),
        Triple("Kismet", "Q1000", "publication date", "P577", "1944-08-22", ""),
        Triple("Kismet", "Q1000", "title", "P1476", "Kismet", ""),  # the @de title is dropped
    ]


def test_head_relations_cross_namespaces(tiny_kg: EmbeddedKG) -> None:
    assert tiny_kg.head_relations("Q2000") == [
        Triple("William Dieterle", "Q2000", "place of birth", "P19", "Ludwigshafen", "Ludwigshafen1"),
        Triple("William Dieterle", "Q2000", "instance of", "P31", "human", "Q5"),
        Triple("William Dieterle", "Q2000", "nickname", "nickname", "Dieterle", ""),
    ]  # fmt: skip
    assert tiny_kg.head_relations("Ludwigshafen1") == [
        Triple("Ludwigshafen", "Ludwigshafen1", "instance of", "P31", "city", "Q515")
    ]


def test_tail_relations_have_the_entity_as_object(tiny_kg: EmbeddedKG) -> None:
    assert tiny_kg.tail_relations("Q2000") == [
        Triple("Juarez", "Q1001", "director", "P57", "William Dieterle", "Q2000"),
        Triple("Kismet", "Q1000", "director", "P57", "William Dieterle", "Q2000"),
    ]
    assert tiny_kg.tail_relations("Q1000") == []
    assert tiny_kg.head_relations("Q999999") == []


def test_many_variants_take_one_query_and_equal_the_singles(tiny_kg: EmbeddedKG) -> None:
    qids = ["Q1000", "Q2000", "Ludwigshafen1", "Q5", "Q999999"]
    kg = tiny_kg.with_stats()
    heads, tails = kg.head_relations_many(qids), kg.tail_relations_many(qids)
    assert kg.stats.queries == 2
    assert list(heads) == qids and list(tails) == qids
    for qid in qids:
        assert heads[qid] == tiny_kg.head_relations(qid)
        assert tails[qid] == tiny_kg.tail_relations(qid)


def test_result_limit_caps_each_entity(tiny_ttl: Path) -> None:
    # Each entity gets its own LIMIT inside the one query: a big entity cannot starve others.
    kg = EmbeddedKG(tiny_ttl, result_limit=2).with_stats()
    heads = kg.head_relations_many(["Q1000", "Q2000"])
    assert [len(v) for v in heads.values()] == [2, 2] and kg.stats.queries == 1
    full = EmbeddedKG(tiny_ttl)
    assert all(t in full.head_relations(q) for q, ts in heads.items() for t in ts)


def test_labels(tiny_kg: EmbeddedKG) -> None:
    assert tiny_kg.entity_label("Q2000") == "William Dieterle"
    assert tiny_kg.entity_label("Ludwigshafen1") == "Ludwigshafen"
    assert tiny_kg.entity_label("Q999999") is None
    assert tiny_kg.property_label("P57") == "director"
    assert tiny_kg.property_label("nickname") == "nickname"
    assert tiny_kg.property_label("P999") is None
    info = tiny_kg.entity_info_many(["Q90", "Q167646", "Q999999"])
    assert {k: (v.label, v.description) for k, v in info.items()} == {
        "Q90": ("Paris", "capital of France"),
        "Q167646": ("Paris", "Trojan prince"),
    }


def test_malformed_ids_fail_before_any_query(tiny_kg: EmbeddedKG) -> None:
    kg = tiny_kg.with_stats()
    for call in (kg.head_relations, kg.tail_relations, kg.entity_label, kg.property_label):
        with pytest.raises(KGError, match="not a valid"):
            call("Q1> } ; DROP ALL")
    with pytest.raises(KGError):
        kg.head_relations_many(["Q1", "wd:Q2"])
    assert kg.stats.queries == 0


# ------------------------------------------------------------------------- stats, threads
def test_with_stats_counts_per_copy_and_shares_the_store(tiny_kg: EmbeddedKG) -> None:
    a, b = tiny_kg.with_stats(), tiny_kg.with_stats()
    a.head_relations("Q1000")
    a.search_entities("Kismet")
    b.tail_relations("Q2000")
    assert (a.stats.queries, b.stats.queries) == (2, 1)
    assert a.store is b.store is tiny_kg.store
    assert a.stats.cache_hits == a.stats.cache_misses == 0  # no cache in process


def test_concurrent_questions_get_consistent_answers(tiny_kg: EmbeddedKG) -> None:
    expected = tiny_kg.head_relations("Q2000"), found(tiny_kg, "paris")
    results, errors = [], []

    def work() -> None:
        kg = tiny_kg.with_stats()
        try:
            for _ in range(20):
                results.append((kg.head_relations("Q2000"), found(kg, "paris")))
            assert kg.stats.queries == 40
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 120 and all(r == expected for r in results)


# ------------------------------------------------------------------------- hostile labels
def test_hostile_labels_are_found_exactly_and_case_insensitively() -> None:
    texts = [t for t in HOSTILE + random_hostile(random.Random(11), 150) if t.strip()]
    texts = list(dict.fromkeys(t for t in texts if t.encode("utf-8", "replace").decode() == t))
    store = ox.Store()
    label = ox.NamedNode(ids.RDFS_LABEL)
    for n, text in enumerate(texts, 1):
        store.add(ox.Quad(ox.NamedNode(f"{ids.WD}Q{n}"), label, ox.Literal(text, language="en")))
    from dtkg.kg.embedded import add_search_keys

    add_search_keys(store)
    kg = EmbeddedKG(store=store)
    for n, text in enumerate(texts, 1):
        query = " ".join(text.split())
        hits = kg.search_entities(query, limit=50)
        same = {
            f"Q{m}" for m, t in enumerate(texts, 1) if ids.search_key(t) == ids.search_key(text)
        }
        assert {c.qid for c in hits if c.match == "exact"} == same, repr(text)
        assert f"Q{n}" in {c.qid for c in kg.search_entities(query.upper(), limit=50)}


# ------------------------------------------------------------------------- loading
def test_a_file_is_loaded_once_per_process(tiny_ttl: Path, tmp_path: Path) -> None:
    assert EmbeddedKG(tiny_ttl).store is EmbeddedKG(tiny_ttl).store
    copy = tmp_path / "copy.ttl"
    copy.write_text(TINY_TTL)
    first = load_store(copy)
    copy.write_text(TINY_TTL + 'wd:Q5 <http://schema.org/description> "a person"@en .\n')
    assert load_store(copy) is not first  # changed on disk: loaded again
    assert EmbeddedKG(copy).entity_info_many(["Q5"])["Q5"].description == "a person"


def test_loading_is_thread_safe(tmp_path: Path) -> None:
    path = tmp_path / "t.ttl"
    path.write_text(TINY_TTL)
    stores = []
    threads = [threading.Thread(target=lambda: stores.append(load_store(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores) == 8 and all(s is stores[0] for s in stores)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.ttl", None, "cannot be read"),
        ("broken.ttl", "wd:Q1 rdfs:label 'x' .", "not valid TTL"),
        ("kb.csv", "a,b,c", "unknown extension"),
        ("kb.txt", "a|directed_by\n", "is not a 'head|relation|tail' line"),
    ],
)
def test_bad_files_give_a_clear_kg_error(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(KGError, match=message):
        EmbeddedKG(path)


# ------------------------------------------------------------------------- registry
def test_open_kg_by_name(tiny_ttl: Path, tmp_path: Path) -> None:
    kg = open_kg(DTKGConfig(kg_backend="embedded", kg_file=str(tiny_ttl)))
    assert isinstance(kg, EmbeddedKG) and kg.entity_label("Q2000") == "William Dieterle"
    kb = tmp_path / "kb.txt"
    kb.write_text("Kismet|directed_by|William Dieterle\n")
    kg = open_kg(DTKGConfig(kg_backend="embedded", kg_file=str(kb)))
    assert [t.arrow() for t in kg.head_relations(kg.search_entities("kismet")[0].qid)] == [
        "Kismet → directed by → William Dieterle"
    ]
    wd = open_kg(DTKGConfig(kg_backend="wikidata", kg_cache_dir=""))
    assert isinstance(wd, SparqlKG) and wd.source == "https://query.wikidata.org/sparql"
    assert wd.fuzzy_route == "mwapi"
    url = open_kg(DTKGConfig(kg_backend="http://127.0.0.1:9/query", kg_cache_dir=""))
    assert isinstance(url, SparqlKG) and url.source == "http://127.0.0.1:9/query"
    assert url.fuzzy_route == "sparql"
    with pytest.raises(ConfigError, match="Unknown knowledge graph"):
        open_kg(DTKGConfig(kg_backend="neo4j"))


def test_open_kg_default_is_the_shipped_slice() -> None:
    path = slice_or_skip()
    kg = open_kg(DTKGConfig(kg_backend="embedded"))
    assert isinstance(kg, EmbeddedKG) and kg.source == str(path)


def test_relation_vocabulary_only_for_small_graphs(tiny_kg: EmbeddedKG) -> None:
    labels = tiny_kg.relation_labels()
    assert labels and "director" in labels and labels == sorted(labels)
    assert tiny_kg.relation_labels(limit=1) is None  # too many to list: unknown
    kg = tiny_kg.with_stats()
    kg.relation_labels()
    assert kg.stats.queries == 0  # asked once per store, shared by the per-question copies
