"""The knowledge-graph interface: one abstract method (a raw SPARQL SELECT); everything the
pipeline needs is built on it, so every backend runs the same query code (:mod:`.queries`).
"""

from __future__ import annotations

import copy
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

from dtkg.errors import KGError
from dtkg.kg import ids, queries
from dtkg.kg.cache import QueryCache
from dtkg.trace import Triple

Row = dict[str, str]
_STATS_LOCK = threading.Lock()
CHUNK = 200  # entities per VALUES clause; bigger sets take several queries


@dataclass
class EntityCandidate:
    qid: str
    label: str
    description: str = ""
    score: float = 0.0  # 1.0 exact label, lower for alias / fuzzy matches
    match: str = "exact"  # exact | alias | fuzzy
    matched: str = ""  # the label or alias text that matched


@dataclass
class EntityInfo:
    label: str | None = None
    description: str = ""


@dataclass
class KGStats:
    queries: int = 0  # queries actually sent to the store / endpoint
    cache_hits: int = 0
    cache_misses: int = 0


class KnowledgeGraph(ABC):
    """A Wikidata-shaped graph: entities ``Q…``, properties ``P…``, English labels."""

    name: str = "kg"
    source: str = ""  # where the data comes from (endpoint URL, file), for traces and the UI
    cache: QueryCache | None = None
    fuzzy_route: str = "sparql"  # sparql (portable scan) | mwapi (WDQS entity search)

    def __init__(self, *, result_limit: int = 300) -> None:
        self.stats = KGStats()
        self.result_limit = result_limit
        self._vocabulary: dict[int, list[str] | None] = {}  # see relation_labels

    @abstractmethod
    def _select(self, query: str) -> list[Row]:
        """Run a SPARQL SELECT; each row maps variable name → lexical value (IRIs as strings);
        unbound variables are absent. Raise :class:`~dtkg.errors.KGError` on any failure."""

    # ------------------------------------------------------------------ plumbing
    def select(self, query: str) -> list[Row]:
        """Run a SELECT through the cache (if any), counting queries, hits and misses."""
        if self.cache is not None:
            rows = self.cache.get(self.source, query)
            self._count(hits=rows is not None, misses=rows is None)
            if rows is not None:
                return rows
        rows = self._select(query)
        self._count(queries=1)
        if self.cache is not None:
            self.cache.put(self.source, query, rows)
        return rows

    def _count(self, queries: int = 0, hits: bool = False, misses: bool = False) -> None:
        with _STATS_LOCK:
            self.stats.queries += queries
            self.stats.cache_hits += int(hits)
            self.stats.cache_misses += int(misses)

    def with_stats(self) -> KnowledgeGraph:
        """A shallow copy sharing store, cache and connection, counting into fresh stats
        (one per question, so concurrent questions each see their own numbers)."""
        clone = copy.copy(self)
        clone.stats = KGStats()
        return clone

    def relation_labels(self, limit: int = 500) -> list[str] | None:
        """Every relation label this graph has, when it is small enough to list (at most
        ``limit``); None when too large (Wikidata has about 12,000 properties) or when the
        query fails. The chained track uses it to know which question words name relations
        before the search has reached them. Asked once per graph: ``with_stats`` copies
        share the answer."""
        if limit not in self._vocabulary:
            try:
                rows = self.select(queries.relation_vocabulary(limit))
            except KGError:
                return None  # not cached: a later question may ask again
            labels = sorted({row["label"] for row in rows if row.get("label")})
            self._vocabulary[limit] = labels if len(rows) <= limit else None
        return self._vocabulary[limit]

    # ------------------------------------------------------------------ entities
    def search_entities(
        self, text: str, limit: int = 5, *, fuzzy: bool = True
    ) -> list[EntityCandidate]:
        """Exact label, then alias (both case-insensitive), then — only when neither
        matched and ``fuzzy`` is on — fuzzy matches; ranked, best first. ``fuzzy=False``
        saves the fuzzy scan (the costliest query) where only exact names are wanted.

        Stores with search keys (the embedded backend) match case-insensitively by index;
        other endpoints try a few case variants, then the fuzzy route, whose normalised-equal
        hits rank as exact. Both give the same answers, except that keys also find a second
        label that differs from an exact hit only in spacing or unusual casing."""
        if not text.strip() or limit <= 0:
            return []
        key = ids.search_key(text)
        rows = self.select(queries.label_search(case_variants(text), key, max(50, 10 * limit)))
        found = rank_candidates(rows, text, fuzzy=False)
        if not found and fuzzy:
            found = rank_candidates(self.select(self._fuzzy_query(text, limit)), text, fuzzy=True)
        return found[:limit]

    def _fuzzy_query(self, text: str, limit: int) -> str:
        text = " ".join(text.split())
        if self.fuzzy_route == "mwapi":
            return queries.mwapi_search(text, max(20, 4 * limit))
        return queries.fuzzy_search(text, max(100, 20 * limit))

    def entity_info_many(self, entity_ids: Iterable[str]) -> dict[str, EntityInfo]:
        """English label and description of each entity (or property) that has one."""
        found: dict[str, EntityInfo] = {}
        for chunk in chunked(entity_ids):
            for row in self.select(queries.entity_info(chunk)):
                eid = ids.entity_id(row["e"])
                if eid is not None:
                    info = found.setdefault(eid, EntityInfo())
                    info.label = info.label or row.get("label")
                    info.description = info.description or row.get("desc", "")
        return found

    def entity_label(self, qid: str) -> str | None:
        return self.entity_info_many([ids.check_id(qid)]).get(qid, EntityInfo()).label

    def property_label(self, pid: str) -> str | None:
        return self.entity_info_many([ids.check_id(pid, "property")]).get(pid, EntityInfo()).label

    # ------------------------------------------------------------------ relations
    def head_relations(self, qid: str) -> list[Triple]:
        """Triples with ``qid`` as subject (truthy ``wdt:`` statements), labels filled in."""
        return self.head_relations_many([qid])[qid]

    def tail_relations(self, qid: str) -> list[Triple]:
        """Triples with ``qid`` as object."""
        return self.tail_relations_many([qid])[qid]

    def head_relations_many(self, qids: list[str]) -> dict[str, list[Triple]]:
        """One query for a whole layer of entities (per :data:`CHUNK` entities)."""
        return self._relations_many(qids, queries.head_relations, head=True)

    def tail_relations_many(self, qids: list[str]) -> dict[str, list[Triple]]:
        return self._relations_many(qids, queries.tail_relations, head=False)

    def _relations_many(
        self, qids: list[str], build: Callable[[list[str], int], str], head: bool
    ) -> dict[str, list[Triple]]:
        result: dict[str, list[Triple]] = {ids.check_id(q): [] for q in qids}
        for chunk in chunked(result):
            rows = self.select(build(chunk, self.result_limit))
            for focus, triple in rows_to_triples(rows, head=head):
                if focus in result:
                    result[focus].append(triple)
        return {q: _tidy(triples, self.result_limit) for q, triples in result.items()}


