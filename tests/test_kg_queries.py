"""Escaping of user text and validation of ids: what stands between a label and the query."""

from __future__ import annotations

import random
import re

import pyoxigraph as ox
import pytest
from kg_fixtures import HOSTILE, random_hostile

from dtkg.errors import KGError
from dtkg.kg import ids, queries


def value_of(query: str) -> str:
    store = ox.Store()
    [solution] = list(store.query(query))
    return solution["x"].value


def expected(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


@pytest.mark.parametrize("text", HOSTILE)
def test_a_literal_denotes_exactly_its_text(text: str) -> None:
    assert value_of(f"SELECT ?x WHERE {{ BIND({queries.literal(text, None)} AS ?x) }}") == expected(
        text
    )


def test_random_hostile_strings_round_trip_as_literals() -> None:
    rng = random.Random(20261129)
    for text in random_hostile(rng, 600):
        query = f"SELECT ?x WHERE {{ BIND({queries.literal(text, None)} AS ?x) }}"
        assert value_of(query) == expected(text), repr(text)


def naive_unicode_preprocess(query: str) -> str:
    """SPARQL 1.1 §19.2 lets a server expand \\u escapes before tokenising, everywhere."""
    return re.sub(
        r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})",
        lambda m: chr(int(m[1] or m[2], 16)),
        query,
    )


def test_literals_survive_servers_that_expand_unicode_escapes_first() -> None:
    for text in HOSTILE + random_hostile(random.Random(7), 300):
        query = f"SELECT ?x WHERE {{ BIND({queries.literal(text, None)} AS ?x) }}"
        assert value_of(naive_unicode_preprocess(query)) == expected(text), repr(text)


def test_without_the_u_rule_a_naive_server_would_see_a_quote() -> None:
    # Why escape_string writes "u" after a backslash as \u0075: the plain ECHAR escaping of
    # the text \u0022 becomes a quote under naive expansion.
    plain = '"' + "\\u0022".replace("\\", "\\\\") + '"'
    assert naive_unicode_preprocess(plain) == '"\\""'
    assert "\\u0075" in queries.escape_string("\\u0022")


@pytest.mark.parametrize("text", HOSTILE)
def test_every_query_with_hostile_text_parses_and_finds_nothing(text: str) -> None:
    store = ox.Store()
    for query in (
        queries.label_search(["a", text], ids.search_key(text), 10),
        queries.fuzzy_search(text, 10),
    ):
        assert list(store.query(query)) == []
    # mwapi is WDQS-only: it must at least be well-formed SPARQL with the text inside.
    ox.Store().query(queries.mwapi_search(text, 5).replace("SERVICE wikibase:mwapi", "OPTIONAL"))


def test_a_hostile_label_matches_only_itself() -> None:
    store = ox.Store()
    label = ox.NamedNode(ids.RDFS_LABEL)
    storable = [t for t in HOSTILE[1:] if expected(t) == t]  # a lone surrogate cannot be
    for n, text in enumerate(storable, 1):
        store.add(ox.Quad(ox.NamedNode(f"{ids.WD}Q{n}"), label, ox.Literal(text, language="en")))
    for n, text in enumerate(storable, 1):
        rows = list(store.query(queries.label_search([text], "", 10)))
        assert [r["item"].value for r in rows] == [f"{ids.WD}Q{n}"], repr(text)


# ----------------------------------------------------------------------------- ids
@pytest.mark.parametrize("good", ["Q42", "P31", "Q1", "M123", "directed_by", "Ludwigshafen1"])
def test_well_formed_ids_pass(good: str) -> None:
    assert ids.check_id(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", "Q42 ", " Q42", "Q42>", "Q42}", "wd:Q42", "Q 1", "Q42\n", "1Q", "_x", "Q4.2", "é1",
     "x" * 200, "Q42> } ; DROP ALL", 42, None, "http://www.wikidata.org/entity/Q42"],
)  # fmt: skip
def test_malformed_ids_are_refused_with_a_clear_message(bad: object) -> None:
    with pytest.raises(KGError, match="not a valid entity id"):
        ids.check_id(bad)
    with pytest.raises(KGError):
        queries.head_relations([bad], 10)  # type: ignore[list-item]


def test_wikidata_shaped_ids_are_looked_up_in_both_namespaces() -> None:
    assert ids.entity_iris("Q42") == [ids.WD + "Q42", ids.LOCAL + "Q42"]
    assert ids.entity_iris("M7") == [ids.LOCAL + "M7"]
    assert ids.direct_property_iris("P57") == [ids.WDT + "P57", ids.LOCAL_DIRECT + "P57"]
    assert ids.direct_property_iris("directed_by") == [ids.LOCAL_DIRECT + "directed_by"]


def test_iris_map_back_to_ids_and_foreign_iris_do_not() -> None:
    assert ids.entity_id(ids.WD + "Q42") == "Q42"
    assert ids.entity_id(ids.LOCAL + "Ludwigshafen1") == "Ludwigshafen1"
    assert ids.entity_id(ids.WD + "L123") is None  # lexemes are not entities here
    assert ids.entity_id("http://example.org/Q42") is None
    assert ids.property_id(ids.WDT + "P57") == "P57"
    assert ids.property_id(ids.LOCAL_DIRECT + "directed_by") == "directed_by"
    assert ids.property_id(ids.WD + "P57") is None


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("1944-08-22T00:00:00Z", "1944-08-22"),
        ("-0500-01-01T00:00:00Z", "-0500-01-01"),
        ("1944-08-22T13:05:00Z", "1944-08-22T13:05:00Z"),
        ("+1944", "+1944"),
        ("Kismet", "Kismet"),
    ],
)
def test_midnight_dates_are_shown_as_days(raw: str, shown: str) -> None:
    assert ids.format_value(raw) == shown


def test_search_key_ignores_case_width_and_spacing() -> None:
    assert ids.search_key("  Ginger   ROGERS ") == "ginger rogers"
    assert ids.search_key("Ｇｉｎｇｅｒ") == "ginger"  # NFKC folds full-width letters
    assert ids.search_key("Straße") == ids.search_key("STRASSE")
