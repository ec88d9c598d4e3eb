"""Snapshots: record what questions read from a served KG, reload it embedded, compare."""

# ruff: noqa: F401, F811 (pytest fixtures imported from kg_fixtures)
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kg_fixtures import USER_AGENT, serve, slice_or_skip, tiny_endpoint, tiny_ttl

from dtkg.errors import InputError, KGError
from dtkg.kg import KnowledgeGraph
from dtkg.kg.embedded import EmbeddedKG
from dtkg.kg.snapshot import RecordingKG, read_questions, snapshot
from dtkg.kg.sparql_endpoint import SparqlKG
from dtkg.kg.validate import validate

QUESTIONS = [
    "who directed [Kismet]?",
    "where was [wilhelm dieterle] born?",
    "what is [Ludwigshafen]?",
    "what about [Zanzibar]?",  # not in the graph: this question fails
]


class Expanded:
    """A fake ``run_question``: link the [mention], expand head and tail relations, then
    expand the neighbours' head relations (one chained layer). Remembers what it expanded."""

    def __init__(self) -> None:
        self.entities: list[str] = []
        self.neighbours: list[str] = []

    def __call__(self, question: str, kg: KnowledgeGraph) -> None:
        mention = re.search(r"\[(.+?)\]", question)[1]  # type: ignore[index]
        hits = kg.search_entities(mention, 3)
        if not hits:
            raise KGError(f"no entity for {mention!r}")
        qid = hits[0].qid
        heads, tails = kg.head_relations(qid), kg.tail_relations(qid)
        layer = sorted({t.object_id for t in heads if t.object_id} - {"Q5", "Q515", "Q11424"})
        kg.head_relations_many(layer)
        kg.entity_label(qid)
        self.entities.append(qid)
        self.neighbours += [t.subject_id for t in tails] + layer


def remote(url: str) -> SparqlKG:
    return SparqlKG(url, user_agent=USER_AGENT, cache_dir="")


def check_snapshot(path: Path, live: KnowledgeGraph, run: Expanded) -> None:
    assert validate(path) == []
    saved = EmbeddedKG(path)
    for qid in run.entities:
        assert saved.head_relations(qid) == live.head_relations(qid), qid
        assert saved.tail_relations(qid) == live.tail_relations(qid), qid
        label = live.entity_label(qid)
        assert saved.entity_label(qid) == label
        assert saved.search_entities(label, 1)[0].qid == live.search_entities(label, 1)[0].qid
    for qid in run.neighbours:
        assert saved.entity_label(qid) == live.entity_label(qid), qid
        assert set(map(repr, saved.head_relations(qid))) <= set(map(repr, live.head_relations(qid)))
        assert any(t.relation_id == "P31" for t in saved.head_relations(qid)), qid


def test_snapshot_of_a_served_graph_reloads_with_the_same_answers(
    tiny_endpoint: str, tmp_path: Path
) -> None:
    live, run = remote(tiny_endpoint), Expanded()
    path = snapshot(QUESTIONS, live, run, tmp_path / "snap" / "slice.ttl")
    assert path.exists() and run.entities == ["Q1000", "Q2000", "Ludwigshafen1"]
    check_snapshot(path, live, run)
    saved = EmbeddedKG(path)
    [alias] = saved.search_entities("wilhelm dieterle")  # the matched alias was recorded
    assert (alias.qid, alias.match) == ("Q2000", "alias")
    assert saved.search_entities("Paris") == []  # never touched, never saved
    assert saved.head_relations("Q1000")[2].object == "1944-08-22"  # dates keep their type


def test_recording_copies_share_one_recording_and_count_their_own(tiny_endpoint: str) -> None:
    recorder = RecordingKG(remote(tiny_endpoint))
    a, b = recorder.with_stats(), recorder.with_stats()
    a.head_relations("Q1000")
    b.tail_relations("Q2000")
    b.search_entities("Kismet")
    assert (a.stats.queries, b.stats.queries) == (1, 2)
    assert len(recorder.recording.statements) == 5  # 4 heads of Kismet + Juarez → Dieterle


def test_a_snapshot_where_every_question_fails_writes_nothing(
    tiny_endpoint: str, tmp_path: Path
) -> None:
    with pytest.raises(KGError, match="all 2 questions failed"):
        snapshot(["[Zanzibar]", "[Atlantis]"], remote(tiny_endpoint), Expanded(), tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_questions_are_read_from_text_jsonl_yaml_and_json_files(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("who directed [Kismet]?\n\nwhat is [Paris]\tParis|x\n")
    (tmp_path / "q.jsonl").write_text('{"question": "a?", "answer": "b"}\n\n{"question": "c?"}\n')
    (tmp_path / "q.yaml").write_text('- question: "d?"\n  answer: x\n- question: e?\n')
    (tmp_path / "q.json").write_text('["f?", {"question": "g?"}]')
    assert read_questions(tmp_path / "q.txt") == ["who directed [Kismet]?", "what is [Paris]"]
    assert read_questions(tmp_path / "q.jsonl") == ["a?", "c?"]
    assert read_questions(tmp_path / "q.yaml") == ["d?", "e?"]
    assert read_questions(tmp_path / "q.json") == ["f?", "g?"]
    (tmp_path / "bad.yaml").write_text("- answer: no question here\n")
    with pytest.raises(InputError, match="Cannot read questions"):
        read_questions(tmp_path / "bad.yaml")
    with pytest.raises(InputError, match="Cannot read questions"):
        read_questions(tmp_path / "absent.txt")


@pytest.fixture(scope="module")
def slice_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(slice_or_skip(), tmp_path_factory.mktemp("oxigraph-slice-snap"))


@pytest.mark.slow
def test_snapshot_of_the_served_slice(slice_endpoint: str, tmp_path: Path) -> None:
    live = remote(slice_endpoint)
    rows = live.select(
        "SELECT ?label WHERE { ?e <http://www.wikidata.org/prop/direct/P31> ?c ; "
        "<http://www.w3.org/2000/01/rdf-schema#label> ?label } ORDER BY ?label LIMIT 8"
    )
    run = Expanded()
    path = snapshot([f"tell me about [{r['label']}]" for r in rows], live, run, tmp_path / "s.ttl")
    check_snapshot(path, live, run)


@pytest.mark.slow
def test_snapshot_command_freezes_what_the_pipeline_read(
    slice_endpoint: str, tmp_path: Path
) -> None:
    """`python -m dtkg snapshot` end to end: the real pipeline against a served slice; the
    frozen file then answers the same questions offline, with the same answers."""
    from dtkg.cli import main
    from dtkg.config import DTKGConfig
    from dtkg.pipeline import Pipeline

    questions = tmp_path / "questions.txt"
    questions.write_text(
        "When was the wife of the director of Inception born?\n"
        "Who is older: Elon Musk or Jeff Bezos?\n"
    )
    out = tmp_path / "frozen.ttl"
    assert (
        main(["snapshot", "--kg", slice_endpoint, "--questions", str(questions), "--out", str(out)])
        == 0
    )
    assert validate(out) == []
    frozen = DTKGConfig.from_profile("cpu", kg_backend="embedded", kg_file=str(out))
    answers = [Pipeline(frozen).answer(q).answer for q in questions.read_text().splitlines()]
    assert "1971" in answers[0] and answers[1] == "Jeff Bezos"
