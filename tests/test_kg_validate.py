"""The slice validator: each rule catches its problem; the shipped slice passes."""

# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
from __future__ import annotations

from pathlib import Path

import pytest
from kg_fixtures import TINY_TTL, slice_or_skip, tiny_ttl

from dtkg.kg.embedded import EmbeddedKG
from dtkg.kg.validate import main, summarize, validate

HEADER = """\
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wikibase: <http://wikiba.se/ontology#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix local: <https://dtkg-demo.invalid/entity/> .
wd:P31 a wikibase:Property ; rdfs:label "instance of"@en .
wd:P57 a wikibase:Property ; rdfs:label "director"@en .
wd:Q5 rdfs:label "human"@en .
wd:Q1 rdfs:label "Kismet"@en ; wdt:P31 wd:Q5 .
"""


def problems_of(tmp_path: Path, extra: str, suffix: str = ".ttl") -> list[str]:
    path = tmp_path / f"slice{suffix}"
    path.write_text(HEADER + extra)
    return validate(path)


def test_a_clean_graph_has_no_problems(tmp_path: Path, tiny_ttl: Path) -> None:
    assert problems_of(tmp_path, "") == []
    assert validate(tiny_ttl) == []


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("wd:Q1 wdt:P57 wd:Q2 .", "entity Q2 (http://www.wikidata.org/entity/Q2) has no English"),
        ('wd:Q2 rdfs:label "Zwei"@de ; wdt:P31 wd:Q5 .', "entity Q2 (http"),
        ('wd:Q1 rdfs:label "Kismet (film)"@en .', "entity Q1 has 2 English labels"),
        ("wd:Q1 wdt:P58 wd:Q5 .", "property P58 has no English label"),
        ('wd:P58 rdfs:label "screenwriter"@en . wd:Q1 wdt:P58 wd:Q5 .', "P58 is not declared"),
        ('wd:Q2 rdfs:label "x"@en ; wdt:P57 wd:Q1 .', "item Q2 has statements but no wdt:P31"),
        ("wd:Q1 wdt:P31 wd:Q5 .", "duplicate statement (2×)"),
        ('wd:Qx rdfs:label "bad"@en .', "subject <http://www.wikidata.org/entity/Qx> is not"),
        ("wd:Q1 wdt:P57 wd:Q01 .", "malformed entity IRI http://www.wikidata.org/entity/Q01"),
        ('wd:Q1 wdt:P57 "1944-8-1T00:00:00Z"^^xsd:dateTime .', "malformed date '1944-8-1"),
        ('wd:Q1 <http://example.org/p> "x" .', "unexpected predicate <http://example.org/p>"),
        ("wd:Q1 a wd:Q5 .", "Q1 has rdf:type"),
        ('local:Q1 rdfs:label "Kismet again"@en .', "id Q1 exists in both namespaces"),
        ("wd:Q1 wdt:P57 [] .", "blank node object"),
    ],
)
def test_each_rule_reports_its_problem(tmp_path: Path, extra: str, problem: str) -> None:
    problems = problems_of(tmp_path, extra)
    assert any(problem in p for p in problems), problems


def test_syntax_errors_and_unknown_formats_are_problems(tmp_path: Path) -> None:
    assert "cannot be parsed" in problems_of(tmp_path, "wd:Q1 wdt:P57 .")[0]
    assert "unknown extension" in problems_of(tmp_path, "", suffix=".rdf")[0]


def test_many_problems_of_a_kind_are_summarised(tmp_path: Path) -> None:
    extra = "\n".join(f"wd:Q1 wdt:P57 wd:Q{n} ." for n in range(100, 160))
    problems = problems_of(tmp_path, extra)
    assert len(problems) == 26 and problems[-1] == "… and 35 more like the above"


def test_the_cli_prints_counts_and_exits_nonzero_on_problems(
    tmp_path: Path, tiny_ttl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tiny_ttl)]) == 0
    assert "OK" in capsys.readouterr().out
    bad = tmp_path / "bad.ttl"
    bad.write_text(HEADER + "wd:Q1 wdt:P57 wd:Q2 .")
    assert main([str(bad)]) == 1
    assert "has no English label" in capsys.readouterr().out
    assert main([str(tmp_path / "absent.ttl")]) == 2


def test_the_shipped_slice_is_valid_and_loads() -> None:
    path = slice_or_skip()
    summary = summarize(path)
    assert summary.problems == []
    assert summary.statements > 0 and summary.items > 0
    kg = EmbeddedKG(path)
    item_rows = kg.select(
        "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s <http://www.wikidata.org/prop/direct/P31> ?o }"
    )
    assert int(item_rows[0]["n"]) == summary.items
