"""MetaQA ``head|relation|tail`` KBs load into the Wikidata store shape and answer fast."""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import shared_path

from dtkg.errors import KGError
from dtkg.kg.embedded import EmbeddedKG
from dtkg.kg.metaqa import load_metaqa, relation_label
from dtkg.trace import Triple

SMALL_KB = """\
Kismet|directed_by|William Dieterle
Kismet|starred_actors|Ronald Colman
Kismet|starred_actors|Marlene Dietrich
Kismet|release_year|1944

Kitty Foyle|has_tags|ginger rogers
Kitty Foyle|starred_actors|Ginger Rogers
Top Hat|starred_actors|Ginger Rogers
Top Hat|in_language|English
"""


@pytest.fixture
def small_kb(tmp_path: Path) -> EmbeddedKG:
    path = tmp_path / "kb.txt"
    path.write_text(SMALL_KB)
    return EmbeddedKG(path)


def test_relation_labels_are_readable() -> None:
    assert relation_label("directed_by") == "directed by"
    assert relation_label("has_imdb_rating") == "has imdb rating"


def test_entities_get_local_ids_and_labels(small_kb: EmbeddedKG) -> None:
    [kismet] = small_kb.search_entities("Kismet")
    assert re.fullmatch(r"M\d+", kismet.qid) and kismet.label == "Kismet"
    assert small_kb.head_relations(kismet.qid) == [
        Triple("Kismet", kismet.qid, "directed by", "directed_by", "William Dieterle",
               small_kb.search_entities("William Dieterle")[0].qid),
        Triple("Kismet", kismet.qid, "release year", "release_year", "1944",
               small_kb.search_entities("1944")[0].qid),
        Triple("Kismet", kismet.qid, "starred actors", "starred_actors", "Marlene Dietrich",
               small_kb.search_entities("Marlene Dietrich")[0].qid),
        Triple("Kismet", kismet.qid, "starred actors", "starred_actors", "Ronald Colman",
               small_kb.search_entities("Ronald Colman")[0].qid),
    ]  # fmt: skip
    assert small_kb.property_label("directed_by") == "directed by"


def test_lowercase_question_entities_find_the_kb_spelling(small_kb: EmbeddedKG) -> None:
    hits = small_kb.search_entities("ginger rogers")
    assert [(c.label, c.score) for c in hits] == [("ginger rogers", 1.0), ("Ginger Rogers", 0.95)]
    actor = hits[1].qid
    films = small_kb.tail_relations(actor)
    assert sorted(t.subject for t in films) == ["Kitty Foyle", "Top Hat"]
    assert [c.label for c in small_kb.search_entities("marlene dietrich")] == ["Marlene Dietrich"]


def test_a_layer_of_movies_expands_in_one_query(small_kb: EmbeddedKG) -> None:
    actor = small_kb.search_entities("Ginger Rogers")[0].qid
    movies = [t.subject_id for t in small_kb.tail_relations(actor)]
    kg = small_kb.with_stats()
    layer = kg.head_relations_many(movies)
    assert kg.stats.queries == 1
    assert {t.object for ts in layer.values() for t in ts} == {
        "ginger rogers",
        "Ginger Rogers",
        "English",
    }


def test_ids_are_stable_for_a_file(tmp_path: Path) -> None:
    path = tmp_path / "kb.txt"
    path.write_text(SMALL_KB)
    one, two = ox.Store(), ox.Store()
    counts = load_metaqa(path, one)
    assert load_metaqa(path, two) == counts == {"entities": 10, "relations": 5, "triples": 8}
    assert sorted(map(str, one)) == sorted(map(str, two))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("Kismet|directed_by\n", ":2 is not a 'head|relation|tail' line"),
        ("a|b|c|d\n", ":2 is not a 'head|relation|tail' line"),
        ("Kismet||x\n", ":2 is not a 'head|relation|tail' line"),
        ("Kismet|directed by|x\n", ":2: relation 'directed by' is not a usable id"),
    ],
)
def test_malformed_lines_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "kb.txt"
    path.write_text("Top Hat|in_language|English\n" + content)
    with pytest.raises(KGError, match=re.escape(message)):
        EmbeddedKG(path)


@pytest.mark.slow
def test_the_real_metaqa_kb_loads_and_searches_in_milliseconds() -> None:
    kb = shared_path("data", "metaqa", "kb.txt")
    questions = shared_path("data", "metaqa", "1-hop", "qa_dev.txt")
    kg = EmbeddedKG(kb)
    mentions = [
        re.search(r"\[(.+?)\]", line)[1]  # type: ignore[index]
        for line in questions.read_text(encoding="utf-8").splitlines()[:300]
    ]
    timings, found = [], 0
    for mention in mentions:
        started = time.perf_counter()
        hits = kg.search_entities(mention.lower())
        timings.append(time.perf_counter() - started)
        found += bool(hits) and hits[0].label.lower() == mention.lower()
    assert found >= 0.98 * len(mentions)  # the partial KB lacks a few topic entities
    assert statistics.median(timings) < 0.02  # measured ~0.7 ms; generous for slow CI
    ginger = kg.search_entities("Ginger Rogers")[0]
    assert ginger.label == "Ginger Rogers" and ginger.score == 1.0
    assert any(t.relation == "starred actors" for t in kg.tail_relations(ginger.qid))
