"""The ``embedded`` backend: an in-process pyoxigraph store, loaded once per process per file.

Files: Turtle / N-Triples in Wikidata's truthy shape (the shipped slice), or a MetaQA
``head|relation|tail`` KB (``.txt``, see :mod:`.metaqa`). At load time each English label and
alias also gets a normalised search-key literal (``dtkg:labelKey``), so case-insensitive exact
search is an index lookup instead of a scan; the query text is the same as for endpoints.
"""

from __future__ import annotations

import threading
import time
from importlib.resources import files
from pathlib import Path

import pyoxigraph as ox

from dtkg.errors import KGError
from dtkg.kg import ids
from dtkg.kg.base import KnowledgeGraph, Row

_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES}
_STORES: dict[tuple[str, int, int], ox.Store] = {}
_STORES_LOCK = threading.Lock()


def shipped_slice() -> Path:
    """The Wikidata slice that ships inside the package."""
    return Path(str(files("dtkg.kg") / "data" / "wikidata_slice.ttl"))


def load_store(path: str | Path) -> ox.Store:
    """The store for ``path``, loaded on first use and reused (keyed by path, mtime, size)."""
    path = Path(path).expanduser().resolve()
    try:
        stat = path.stat()
    except OSError as exc:
        raise KGError(
            f"Knowledge-graph file {path} cannot be read ({exc.strerror}). Set kg_file to an "
            "existing .ttl/.nt file or a MetaQA kb.txt, or use --kg wikidata."
        ) from exc
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _STORES_LOCK:  # one loader at a time; others wait and then reuse the result
        if key not in _STORES:
            for stale in [k for k in _STORES if k[0] == key[0]]:  # the file changed on disk
                del _STORES[stale]
            _STORES[key] = _load(path)
        return _STORES[key]


def _load(path: Path) -> ox.Store:
    store = ox.Store()
    if path.suffix == ".txt":
        from dtkg.kg.metaqa import load_metaqa

        load_metaqa(path, store)  # writes its search keys itself
        return store
    if path.suffix in _FORMATS:
        try:
            store.bulk_load(path=str(path), format=_FORMATS[path.suffix])
        except SyntaxError as exc:
            raise KGError(
                f"{path} is not valid {path.suffix[1:].upper()}: {exc}. "
                f"Check it with `python -m dtkg.kg.validate {path}`."
            ) from exc
    else:
        raise KGError(
            f"Cannot load {path}: unknown extension {path.suffix!r}. Use .ttl (Turtle), "
            ".nt (N-Triples) or .txt (MetaQA head|relation|tail)."
        )
    add_search_keys(store)
    return store


def add_search_keys(store: ox.Store) -> None:
    """Add ``dtkg:labelKey`` / ``dtkg:aliasKey`` literals (see :func:`ids.search_key`)."""
    lines = []
    for source, target in ((ids.RDFS_LABEL, ids.LABEL_KEY), (ids.SKOS_ALT_LABEL, ids.ALIAS_KEY)):
        for quad in store.quads_for_pattern(None, ox.NamedNode(source), None, ox.DefaultGraph()):
            obj, subject = quad.object, quad.subject
            english = isinstance(obj, ox.Literal) and obj.language == "en"
            if english and isinstance(subject, ox.NamedNode):
                key = nt_string(ids.search_key(obj.value))
                lines.append(f"<{subject.value}> <{target}> {key} .\n")
    store.bulk_load(input="".join(lines).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)


def nt_string(text: str) -> str:
    """A quoted N-Triples string literal denoting ``text`` (bulk loading text is much faster
    than building pyoxigraph objects)."""
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates → "?"
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


class EmbeddedKG(KnowledgeGraph):
    """In-process SPARQL over a pyoxigraph store (reads are thread-safe)."""

    name = "embedded"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: ox.Store | None = None,
        result_limit: int = 300,
    ) -> None:
        super().__init__(result_limit=result_limit)
        if store is None:
            path = Path(path) if path else shipped_slice()
            if path == shipped_slice() and not path.exists():
                raise KGError(
                    f"The Wikidata slice that ships with dtkg is missing ({path}). Reinstall "
                    "the package, set kg_file to a .ttl file, or use --kg wikidata."
                )
            started = time.perf_counter()
            store = load_store(path)
            self.load_seconds = time.perf_counter() - started
        self.store = store
        self.source = str(path) if path else "in-memory store"

    def _select(self, query: str) -> list[Row]:
        try:
            solutions = self.store.query(query)
            names = [v.value for v in solutions.variables]
            return [
                {
                    name: term.value
                    for name, term in zip(names, solution, strict=True)
                    if term is not None
                }
                for solution in solutions
            ]
        except (SyntaxError, OSError, ValueError) as exc:
            raise KGError(
                f"The embedded store ({self.source}) failed a query: {exc}. This is a bug in "
                "dtkg's query text; please report it with the question that caused it."
            ) from exc
