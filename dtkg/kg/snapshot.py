"""Record what questions touch in a live KG and save it as a slice the embedded backend loads.

:class:`RecordingKG` wraps any :class:`KnowledgeGraph`, answers through it and remembers every
triple returned plus the labels, descriptions and matched aliases of the entities and
properties it saw. :meth:`RecordingKG.write` completes that (English labels of everything
referenced, ``P31`` of every item with statements, so the result passes
:mod:`dtkg.kg.validate`) and writes Turtle. :func:`snapshot` runs a list of questions.

CLI: ``python -m dtkg snapshot --kg URL --questions FILE --out FILE`` calls
:func:`snapshot_questions`, which is :func:`snapshot` with the pipeline as ``run_question``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from dtkg.errors import DTKGError, InputError, KGError
from dtkg.kg import ids, queries
from dtkg.kg.base import (
    EntityCandidate,
    EntityInfo,
    KnowledgeGraph,
    Row,
    chunked,
    rows_to_triples,
)
from dtkg.trace import Triple

if TYPE_CHECKING:
    from dtkg.config import DTKGConfig

log = logging.getLogger(__name__)

PREFIXES = {
    "wd": ids.WD,
    "wdt": ids.WDT,
    "local": ids.LOCAL,
    "ldt": ids.LOCAL_DIRECT,
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "schema": "http://schema.org/",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "wikibase": "http://wikiba.se/ontology#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}


@dataclass
class Recording:
    """What a recording KG saw (shared by all its :meth:`~KnowledgeGraph.with_stats` copies)."""

    statements: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    info: dict[str, EntityInfo] = field(default_factory=dict)
    aliases: dict[str, set[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class RecordingKG(KnowledgeGraph):
    """Delegates to ``inner`` and records every triple returned."""

    name = "recording"

    def __init__(self, inner: KnowledgeGraph) -> None:
        super().__init__(result_limit=inner.result_limit)
        self.inner = inner
        self.stats = inner.stats
        self.source = inner.source
        self.recording = Recording()

    def with_stats(self) -> RecordingKG:
        clone = super().with_stats()
        assert isinstance(clone, RecordingKG)
        clone.inner = self.inner.with_stats()
        clone.stats = clone.inner.stats
        return clone

    def _select(self, query: str) -> list[Row]:
        return self.inner.select(query)

    def select(self, query: str) -> list[Row]:  # the inner KG counts and caches
        return self.inner.select(query)

    def relation_labels(self, limit: int = 500) -> list[str] | None:
        return self.inner.relation_labels(limit)

    # -------------------------------------------------------------- recorded calls
    def search_entities(
        self, text: str, limit: int = 5, *, fuzzy: bool = True
    ) -> list[EntityCandidate]:
        found = self.inner.search_entities(text, limit, fuzzy=fuzzy)
        with self.recording.lock:
            for c in found:
                self._note(c.qid, c.label, c.description, sure=True)
                if c.match == "alias" and c.matched:
                    self.recording.aliases.setdefault(c.qid, set()).add(c.matched)
        return found

    def entity_info_many(self, entity_ids: Iterable[str]) -> dict[str, EntityInfo]:
        found = self.inner.entity_info_many(entity_ids)
        with self.recording.lock:
            for eid, info in found.items():
                self._note(eid, info.label, info.description, sure=True)
        return found

    def entity_label(self, qid: str) -> str | None:
        return self.entity_info_many([qid]).get(qid, EntityInfo()).label

    def property_label(self, pid: str) -> str | None:
        return self.entity_info_many([pid]).get(pid, EntityInfo()).label

    def head_relations_many(self, qids: list[str]) -> dict[str, list[Triple]]:
        return self._record(self.inner.head_relations_many(qids))

    def tail_relations_many(self, qids: list[str]) -> dict[str, list[Triple]]:
        return self._record(self.inner.tail_relations_many(qids))

    def _record(self, result: dict[str, list[Triple]]) -> dict[str, list[Triple]]:
        with self.recording.lock:
            for triples in result.values():
                for t in triples:
                    self._note_triple(t)
        return result

    def _note(self, eid: str, label: str | None, description: str = "", sure: bool = False) -> None:
        """Remember a label; from a triple, a label equal to the id may be the id fallback."""
        if not eid:
            return
        info = self.recording.info.setdefault(eid, EntityInfo())
        if label and (sure or label != eid):
            info.label = info.label or label
        info.description = info.description or description

    def _note_triple(self, t: Triple) -> None:
        if not t.subject_id:  # a non-entity subject (cannot be written back as an item)
            return
        self._note(t.subject_id, t.subject)
        self._note(t.relation_id, t.relation)
        self._note(t.object_id, t.object)
        value = {"id": t.object_id, "text": t.object}
        self.recording.statements[(t.subject_id, t.relation_id, t.object_id or t.object)] = value

    # -------------------------------------------------------------- writing
    def write(self, path: str | Path) -> Path:
        """Complete the recording from the inner KG and save it as Turtle at ``path``."""
        self._complete()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        ox.serialize(
            sorted(self._rdf(), key=str), str(path), ox.RdfFormat.TURTLE, prefixes=PREFIXES
        )
        return path

    def _complete(self) -> None:
        """Fetch P31 of every item with statements, then labels of everything referenced."""
        rec = self.recording
        items = {s for s, _, _ in rec.statements}
        typed = {s for s, p, _ in rec.statements if p == "P31"}
        for chunk in chunked(sorted(items - typed)):
            rows = self.inner.select(
                queries.property_values(chunk, ["P31"], self.result_limit * len(chunk))
            )
            with rec.lock:
                for _, triple in rows_to_triples(rows, head=True):
                    self._note_triple(triple)
        referenced = set(rec.info)
        for (subject, pid, _), value in rec.statements.items():
            referenced |= {subject, pid, value["id"]}
        referenced.discard("")
        unlabelled = [e for e in sorted(referenced) if not rec.info.get(e, EntityInfo()).label]
        if unlabelled:
            self.entity_info_many(unlabelled)

    def _rdf(self) -> Iterable[ox.Triple]:
        rec = self.recording
        label = ox.NamedNode(ids.RDFS_LABEL)
        properties = {p for _, p, _ in rec.statements}
        for (subject, pid, _), value in rec.statements.items():
            yield ox.Triple(_entity(subject), _predicate(pid), _object(value))
        for eid, info in rec.info.items():
            node = _entity(eid)
            if info.label:
                yield ox.Triple(node, label, ox.Literal(info.label, language="en"))
            if info.description:
                yield ox.Triple(
                    node,
                    ox.NamedNode(ids.SCHEMA_DESCRIPTION),
                    ox.Literal(info.description, language="en"),
                )
            for alias in sorted(rec.aliases.get(eid, ())):
                yield ox.Triple(
                    node, ox.NamedNode(ids.SKOS_ALT_LABEL), ox.Literal(alias, language="en")
                )
            if eid in properties:
                yield ox.Triple(
                    node, ox.NamedNode(ids.RDF_TYPE), ox.NamedNode(ids.WIKIBASE_PROPERTY)
                )


def _entity(eid: str) -> ox.NamedNode:
    return ox.NamedNode((ids.WD if ids.is_qid(eid) or ids.is_pid(eid) else ids.LOCAL) + eid)


def _predicate(pid: str) -> ox.NamedNode:
    return ox.NamedNode((ids.WDT if ids.is_pid(pid) else ids.LOCAL_DIRECT) + pid)


def _object(value: dict[str, str]) -> ox.NamedNode | ox.Literal:
    """The RDF object of a recorded triple; a displayed date goes back to Wikidata's form."""
    if value["id"]:
        return _entity(value["id"])
    text = value["text"]
    if ids.format_value(f"{text}T00:00:00Z") == text:  # "1944-08-22" was a midnight date
        return ox.Literal(f"{text}T00:00:00Z", datatype=ox.NamedNode(ids.XSD_DATETIME))
    return ox.Literal(text)


