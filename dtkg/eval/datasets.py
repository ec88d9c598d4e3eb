"""Benchmark loaders: the only place in dtkg that knows the benchmark file formats.

Every loader returns :class:`Example` records: the question text handed to the pipeline, the
gold answers (each with its aliases), facets for per-group metrics, and the gold routing label
where the dataset implies one. Dataset knowledge (gold routing labels, MetaQA reachability in
the partial KB) lives here and in :mod:`dtkg.eval.metrics`, never in the pipeline.

Gold routing labels (``Example.route``):

- HotpotQA: ``bridge`` → chained, ``comparison`` → parallel.
- MetaQA: 1-hop → parallel (rule 5: one triple answers it), 2/3-hop → chained.
- CWQ (``compositionality_type``): ``composition`` → chained (a nested entity chain);
  ``conjunction`` → chained (a chain from the topic entity plus a constraint; the paper counts
  84.3% of CWQ as chained, which only fits if conjunctions are chained); ``comparative`` and
  ``superlative`` → parallel (independent values compared, the paper's rule 3).
- examples.yaml: its ``type`` field.  QALD-10, CREAK, other ToG files: none (not scored).
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dtkg.errors import InputError

ROUTE_LABELS = ("chained", "parallel")
HOTPOT_ROUTES = {"bridge": "chained", "comparison": "parallel"}
CWQ_ROUTES = {
    "composition": "chained",
    "conjunction": "chained",
    "comparative": "parallel",
    "superlative": "parallel",
}
# MetaQA question types name entity types; each type is one KB relation away from a movie.
METAQA_RELATIONS = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}
_BRACKET = re.compile(r"\[([^\[\]]+)\]")
_QID = re.compile(r"^[QPL]\d+$")


@dataclass
class Example:
    """One benchmark question with its gold answers."""

    id: str
    question: str  # exactly what the pipeline receives
    gold: list[list[str]]  # one entry per gold answer: [canonical label, *aliases]
    gold_ids: list[str] = field(default_factory=list)  # KG ids (QIDs) where the data gives them
    groups: dict[str, str] = field(default_factory=dict)  # facets for per-group metrics
    route: str | None = None  # gold routing label: chained | parallel | None (unknown)
    topic: str | None = None  # topic entity text where the dataset marks it
    answerable: bool | None = None  # gold reachable in the (partial) KB; None = not computed
    match: str = "exact"  # exact | contains (gold found in the answer; see dtkg.eval.metrics)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- MetaQA
def metaqa_question(raw: str, hint: bool) -> tuple[str, str | None]:
    """(question text, topic entity): with ``hint`` the ``[bracketed]`` topic entity stays as
    the linking hint; without, the brackets are removed and the words stay in place."""
    match = _BRACKET.search(raw)
    topic = match[1].strip() if match else None
    text = raw if hint else _BRACKET.sub(lambda m: m[1], raw)
    return " ".join(text.split()), topic


def _metaqa_hops(path: Path) -> str | None:
    for part in (path.parent.name, path.name):
        match = re.match(r"(\d)-hop", part)
        if match:
            return match[1]
    return None


def load_metaqa(
    path: str | Path, *, hint: bool = True, kb: str | Path | None = None, **_: Any
) -> list[Example]:
    """MetaQA ``qa_*.txt``: ``question with [topic entity]<TAB>ans1|ans2``.

    The hop count comes from the folder name (``2-hop/``); a ``*_qtype.txt`` beside the file
    (same line order) gives each question's type. With ``kb``, each example's ``answerable``
    says whether a gold answer is reachable from the topic entity in that KB (see
    :class:`MetaQAKB`).
    """
    path = Path(path)
    lines = _read_lines(path)
    hops = _metaqa_hops(path)
    qtype_file = path.with_name(path.stem + "_qtype.txt")
    qtypes = _read_lines(qtype_file) if qtype_file.exists() else []
    if qtypes and len(qtypes) != len(lines):
        qtypes = []  # misaligned: ignore rather than mislabel
    graph = MetaQAKB.load(kb) if kb else None
    examples = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        raw, sep, answers = line.partition("\t")
        if not sep:
            raise InputError(f"{path}:{number}: expected 'question<TAB>answers', got {line[:80]!r}")
        text, topic = metaqa_question(raw, hint)
        groups: dict[str, str] = {}
        if hops:
            groups["hops"] = f"{hops}-hop"
        qtype = qtypes[number - 1].strip() if qtypes else ""
        if qtype:
            groups["qtype"] = qtype
        gold = [[a.strip()] for a in answers.split("|") if a.strip()]
        example = Example(
            id=f"{hops or 'x'}hop-{number}",
            question=text,
            gold=gold,
            groups=groups,
            route=("parallel" if hops == "1" else "chained") if hops else None,
            topic=topic,
            meta={"raw": raw, **({"qtype": qtype} if qtype else {})},
        )
        if graph is not None and topic:
            example.answerable = graph.reachable(
                topic, [g[0] for g in gold], int(hops or 3), qtype or None
            )
            groups["answerable"] = "yes" if example.answerable else "no"
        examples.append(example)
    return examples


class MetaQAKB:
    """The MetaQA KB (``head|relation|tail``) as adjacency lists, for reachability only.

    ``reachable`` follows the question type's relation chain when it is known
    (``movie_to_director_to_movie`` = directed_by forward, then directed_by backward), else
    any relation in either direction, for at most ``hops`` steps. Entity names match
    case-insensitively (MetaQA's questions and KB disagree on case now and then).
    """

    _cache: dict[str, MetaQAKB] = {}

    def __init__(self, triples: Iterable[tuple[str, str, str]]):
        self.out: dict[tuple[str, str], set[str]] = defaultdict(set)  # (head, rel) -> tails
        self.inv: dict[tuple[str, str], set[str]] = defaultdict(set)  # (tail, rel) -> heads
        self.any: dict[str, set[str]] = defaultdict(set)
        for head, rel, tail in triples:
            h, t = head.lower(), tail.lower()
            self.out[(h, rel)].add(t)
            self.inv[(t, rel)].add(h)
            self.any[h].add(t)
            self.any[t].add(h)

    @classmethod
    def load(cls, path: str | Path) -> MetaQAKB:
        key = str(Path(path).resolve())
        if key not in cls._cache:
            triples = []
            for line in _read_lines(Path(path)):
                parts = line.split("|")
                if len(parts) == 3:
                    triples.append((parts[0], parts[1], parts[2]))
            cls._cache[key] = cls(triples)
        return cls._cache[key]

    def reachable(self, topic: str, gold: list[str], hops: int, qtype: str | None = None) -> bool:
        """Whether some gold answer is reachable from ``topic`` (see the class docstring)."""
        targets = {g.lower() for g in gold}
        steps = _qtype_steps(qtype) if qtype else None
        frontier = {topic.lower()}
        if steps is not None:
            for rel, forward in steps:
                index = self.out if forward else self.inv
                frontier = set().union(*(index.get((e, rel), set()) for e in frontier))
            return bool(frontier & targets)
        seen = set(frontier)
        for _ in range(hops):
            frontier = set().union(*(self.any.get(e, set()) for e in frontier)) - seen
            seen |= frontier
            if frontier & targets:
                return True
        return False


def _qtype_steps(qtype: str) -> list[tuple[str, bool]] | None:
    """``movie_to_director_to_movie`` → [(directed_by, forward), (directed_by, backward)]."""
    types = qtype.split("_to_")
    steps = []
    for a, b in zip(types, types[1:], strict=False):
        if a == "movie" and b in METAQA_RELATIONS:
            steps.append((METAQA_RELATIONS[b], True))
        elif b == "movie" and a in METAQA_RELATIONS:
            steps.append((METAQA_RELATIONS[a], False))
        else:
            return None
    return steps or None


# ---------------------------------------------------------------------------- HotpotQA
def load_hotpotqa(path: str | Path, **_: Any) -> list[Example]:
    """HotpotQA as JSONL (``question``, ``answer``, ``type``) or the official JSON list
    (``_id``, ``question``, ``answer``, ``type``, ...)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    examples = []
    for i, row in enumerate(rows):
        qtype = str(row.get("type", "")).strip()
        examples.append(
            Example(
                id=str(row.get("_id") or row.get("id") or f"hotpot-{i}"),
                question=" ".join(str(row["question"]).split()),
                gold=[[str(row["answer"]).strip()]],
                groups={"type": qtype} if qtype else {},
                route=HOTPOT_ROUTES.get(qtype),
                meta={"level": row["level"]} if "level" in row else {},
            )
        )
    return examples


# ---------------------------------------------------------------------------- QALD-10
def load_qald10(
    path: str | Path, *, labels: dict[str, str] | None = None, **_: Any
) -> list[Example]:
    """QALD-10 official JSON (``questions[].question[lang=en]``, ``answers`` as SPARQL JSON
    results). URI answers become QIDs in ``gold_ids``; their English labels come from
    ``labels`` or, when absent, from a ToG-format ``qald_10-en.json`` found at
    ``<dir>/../tog/`` (the shared data layout); unlabelled QIDs are their own gold string.
    Boolean answers are ``yes``/``no`` (aliases ``true``/``false``)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if labels is None:
        labels = {}
        companion = path.parent.parent / "tog" / "qald_10-en.json"
        if companion.exists():
            for row in json.loads(companion.read_text(encoding="utf-8")):
                answer = row.get("answer")
                if isinstance(answer, dict):
                    labels.update({k: str(v) for k, v in answer.items() if _QID.match(k)})
    examples = []
    for row in data.get("questions", data if isinstance(data, list) else []):
        texts = {q.get("language"): q.get("string", "") for q in row.get("question", [])}
        question = texts.get("en")
        if not question:
            continue
        gold: list[list[str]] = []
        gold_ids: list[str] = []
        kind = "entity"
        for answer in row.get("answers", []):
            if "boolean" in answer:
                kind = "boolean"
                gold.append(["yes", "true"] if answer["boolean"] else ["no", "false"])
                continue
            for binding in answer.get("results", {}).get("bindings", []):
                for value in binding.values():
                    if value.get("type") == "uri":
                        qid = value["value"].rsplit("/", 1)[-1]
                        gold_ids.append(qid)
                        gold.append([labels.get(qid, qid)] + ([qid] if qid in labels else []))
                    else:
                        kind = "literal"
                        gold.append([_literal(value.get("value", ""))])
        groups = {"answer_type": kind}
        if row.get("aggregation") is not None:
            groups["aggregation"] = "yes" if row["aggregation"] else "no"
        examples.append(
            Example(
                id=f"qald10-{row.get('id', len(examples))}",
                question=" ".join(question.split()),
                gold=gold,
                gold_ids=gold_ids,
                groups=groups,
                meta={"sparql": row.get("query", {}).get("sparql", "")},
            )
        )
    return examples


def _literal(value: str) -> str:
    """Tidy a literal answer: ``+100`` → ``100``, dates to their day."""
    value = value.strip()
    if re.fullmatch(r"\+\d+(\.\d+)?", value):
        value = value[1:]
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2})T00:00:00Z?", value)
    return match[1] if match else value


# ---------------------------------------------------------------------------- ToG format
def load_tog(path: str | Path, *, routes: dict[str, str] | None = None, **_: Any) -> list[Example]:
    """Think-on-Graph format: a JSON list; ``question`` (or ``sentence`` for CREAK claims);
    ``answer`` as a string or ``{id: label}``, or ``label`` true/false (CREAK);
    ``compositionality_type`` (CWQ) becomes a group and, through ``routes``, the gold route."""
    path = Path(path)
    rows = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise InputError(f"{path}: expected a JSON list of questions (ToG format).")
    stem = path.stem.replace("_", "-")
    examples = []
    for i, row in enumerate(rows):
        question = row.get("question") or row.get("sentence")
        if not question:
            continue
        gold: list[list[str]] = []
        gold_ids: list[str] = []
        groups: dict[str, str] = {}
        answer = row.get("answer")
        if isinstance(answer, dict):
            for key, label in answer.items():
                if _QID.match(key):
                    gold_ids.append(key)
                    gold.append([str(label), key])
                else:
                    gold.append([str(label)])
        elif isinstance(answer, list):
            gold = [[str(a)] for a in answer]
        elif answer is not None:
            gold = [[str(answer)]]
        elif "label" in row:  # CREAK: a claim is true or false
            truth = str(row["label"]).lower() == "true"
            gold = [["true", "yes", "supported"]] if truth else [["false", "no", "refuted"]]
            groups["label"] = "true" if truth else "false"
        ctype = row.get("compositionality_type")
        if ctype:
            groups["type"] = str(ctype)
        topics = row.get("qid_topic_entity") or row.get("topic_entity") or {}
        examples.append(
            Example(
                id=str(row.get("ID") or row.get("ex_id") or row.get("id") or f"{stem}-{i}"),
                question=" ".join(str(question).split()),
                gold=gold,
                gold_ids=gold_ids,
                groups=groups,
                route=(routes or {}).get(str(ctype)) if ctype else None,
                topic=next(iter(topics.values()), None) if isinstance(topics, dict) else None,
                meta={"topic_ids": list(topics)} if isinstance(topics, dict) and topics else {},
            )
        )
    return examples


def load_cwq(path: str | Path, **kwargs: Any) -> list[Example]:
    """ComplexWebQuestions in ToG format, with the gold routes of :data:`CWQ_ROUTES`."""
    kwargs.pop("routes", None)
    return load_tog(path, routes=CWQ_ROUTES, **kwargs)


# ---------------------------------------------------------------------------- examples
def load_examples(path: str | Path, **_: Any) -> list[Example]:
    """``examples/questions.yaml``: a list of ``{question, type, answer, accept}`` (``accept``:
    further strings that count as correct; ``answer`` may be a list for set answers). As the
    file documents, a gold string counts when found in the answer (``match = "contains"``;
    ``"Paris; 68373433"`` needs both parts)."""
    import yaml

    path = Path(path)
    rows = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if isinstance(rows, dict):
        rows = rows.get("questions") or rows.get("examples") or []
    examples = []
    for i, row in enumerate(rows, 1):
        answer = row.get("answer", "")
        answers = [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]
        accept = [str(a) for a in row.get("accept", []) or []]
        # a set answer: every accept string counts as an alias of every item
        gold = [answers + accept] if len(answers) == 1 else [[a, *accept] for a in answers]
        qtype = str(row.get("type", "")).strip()
        examples.append(
            Example(
                id=str(row.get("id") or f"example-{i}"),
                question=" ".join(str(row["question"]).split()),
                gold=[g for g in gold if g and g[0]],
                groups={"type": qtype} if qtype else {},
                route=qtype if qtype in ROUTE_LABELS else None,
                match="contains",  # the file documents accept strings as "found in the answer"
            )
        )
    return examples


# ---------------------------------------------------------------------------- registry
LOADERS: dict[str, Callable[..., list[Example]]] = {
    "metaqa": load_metaqa,
    "hotpotqa": load_hotpotqa,
    "qald10": load_qald10,
    "cwq": load_cwq,
    "tog": load_tog,
    "examples": load_examples,
}
DATASETS = tuple(LOADERS)


def load_dataset(
    name: str,
    path: str | Path,
    *,
    kb: str | Path | None = None,
    hint: bool = True,
    limit: int | None = None,
    seed: int = 0,
) -> list[Example]:
    """Load ``name`` from ``path``; with ``limit``, a seeded random sample of that many
    questions, kept in file order (MetaQA files are sorted by question type, so the first N
    lines would all be one type)."""
    if name not in LOADERS:
        raise InputError(f"Unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    path = Path(path)
    if not path.exists():
        raise InputError(f"Dataset file {path} does not exist.")
    examples = LOADERS[name](path, hint=hint, kb=kb)
    seen: set[str] = set()
    for example in examples:  # ids key the resumable JSONL: they must be unique
        if example.id in seen:
            raise InputError(f"{path}: duplicate question id {example.id!r}.")
        seen.add(example.id)
    return sample(examples, limit, seed)


def sample(examples: list[Example], limit: int | None, seed: int = 0) -> list[Example]:
    """A seeded sample of ``limit`` examples in their original order (all when no limit)."""
    if limit is None or limit >= len(examples):
        return examples
    if limit <= 0:
        return []
    keep = sorted(random.Random(seed).sample(range(len(examples)), limit))
    return [examples[i] for i in keep]


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()
