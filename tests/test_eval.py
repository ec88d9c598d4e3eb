"""The evaluation harness: loaders, metrics, resumability and the CLI with a fake pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import HashingEmbedder, shared_path

from dtkg.errors import ConfigError, InputError
from dtkg.eval import cli, datasets, metrics, runner
from dtkg.trace import Classification, Stats, Trace

# ------------------------------------------------------------------------------ fixtures
METAQA_KB = """\
Inception|directed_by|Christopher Nolan
Inception|starred_actors|Leonardo DiCaprio
Interstellar|directed_by|Christopher Nolan
Interstellar|release_year|2014
Inception|release_year|2010
Titanic|starred_actors|Leonardo DiCaprio
Titanic|in_language|English
"""
METAQA_2HOP = """\
what years were the films directed by [Christopher Nolan] released\t2010|2014
which languages are the movies starring [Leonardo DiCaprio] in\tEnglish
what years were films by [Nobody Known] released\t1999
"""
METAQA_2HOP_QTYPE = """\
director_to_movie_to_year
actor_to_movie_to_language
director_to_movie_to_year
"""


@pytest.fixture
def metaqa_files(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "2-hop"
    folder.mkdir()
    (folder / "qa_dev.txt").write_text(METAQA_2HOP, encoding="utf-8")
    (folder / "qa_dev_qtype.txt").write_text(METAQA_2HOP_QTYPE, encoding="utf-8")
    kb = tmp_path / "kb.txt"
    kb.write_text(METAQA_KB, encoding="utf-8")
    return folder / "qa_dev.txt", kb


class FakePipeline:
    """Answers from a lookup table keyed by a word of the question; counts calls."""

    def __init__(self, answers: dict[str, list[str]], stop_after: int | None = None):
        self.answers = answers
        self.calls: list[str] = []
        self.stop_after = stop_after

    def answer(self, question: str) -> Trace:
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt  # as if the run were killed here
        self.calls.append(question)
        for key, ranked in self.answers.items():
            if key in question:
                label = "chained" if "film" in question or "movie" in question else "parallel"
                return Trace(
                    question=question,
                    mode="only-chain",
                    classification=Classification(label, 0.9, "fake"),
                    answer=ranked[0] if ranked else "",
                    answers=ranked,
                    abstained=not ranked,
                    stats=Stats(llm_calls=0, kg_queries=4, total_seconds=0.01),
                )
        raise RuntimeError(f"no fake answer for {question!r}")


def _fake_factory(pipeline: FakePipeline):
    return lambda config: pipeline.answer


# ------------------------------------------------------------------------------ loaders
def test_metaqa_loader_hint_qtype_and_reachability(metaqa_files: tuple[Path, Path]) -> None:
    qa, kb = metaqa_files
    examples = datasets.load_dataset("metaqa", qa, kb=kb)
    assert [e.id for e in examples] == ["2hop-1", "2hop-2", "2hop-3"]
    first = examples[0]
    assert first.question.startswith("what years were the films directed by [Christopher Nolan]")
    assert first.topic == "Christopher Nolan"
    assert first.gold == [["2010"], ["2014"]]
    assert first.route == "chained"
    assert first.groups == {
        "hops": "2-hop",
        "qtype": "director_to_movie_to_year",
        "answerable": "yes",
    }
    assert examples[1].answerable is True  # actor -> Titanic -> English along the qtype chain
    assert examples[2].answerable is False  # topic entity not in the KB

    plain = datasets.load_dataset("metaqa", qa, kb=kb, hint=False)
    assert plain[0].question == "what years were the films directed by Christopher Nolan released"
    assert plain[0].topic == "Christopher Nolan"


def test_metaqa_reachability_follows_relation_direction(tmp_path: Path) -> None:
    graph = datasets.MetaQAKB(
        [("Inception", "directed_by", "Nolan"), ("Inception", "release_year", "2010")]
    )
    # director_to_movie_to_year: directed_by backwards, release_year forwards
    assert graph.reachable("Nolan", ["2010"], 2, "director_to_movie_to_year")
    # a chain in the wrong direction reaches nothing
    assert not graph.reachable("Nolan", ["Inception"], 1, "movie_to_director")
    assert graph.reachable("Nolan", ["Inception"], 1, "director_to_movie")
    # without a type: any relation, either direction, within the hop count
    assert graph.reachable("nolan", ["2010"], 2)
    assert not graph.reachable("Nolan", ["2010"], 1)


def test_metaqa_one_hop_routes_parallel(tmp_path: Path) -> None:
    folder = tmp_path / "1-hop"
    folder.mkdir()
    (folder / "qa_dev.txt").write_text("who directed [Inception]\tChristopher Nolan\n")
    (example,) = datasets.load_dataset("metaqa", folder / "qa_dev.txt")
    assert example.route == "parallel" and example.groups == {"hops": "1-hop"}
    assert example.answerable is None  # no KB given


def test_metaqa_bad_line_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "qa.txt"
    path.write_text("a question without answers\n")
    with pytest.raises(InputError, match="question<TAB>answers"):
        datasets.load_dataset("metaqa", path)


def test_hotpotqa_loader_groups_and_routes(tmp_path: Path) -> None:
    path = tmp_path / "hp.jsonl"
    rows = [
        {"question": " Who  directed X? ", "answer": "Y", "type": "bridge"},
        {"question": "Which is older, A or B?", "answer": "A", "type": "comparison"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    examples = datasets.load_dataset("hotpotqa", path)
    assert [e.route for e in examples] == ["chained", "parallel"]
    assert examples[0].question == "Who directed X?"
    assert examples[1].groups == {"type": "comparison"}
    assert examples[0].gold == [["Y"]]


def test_qald10_loader(tmp_path: Path) -> None:
    data = {
        "questions": [
            {
                "id": 7,
                "question": [
                    {"language": "de", "string": "x"},
                    {"language": "en", "string": "Who?"},
                ],
                "answers": [
                    {
                        "head": {"vars": ["result"]},
                        "results": {
                            "bindings": [
                                {
                                    "result": {
                                        "type": "uri",
                                        "value": "http://www.wikidata.org/entity/Q42",
                                    }
                                },
                                {"result": {"type": "literal", "value": "+100"}},
                            ]
                        },
                    }
                ],
            },
            {
                "id": 8,
                "question": [{"language": "en", "string": "Is it?"}],
                "answers": [{"head": {}, "boolean": False}],
            },
        ]
    }
    path = tmp_path / "qald.json"
    path.write_text(json.dumps(data))
    first, second = datasets.load_dataset("qald10", path)
    assert first.id == "qald10-7" and first.question == "Who?"
    assert first.gold_ids == ["Q42"] and first.gold == [["Q42"], ["100"]]
    assert second.gold == [["no", "false"]] and second.groups["answer_type"] == "boolean"
    labelled = datasets.load_qald10(path, labels={"Q42": "Douglas Adams"})
    assert labelled[0].gold[0] == ["Douglas Adams", "Q42"]


def test_tog_and_cwq_loaders(tmp_path: Path) -> None:
    cwq = tmp_path / "cwq.json"
    cwq.write_text(
        json.dumps(
            [
                {
                    "ID": "a",
                    "question": "q1",
                    "answer": "X",
                    "compositionality_type": "composition",
                },
                {
                    "ID": "b",
                    "question": "q2",
                    "answer": "Y",
                    "compositionality_type": "superlative",
                },
            ]
        )
    )
    a, b = datasets.load_dataset("cwq", cwq)
    assert (a.route, b.route) == ("chained", "parallel")
    assert a.groups == {"type": "composition"}
    plain = datasets.load_dataset("tog", cwq)
    assert plain[0].route is None  # generic ToG: no gold routing
    creak = tmp_path / "creak.json"
    creak.write_text(
        json.dumps([{"ex_id": "dev_0", "sentence": "Soup is solid.", "label": "false"}])
    )
    (claim,) = datasets.load_dataset("tog", creak)
    assert claim.question == "Soup is solid." and claim.gold[0][0] == "false"
    qald = tmp_path / "qald_10-en.json"
    qald.write_text(json.dumps([{"question": "q", "answer": {"Q1": "one", "Q2": "two"}}]))
    (q,) = datasets.load_dataset("tog", qald)
    assert q.gold_ids == ["Q1", "Q2"] and q.gold == [["one", "Q1"], ["two", "Q2"]]


def test_examples_loader(tmp_path: Path) -> None:
    path = tmp_path / "questions.yaml"
    path.write_text(
        "- question: Where was the director of Inception born?\n"
        "  type: chained\n  answer: London\n  accept: [Westminster]\n"
        "- question: Who is older, A or B?\n  type: parallel\n  answer: A\n"
    )
    first, second = datasets.load_dataset("examples", path)
    assert first.gold == [["London", "Westminster"]] and first.route == "chained"
    assert first.match == "contains"  # the file documents accept strings as found in the answer
    assert second.route == "parallel" and second.groups == {"type": "parallel"}


def test_limit_is_a_seeded_sample_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "hp.jsonl"
    path.write_text(
        "".join(json.dumps({"question": f"q{i}", "answer": "a"}) + "\n" for i in range(50))
    )
    a = datasets.load_dataset("hotpotqa", path, limit=10, seed=1)
    b = datasets.load_dataset("hotpotqa", path, limit=10, seed=1)
    c = datasets.load_dataset("hotpotqa", path, limit=10, seed=2)
    assert [e.id for e in a] == [e.id for e in b] != [e.id for e in c]
    numbers = [int(e.id.split("-")[1]) for e in a]
    assert numbers == sorted(numbers) and len(numbers) == 10
    assert len(datasets.load_dataset("hotpotqa", path, limit=500)) == 50


def test_unknown_dataset_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="Unknown dataset"):
        datasets.load_dataset("squad", tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        datasets.load_dataset("hotpotqa", tmp_path / "nope.jsonl")


def test_shipped_examples_file_loads() -> None:
    path = Path(__file__).resolve().parent.parent / "examples" / "questions.yaml"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    examples = datasets.load_dataset("examples", path)
    assert examples and all(e.gold and e.route in ("chained", "parallel") for e in examples)


# ----------------------------------------------------------------- loaders on ../shared
def test_shared_metaqa_files_load() -> None:
    qa = shared_path("data", "metaqa", "1-hop", "qa_dev.txt")
    kb = shared_path("data", "metaqa", "kb.txt")
    examples = datasets.load_dataset("metaqa", qa, kb=kb, limit=300)
    assert len(examples) == 300
    assert all(e.topic and e.gold and e.route == "parallel" for e in examples)
    assert all("qtype" in e.groups for e in examples)
    answerable = sum(e.answerable for e in examples) / len(examples)
    assert 0.9 < answerable < 1.0  # the KB is about 96% of the original


def test_shared_hotpotqa_qald_tog_load() -> None:
    hotpot = datasets.load_dataset("hotpotqa", shared_path("data", "hotpotqa", "dev_sample.jsonl"))
    assert len(hotpot) == 1500 and {e.route for e in hotpot} == {"chained", "parallel"}
    qald = datasets.load_dataset("qald10", shared_path("data", "qald10", "qald_10.json"))
    assert len(qald) > 300 and all(e.question for e in qald)
    labelled = [g for e in qald for g in e.gold if len(g) > 1]
    assert labelled  # labels came from the ToG companion file
    cwq = datasets.load_dataset("cwq", shared_path("data", "tog", "cwq.json"))
    assert {e.groups["type"] for e in cwq} == set(datasets.CWQ_ROUTES)
    creak = datasets.load_dataset("tog", shared_path("data", "tog", "creak.json"))
    assert {e.gold[0][0] for e in creak} == {"true", "false"}


# ------------------------------------------------------------------------------ metrics
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The  Dark Knight!", "dark knight"),
        ("Kamāl al-Dīn", "kamal al din"),
        ("  A   Beautiful Mind ", "beautiful mind"),
        ("an apple, a pear", "apple pear"),
        ("", ""),
        ("A", "a"),  # an answer that is only an article keeps it
        ("Théâtre", "theatre"),
        ("68,373,433", "68373433"),
        ("1971-12-09", "19711209"),
        ("Schindler's List", "schindlers list"),
        ("Stratford-upon-Avon", "stratford upon avon"),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert metrics.normalize(raw) == expected


def test_em_aliases_and_sets() -> None:
    gold = [["Christopher Nolan", "Nolan"], ["Emma Thomas"]]
    assert metrics.exact_match("the nolan.", gold) == 1.0
    assert metrics.exact_match("Emma Thomas", gold) == 1.0
    assert metrics.exact_match("Nolan, Thomas", gold) == 0.0
    assert metrics.exact_match("", gold) == 0.0
    assert metrics.hits_at_1(["Nolan", "x"], gold) == 1.0
    assert metrics.hits_at_1(["x", "Nolan"], gold) == 0.0
    assert metrics.hits_at_1([], gold) == 0.0


def test_contains_policy_for_examples() -> None:
    gold = [["Paris; 68373433", "Paris; 68.4 million"]]
    assert metrics.matches("The capital is Paris, population 68,373,433.", gold, contains=True)
    assert not metrics.matches("Paris", gold, contains=True)  # both parts are needed
    assert not metrics.matches("Paris", gold)  # exact policy: equality only
    assert metrics.matches("Jeff Bezos is older", [["Jeff Bezos", "Bezos"]], contains=True)
    assert not metrics.matches("Bezosa", [["Bezos"]], contains=True)  # whole words only
    assert (
        metrics.set_f1(
            ["Bill Gates (co-founder)", "Steve"], [["Bill Gates"], ["Paul Allen"]], contains=True
        )
        == 0.5
    )


def test_set_f1() -> None:
    gold = [["2010"], ["2014"]]
    assert metrics.set_f1(["2010", "2014"], gold) == 1.0
    assert metrics.set_f1(["2010"], gold) == pytest.approx(2 / 3)  # p=1, r=1/2
    assert metrics.set_f1(["2010", "1999"], gold) == pytest.approx(0.5)
    assert metrics.set_f1(["2010", "2010"], gold) == pytest.approx(2 / 3)  # duplicates count once
    assert metrics.set_f1([], gold) == 0.0
    assert metrics.set_f1([], []) == 1.0
    assert metrics.set_f1(["x"], []) == 0.0


def test_abstention_and_errors_score_zero() -> None:
    gold = [["Paris"]]
    abstained = {"answer": "Paris", "answers": ["Paris"], "abstained": True}
    assert metrics.score_prediction(abstained, gold) == {
        "em": 0.0,
        "hits@1": 0.0,
        "any-hit": 0.0,
        "f1": 0.0,
    }
    failed = {"answer": "Paris", "error": "boom"}
    assert metrics.score_prediction(failed, gold)["hits@1"] == 0.0
    both = {"answer": "Nolan and Thomas", "answers": ["Thomas", "Nolan"]}
    assert metrics.score_prediction(both, [["Nolan"], ["Thomas"]])["em"] == 1.0  # the gold set
    part = {"answer": "Nolan and Smith", "answers": ["Nolan", "Smith"]}
    assert metrics.score_prediction(part, [["Nolan"], ["Thomas"]])["em"] == 0.0
    ok = {"answer": "paris", "answers": []}  # the single answer stands in for the ranking
    assert metrics.score_prediction(ok, gold) == {
        "em": 1.0,
        "hits@1": 1.0,
        "any-hit": 1.0,
        "f1": 1.0,
    }
    second = {"answer": "1926 and 1959", "answers": ["1926", "1959"]}  # two films, one name
    scores = metrics.score_prediction(second, [["1959"]])
    assert (
        scores["hits@1"] == 0.0
        and scores["any-hit"] == 1.0
        and scores["f1"] == pytest.approx(2 / 3)
    )


def test_acc_threshold_with_an_embedder() -> None:
    scorer = metrics.AccScorer(embedder=HashingEmbedder(), tau=0.75)
    gold = [["Christopher Nolan"]]
    assert scorer.acc({"answer": "christopher nolan"}, gold) == 1.0  # EM implies ACC
    assert (
        scorer.acc({"answer": "director Christopher Nolan"}, gold) == 1.0
    )  # cosine 3/sqrt(15) = 0.77
    assert scorer.similarity("director Christopher Nolan", gold) == pytest.approx(0.7746, abs=1e-3)
    assert scorer.acc({"answer": "Steven Spielberg"}, gold) == 0.0
    # numbers must agree: "2010" is never semantically "2014"
    years = metrics.AccScorer(embedder=HashingEmbedder(), tau=0.01)
    assert years.acc({"answer": "2010"}, [["2014"]]) == 0.0
    assert years.acc({"answer": "in 2014"}, [["2014"]]) == 1.0
    assert metrics._numbers("1,000 people in +2014") == metrics._numbers("2014: 1000")
    assert scorer.acc({"answer": ""}, gold) == 0.0
    assert scorer.acc({"answer": "Christopher Nolan", "abstained": True}, gold) == 0.0


def test_aggregate_and_groups() -> None:
    records = [
        {
            "route": "chained",
            "groups": {"hops": "2-hop"},
            "prediction": {
                "label": "chained",
                "abstained": False,
                "kg_queries": 4,
                "llm_calls": 0,
                "seconds": 0.5,
            },
            "scores": {"em": 1.0, "hits@1": 1.0, "f1": 1.0},
        },
        {
            "route": "chained",
            "groups": {"hops": "2-hop"},
            "prediction": {
                "label": "parallel",
                "abstained": True,
                "kg_queries": 2,
                "llm_calls": 0,
                "seconds": 0.5,
            },
            "scores": {"em": 0.0, "hits@1": 0.0, "f1": 0.0},
        },
        {
            "route": None,
            "groups": {"hops": "1-hop"},
            "prediction": {"label": "parallel", "abstained": False, "error": "x"},
            "scores": {"em": 0.0, "hits@1": 0.0, "f1": 0.0},
        },
    ]
    overall = metrics.aggregate(records)
    assert overall["n"] == 3 and overall["hits@1"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["routing_accuracy"] == 0.5 and overall["n_routed"] == 2
    assert overall["abstention_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["hits@1_answered"] == 1.0  # the abstention and the error are left out
    assert overall["errors"] == 1
    assert overall["kg_queries_per_question"] == 3.0
    groups = metrics.by_group(records)
    assert groups["hops"]["2-hop"]["hits@1"] == 0.5 and groups["hops"]["1-hop"]["n"] == 1
    assert metrics.confusion(records) == {"chained": {"chained": 1, "parallel": 1}}
    assert metrics.aggregate([]) == {"n": 0}
    forced = {"route": "parallel", "prediction": {"label": "chained", "method": "fixed:only-chain"}}
    assert "routing_accuracy" not in metrics.aggregate([forced])  # a forced branch is no routing


# ------------------------------------------------------------------------------ CLI
def test_parse_overrides() -> None:
    assert cli.parse_overrides(["width=4", "theta=0.3", "classify_with=llm"]) == {
        "width": 4,
        "theta": 0.3,
        "classify_with": "llm",
    }
    assert cli.parse_overrides(["admin_keywords=ID, source"]) == {
        "admin_keywords": ("ID", "source")
    }
    with pytest.raises(ConfigError, match="Unknown setting"):
        cli.parse_overrides(["nope=1"])
    with pytest.raises(ConfigError, match="cannot read"):
        cli.parse_overrides(["width=wide"])
    with pytest.raises(ConfigError, match="key=value"):
        cli.parse_overrides(["width"])


def _metaqa_argv(qa: Path, kb: Path, out: Path, *extra: str) -> list[str]:
    return [
        "metaqa",
        "--data",
        str(qa),
        "--kb",
        str(kb),
        "--mode",
        "only-chain",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


ANSWERS = {
    "Christopher Nolan": ["2010", "2014"],
    "Leonardo DiCaprio": ["French"],
    "Nobody Known": [],
}


def test_cli_end_to_end_with_fake_pipeline(
    metaqa_files: tuple[Path, Path], tmp_path: Path, capsys: Any
) -> None:
    qa, kb = metaqa_files
    out = tmp_path / "r.json"
    fake = FakePipeline(ANSWERS)
    report = cli.run(
        _metaqa_argv(qa, kb, out),
        pipeline_factory=_fake_factory(fake),
        acc_scorer=metrics.AccScorer(embedder=HashingEmbedder()),
    )
    written = json.loads(out.read_text())
    assert written["dataset"] == "metaqa" and written["n"] == 3 and written["mode"] == "only-chain"
    m = written["metrics"]
    assert m["hits@1"] == pytest.approx(1 / 3, abs=1e-4) and m["em"] == pytest.approx(
        1 / 3, abs=1e-4
    )
    assert m["abstention_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["routing_accuracy"] == 1.0
    assert written["by_group"]["answerable"]["yes"]["hits@1"] == 0.5
    assert written["by_group"]["answerable"]["no"]["n"] == 1
    assert written["config"]["mode"] == "only-chain" and written["config"]["kg_file"] == str(kb)
    for key in (
        "git_revision",
        "machine",
        "date",
        "seconds",
        "questions_per_second",
        "metric_settings",
    ):
        assert key in written
    assert written["metric_settings"]["acc_tau"] == metrics.ACC_TAU
    assert report["n"] == written["n"]
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 3
    record = json.loads(lines[0])
    assert record["trace"]["answers"] == ["2010", "2014"] and record["id"] == "2hop-1"
    table = capsys.readouterr().out
    assert "hits@1" in table and "answerable=yes" in table


def test_cli_resumes_after_a_kill(metaqa_files: tuple[Path, Path], tmp_path: Path) -> None:
    qa, kb = metaqa_files
    out = tmp_path / "r.json"
    killed = FakePipeline(ANSWERS, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        cli.run(_metaqa_argv(qa, kb, out, "--no-acc"), pipeline_factory=_fake_factory(killed))
    jsonl = tmp_path / "r.jsonl"
    assert len(jsonl.read_text().splitlines()) == 2
    with jsonl.open("a") as handle:  # a torn line, as if killed mid-write
        handle.write('{"id": "2hop-3", "quest')
    rerun = FakePipeline(ANSWERS)
    report = cli.run(_metaqa_argv(qa, kb, out, "--no-acc"), pipeline_factory=_fake_factory(rerun))
    assert len(rerun.calls) == 1 and "Nobody Known" in rerun.calls[0]
    assert report["n"] == 3 and report["n_resumed"] == 2 and report["n_run"] == 1
    lines = jsonl.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["2hop-1", "2hop-2", "2hop-3"]
    again = FakePipeline(ANSWERS)
    cli.run(_metaqa_argv(qa, kb, out, "--no-acc"), pipeline_factory=_fake_factory(again))
    assert again.calls == []  # everything done: nothing re-run
    cli.run(_metaqa_argv(qa, kb, out, "--no-acc", "--fresh"), pipeline_factory=_fake_factory(again))
    assert len(again.calls) == 3


def test_cli_refuses_to_mix_runs(metaqa_files: tuple[Path, Path], tmp_path: Path) -> None:
    qa, kb = metaqa_files
    out = tmp_path / "r.json"
    cli.run(
        _metaqa_argv(qa, kb, out, "--no-acc"), pipeline_factory=_fake_factory(FakePipeline(ANSWERS))
    )
    with pytest.raises(InputError, match="different run"):
        cli.run(
            _metaqa_argv(qa, kb, out, "--no-acc", "--no-hint"),
            pipeline_factory=_fake_factory(FakePipeline(ANSWERS)),
        )


def test_cli_records_errors_per_question(metaqa_files: tuple[Path, Path], tmp_path: Path) -> None:
    qa, kb = metaqa_files
    fake = FakePipeline({"Christopher Nolan": ["2010"]})  # the others raise RuntimeError
    report = cli.run(
        _metaqa_argv(qa, kb, tmp_path / "r.json", "--no-acc"), pipeline_factory=_fake_factory(fake)
    )
    assert report["metrics"]["errors"] == 2 and report["metrics"]["hits@1"] == pytest.approx(
        1 / 3, abs=1e-4
    )


def test_cli_routing_only(tmp_path: Path) -> None:
    path = tmp_path / "hp.jsonl"
    rows = [
        {"question": "Where was the director of Jaws born?", "answer": "x", "type": "bridge"},
        {"question": "Who is older, A or B?", "answer": "A", "type": "comparison"},
        {"question": "Which came first, X or Y?", "answer": "X", "type": "comparison"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def classifier_factory(config: Any):
        return lambda q: Classification("parallel" if " or " in q else "chained", 0.5, "fake")

    out = tmp_path / "routing.json"
    report = cli.run(
        ["hotpotqa", "--data", str(path), "--routing-only", "--out", str(out), "--quiet"],
        classifier_factory=classifier_factory,
    )
    assert report["mode"] == "routing-only"
    assert report["metrics"]["routing_accuracy"] == 1.0
    assert report["by_group"]["type"]["comparison"]["routing_accuracy"] == 1.0
    assert report["routing_confusion"] == {"chained": {"chained": 1}, "parallel": {"parallel": 2}}
    assert "em" not in report["metrics"]
    assert json.loads(out.read_text())["metrics"]["routing_accuracy"] == 1.0


def test_main_turns_errors_into_a_message(tmp_path: Path, capsys: Any) -> None:
    code = cli.main(["hotpotqa", "--data", str(tmp_path / "missing.jsonl"), "--routing-only"])
    assert code == 2 and "does not exist" in capsys.readouterr().err


def test_jsonl_path() -> None:
    assert runner.jsonl_path("out/r.json") == Path("out/r.jsonl")
    assert runner.jsonl_path("out/r") == Path("out/r.jsonl")


FAKE_RUNNER = """
import sys, time
sys.path.insert(0, {root!r})
from dtkg.eval import cli
from dtkg.trace import Trace