# ---------------------------------------------------------------------- helpers
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to"}


def case_variants(raw: str) -> list[str]:
    """Spellings to try as exact labels on stores without search keys (e.g. live Wikidata)."""
    text = " ".join(raw.split())
    words = text.lower().split()
    headline = " ".join(
        w if i and w in _SMALL_WORDS else w[:1].upper() + w[1:] for i, w in enumerate(words)
    )
    variants = [text, text.lower(), text[:1].upper() + text[1:], text.capitalize(), text.title()]
    return list(dict.fromkeys([raw, *variants, headline]))


def rank_candidates(rows: list[Row], text: str, fuzzy: bool) -> list[EntityCandidate]:
    """Score search rows against ``text``; the route a row came by does not matter, only the
    label/alias it matched, so every backend ranks identically."""
    key, spaced = ids.search_key(text), " ".join(text.split())
    best: dict[str, tuple[EntityCandidate, float]] = {}
    for row in rows:
        qid = ids.entity_id(row.get("item", ""))
        matched = row.get("matched", "")
        if qid is None or ids.is_pid(qid) or not matched:
            continue
        alias = row.get("how") == "alias"
        if ids.search_key(matched) == key:
            identical = matched in (text, spaced)
            score = (0.9 if identical else 0.85) if alias else (1.0 if identical else 0.95)
            match = "alias" if alias else "exact"
        elif fuzzy:
            ratio = SequenceMatcher(None, key, ids.search_key(matched)).ratio()
            score, match = round(0.8 * ratio, 4), "fuzzy"
        else:
            continue
        rank = float(row.get("rank", 0) or 0)
        candidate = EntityCandidate(
            qid, row.get("label") or matched, row.get("desc", ""), score, match, matched
        )
        if qid not in best or score > best[qid][0].score:
            best[qid] = (candidate, rank)
    ordered = sorted(best.values(), key=lambda cr: (-cr[0].score, cr[1], id_sort_key(cr[0].qid)))
    return [candidate for candidate, _ in ordered]


def rows_to_triples(rows: list[Row], head: bool) -> Iterable[tuple[str, Triple]]:
    """(focus id, triple) from relation-query rows; literal ends get object_id ``""``."""
    for row in rows:
        focus = ids.entity_id(row.get("e", ""))
        pid = ids.property_id(row.get("p", ""))
        if focus is None or pid is None:
            continue
        other = row.get("x", "")
        other_id = ids.entity_id(other) if row.get("xIri") in ("true", "1") else None
        other_label = (row.get("xLabel") or other_id) if other_id else ids.format_value(other)
        focus_label = row.get("eLabel") or focus
        relation = row.get("pLabel") or pid
        if head:
            yield focus, Triple(focus_label, focus, relation, pid, other_label, other_id or "")
        else:
            yield focus, Triple(other_label, other_id or "", relation, pid, focus_label, focus)


def id_sort_key(entity_id: str) -> tuple[int, str, int, str]:
    """Wikidata ids first, in natural order (Q5 < Q42 < Q100: lower ids are usually the
    better-known items), then local ids."""
    if ids.is_qid(entity_id) or ids.is_pid(entity_id):
        return (0, entity_id[0], int(entity_id[1:]), "")
    match = re.fullmatch(r"([A-Za-z_-]*?)(\d+)", entity_id)
    return (1, match[1], int(match[2]), "") if match else (1, entity_id, 0, entity_id)


def _tidy(triples: list[Triple], limit: int) -> list[Triple]:
    unique = {
        (t.subject_id or t.subject, t.relation_id, t.object_id or t.object): t for t in triples
    }
    ordered = sorted(
        unique.values(),
        key=lambda t: (id_sort_key(t.relation_id), t.subject, t.object, t.subject_id, t.object_id),
    )
    return ordered[:limit]


def chunked(values: Iterable[str], size: int = CHUNK) -> Iterable[list[str]]:
    unique = list(dict.fromkeys(ids.check_id(v) for v in values))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]
