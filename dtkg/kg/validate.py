"""Check a Wikidata-shaped RDF file (the shipped slice, a snapshot) before it ships.

Rules: ids well formed (``wd:Q…``/``wd:P…`` or local ids), only known predicates, every
referenced entity and every used property has exactly one English label, every used property
is declared ``a wikibase:Property``, every item with statements has ``wdt:P31``, dates are
well formed, no duplicate statements, no id in both namespaces.

    python -m dtkg.kg.validate [FILE]     # default: the slice shipped in the package
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from dtkg.kg import ids

MAX_PER_KIND = 25  # problems listed per kind; the rest are counted
_DESCRIPTIVE = {ids.RDFS_LABEL, ids.SCHEMA_DESCRIPTION, ids.SKOS_ALT_LABEL}
_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES}
_DATETIME = re.compile(r"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@dataclass
class SliceSummary:
    triples: int = 0
    statements: int = 0  # truthy wdt: statements
    entities: int = 0  # entities with a label (items and properties)
    items: int = 0  # entities that are the subject of a statement
    properties: int = 0  # properties used in statements
    problems: list[str] = field(default_factory=list)


class _Problems:
    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = defaultdict(list)

    def add(self, kind: str, message: str) -> None:
        self.by_kind[kind].append(message)

    def listing(self) -> list[str]:
        out: list[str] = []
        for messages in self.by_kind.values():
            out += messages[:MAX_PER_KIND]
            if len(messages) > MAX_PER_KIND:
                out.append(f"… and {len(messages) - MAX_PER_KIND} more like the above")
        return out


def _term(term: object) -> str:
    return str(term)


def summarize(path: str | Path) -> SliceSummary:
    """Counts and the list of problems of the RDF file at ``path``."""
    path = Path(path)
    summary = SliceSummary()
    problems = _Problems()
    fmt = _FORMATS.get(path.suffix)
    if fmt is None:
        summary.problems = [f"{path}: unknown extension {path.suffix!r} (use .ttl or .nt)"]
        return summary

    seen: Counter[tuple[str, str, str]] = Counter()
    labels: Counter[str] = Counter()  # entity iri → number of English labels
    referenced: set[str] = set()
    declared_properties: set[str] = set()
    used_predicates: set[str] = set()
    subjects_with_statements: set[str] = set()
    has_p31: set[str] = set()
    try:
        for quad in ox.parse(path=str(path), format=fmt):
            summary.triples += 1
            s, p, o = quad.subject, quad.predicate, quad.object
            seen[(_term(s), _term(p), _term(o))] += 1
            if not isinstance(s, ox.NamedNode) or ids.entity_id(s.value) is None:
                problems.add("subject", f"subject {_term(s)} is not a wd: or local entity IRI")
                continue
            subject = s.value
            if p.value in _DESCRIPTIVE:
                if not isinstance(o, ox.Literal):
                    problems.add("label", f"{_term(p)} of {subject} is not a literal")
                elif p.value == ids.RDFS_LABEL and o.language == "en":
                    labels[subject] += 1
            elif p.value == ids.RDF_TYPE:
                if isinstance(o, ox.NamedNode) and o.value == ids.WIKIBASE_PROPERTY:
                    declared_properties.add(subject)
                else:
                    problems.add("type", f"{subject} has rdf:type {_term(o)}; use wdt:P31")
            elif ids.property_id(p.value) is not None:
                summary.statements += 1
                used_predicates.add(p.value)
                subjects_with_statements.add(subject)
                referenced.add(subject)
                if ids.property_id(p.value) == "P31":
                    has_p31.add(subject)
                _check_object(subject, p.value, o, referenced, problems)
            else:
                problems.add("predicate", f"unexpected predicate {_term(p)} (on {subject})")
    except (SyntaxError, OSError, ValueError) as exc:
        summary.problems = [f"{path} cannot be parsed: {exc}"]
        return summary

    for triple, count in seen.items():
        if count > 1:
            problems.add("duplicate", f"duplicate statement ({count}×): {' '.join(triple)}")
    properties = set()
    for predicate in sorted(used_predicates):
        pid = ids.property_id(predicate)
        entity = predicate.replace("/prop/direct/", "/entity/")
        properties.add(pid)
        if labels[entity] == 0:
            problems.add("property-label", f"property {pid} has no English label")
        if entity not in declared_properties:
            problems.add("property-type", f"property {pid} is not declared a wikibase:Property")
        referenced.discard(entity)
    for entity in sorted(referenced):
        if labels[entity] == 0:
            problems.add("label", f"entity {ids.entity_id(entity)} ({entity}) has no English label")
    for entity, count in sorted(labels.items()):
        if count > 1:
            problems.add("label", f"entity {ids.entity_id(entity)} has {count} English labels")
    for entity in sorted(subjects_with_statements - has_p31 - declared_properties):
        problems.add("p31", f"item {ids.entity_id(entity)} has statements but no wdt:P31")
    local_ids = {ids.entity_id(e) for e in labels if e.startswith(ids.LOCAL)}
    for entity in sorted(e for e in labels if e.startswith(ids.WD)):
        if ids.entity_id(entity) in local_ids:
            problems.add("ambiguous", f"id {ids.entity_id(entity)} exists in both namespaces")

    summary.entities = len(labels)
    summary.items = len(subjects_with_statements)
    summary.properties = len(properties)
    summary.problems = problems.listing()
    return summary


def _check_object(
    subject: str, predicate: str, obj: object, referenced: set[str], problems: _Problems
) -> None:
    if isinstance(obj, ox.NamedNode):
        if obj.value.startswith((ids.WD, ids.LOCAL)):
            if ids.entity_id(obj.value) is None:
                problems.add("id", f"malformed entity IRI {obj.value} (object of {subject})")
            else:
                referenced.add(obj.value)
    elif isinstance(obj, ox.Literal):
        if obj.datatype.value == ids.XSD_DATETIME and not _DATETIME.fullmatch(obj.value):
            problems.add("date", f"malformed date {obj.value!r} ({subject} {predicate})")
    else:
        problems.add("object", f"blank node object in {subject} {predicate}")


def validate(path: str | Path) -> list[str]:
    """The problems of the RDF file at ``path`` (empty when it is fine)."""
    return summarize(path).problems


def main(argv: list[str] | None = None) -> int:
    from dtkg.kg.embedded import shipped_slice

    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print(__doc__)
        return 2
    path = Path(args[0]) if args else shipped_slice()
    if not path.exists():
        print(f"{path} does not exist.", file=sys.stderr)
        return 2
    summary = summarize(path)
    print(
        f"{path}: {summary.triples} triples, {summary.statements} statements, "
        f"{summary.entities} labelled entities ({summary.items} with statements), "
        f"{summary.properties} properties"
    )
    for problem in summary.problems:
        print(f"  - {problem}")
    print("OK" if not summary.problems else f"{len(summary.problems)} problem line(s)")
    return 1 if summary.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