def factory(config):
    def answer(question):
        time.sleep(0.05)
        return Trace(question=question, answer="x", answers=["x"])
    return answer

cli.run(sys.argv[1:], pipeline_factory=factory)
"""


def test_sigkilled_run_resumes(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    data = tmp_path / "hp.jsonl"
    data.write_text(
        "".join(json.dumps({"question": f"q{i}", "answer": "x"}) + "\n" for i in range(200))
    )
    script = tmp_path / "fake_run.py"
    script.write_text(FAKE_RUNNER.format(root=str(Path(__file__).parent.parent)))
    out = tmp_path / "r.json"
    argv = ["hotpotqa", "--data", str(data), "--out", str(out), "--quiet", "--no-acc"]
    proc = subprocess.Popen([sys.executable, str(script), *argv], cwd=Path(__file__).parent.parent)
    jsonl = tmp_path / "r.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if jsonl.exists() and len(jsonl.read_text().splitlines()) >= 5:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert jsonl.exists(), "the killed run wrote nothing"
    done = {json.loads(line)["id"] for line in jsonl.read_text().splitlines() if line.endswith("}")}
    assert 5 <= len(done) < 200
    rerun = FakePipeline({"q": ["x"]})
    report = cli.run(argv, pipeline_factory=_fake_factory(rerun))
    assert report["n"] == 200 and report["metrics"]["hits@1"] == 1.0
    assert len(rerun.calls) == 200 - report["n_resumed"]
    assert report["n_resumed"] >= len(done)
    assert not any(c in {f"q{i}" for i in range(200) if f"hotpot-{i}" in done} for c in rerun.calls)