def read_questions(path: str | Path) -> list[str]:
    """Questions from a file: ``.yaml``/``.yml``/``.json`` (a list of strings or of objects
    with a ``question`` field), ``.jsonl`` (objects with ``question``), or text, one per line
    (MetaQA ``question<TAB>answers`` lines keep the question)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml", ".json"):
            import yaml  # JSON is YAML

            items = yaml.safe_load(text) or []
        elif path.suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            return [line.split("\t")[0].strip() for line in text.splitlines() if line.strip()]
        return [item["question"] if isinstance(item, dict) else str(item) for item in items]
    except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:
        raise InputError(
            f"Cannot read questions from {path}: {exc}. Give a .txt file (one question per "
            "line), .jsonl, or a .yaml/.json list of questions or of {question: …} objects."
        ) from exc


def snapshot(
    questions: Iterable[str],
    kg: KnowledgeGraph,
    run_question: Callable[[str, KnowledgeGraph], Any],
    out: str | Path,
) -> Path:
    """Run each question with ``run_question(question, recording_kg)`` and write everything
    the runs read from ``kg`` to ``out`` (Turtle). A question that fails is logged and skipped;
    if every one fails, :class:`KGError` is raised and nothing is written."""
    recorder = RecordingKG(kg)
    done, failures = 0, []
    for question in questions:
        try:
            run_question(question, recorder.with_stats())
            done += 1
        except DTKGError as exc:
            failures.append(f"{question!r}: {exc}")
            log.warning("snapshot: question %r failed: %s", question, exc)
    if failures and not done:
        raise KGError(
            f"Snapshot: all {len(failures)} questions failed, nothing written. First error: "
            f"{failures[0]}"
        )
    path = recorder.write(out)
    log.info("snapshot: %d questions recorded into %s (%d failed)", done, path, len(failures))
    return path


def snapshot_questions(config: DTKGConfig, questions: str | Path, out: str | Path) -> Path:
    """``python -m dtkg snapshot``: run the pipeline on every question of the file against
    the KG ``config`` names, and write what it read to ``out``."""
    from dtkg.kg import open_kg
    from dtkg.pipeline import Pipeline

    def run(question: str, kg: KnowledgeGraph) -> None:
        for _event in Pipeline(config, kg=kg).run(question):
            pass

    return snapshot(read_questions(questions), open_kg(config), run, out)
