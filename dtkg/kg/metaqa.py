"""Load a MetaQA / WikiMovies KB (``head|relation|tail`` lines) into the Wikidata store shape,
so benchmarks run through the real KG code.

Entities get local ids ``M1, M2, …`` in order of first appearance (deterministic for a given
file) and their name as English label; each relation becomes a local property whose id is the
relation name (``directed_by``) and whose label is readable (``directed by``). All tails are
entities, as in MetaQA (years and ratings are answer entities there too).
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from dtkg.errors import KGError
from dtkg.kg import ids


def relation_label(relation: str) -> str:
    """``directed_by`` → ``directed by``."""
    return relation.replace("_", " ").strip()


def read_triples(path: str | Path) -> list[tuple[str, str, str]]:
    """The ``(head, relation, tail)`` lines of a MetaQA KB file (blank lines skipped)."""
    triples = []
    relations: dict[str, int] = {}  # relation → first line, checked once each
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            parts = [part.strip() for part in line.split("|")]
            if len(parts) == 3 and all(parts):
                triples.append((parts[0], parts[1], parts[2]))
                relations.setdefault(parts[1], number)
            elif line.strip():
                raise KGError(
                    f"{path}:{number} is not a 'head|relation|tail' line: {line.strip()[:80]!r}. "
                    "Fix or remove that line (MetaQA kb.txt format)."
                )
    for relation, number in relations.items():
        if not ids.is_local_id(relation):
            raise KGError(
                f"{path}:{number}: relation {relation!r} is not a usable id (letters, digits, "
                "'_' or '-', starting with a letter)."
            )
    return triples


def load_metaqa(path: str | Path, store: ox.Store) -> dict[str, int]:
    """Add the KB at ``path`` to ``store``, with search keys (see
    :func:`dtkg.kg.embedded.add_search_keys`); returns counts (entities, relations, triples)."""
    from dtkg.kg.embedded import nt_string

    entity_iris: dict[str, str] = {}
    lines: list[str] = []

    def entity(name: str) -> str:
        iri = entity_iris.get(name)
        if iri is None:
            iri = entity_iris[name] = f"<{ids.LOCAL}M{len(entity_iris) + 1}>"
            lines.append(f"{iri} <{ids.RDFS_LABEL}> {nt_string(name)}@en .\n")
            lines.append(f"{iri} <{ids.LABEL_KEY}> {nt_string(ids.search_key(name))} .\n")
        return iri

    triples = read_triples(path)
    relations = sorted({relation for _, relation, _ in triples})
    for head, relation, tail in triples:
        lines.append(f"{entity(head)} <{ids.LOCAL_DIRECT}{relation}> {entity(tail)} .\n")
    for relation in relations:
        iri = f"<{ids.LOCAL}{relation}>"
        lines.append(f"{iri} <{ids.RDF_TYPE}> <{ids.WIKIBASE_PROPERTY}> .\n")
        lines.append(f"{iri} <{ids.RDFS_LABEL}> {nt_string(relation_label(relation))}@en .\n")
    store.bulk_load(input="".join(lines).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
    return {"entities": len(entity_iris), "relations": len(relations), "triples": len(triples)}
