"""Does a set of answer candidates fit the answer type the question asks for?

Values are recognised by their text (dates, quantities). Entities are checked against their
KG types (the objects of ``config.type_relations``, e.g. Wikidata's "instance of") when the
graph has them; for untyped graphs the check says "unknown" and the caller decides from the
path's shape. Only general English words are used (person, place, …).
"""

from __future__ import annotations

from collections.abc import Iterable

from dtkg.backends.embedding import Embedder
from dtkg.pipeline.compare import value_kind
from dtkg.pipeline.text import DATE, ENTITY, PERSON, PLACE, QUANTITY, AnswerType, stem, stems

_PERSON_WORDS = {"human", "person", "people", "character", "man", "woman", "deity", "saint"}
_PLACE_WORDS = {
    "city",
    "country",
    "town",
    "village",
    "place",
    "state",
    "region",
    "municipality",
    "capital",
    "location",
    "island",
    "continent",
    "province",
    "county",
    "district",
    "commune",
    "metropolis",
    "settlement",
    "territory",
    "borough",
    "neighborhood",
    "neighbourhood",
    "suburb",
    "prefecture",
    "republic",
    "kingdom",
    "nation",
    "area",
    "mountain",
    "river",
    "lake",
    "building",
    "headquarters",
    "campus",
    "site",
    "park",
}

YES, NO, UNKNOWN = "yes", "no", "unknown"


def fits(
    expected: AnswerType,
    labels: list[str],
    types: list[set[str]],
    embedder: Embedder,
    threshold: float,
    ids: list[str] | None = None,
) -> str:
    """yes | no | unknown: do answers with these labels (and type labels) fit ``expected``?
    ``ids`` ("" for a literal) lets plain strings (a category name, a code) be ruled out
    where an entity is asked for."""
    if not labels:
        return NO
    kinds = [value_kind(label) for label in labels]
    share_values = sum(k is not None for k in kinds) / len(kinds)
    if expected.kind == DATE:
        return YES if sum(k in ("date", "year") for k in kinds) / len(kinds) >= 0.5 else NO
    if expected.kind == QUANTITY:
        return YES if sum(k in ("quantity", "year") for k in kinds) / len(kinds) >= 0.5 else NO
    if expected.kind not in (PERSON, PLACE, ENTITY):
        return YES
    if ids is not None:  # an entity whose label starts with a number ("9 Songs") is no value
        kinds = [None if i else k for k, i in zip(kinds, ids)]
        share_values = sum(k is not None for k in kinds) / len(kinds)
    if ids is not None and share_values < 0.5 and not any(ids):
        return NO  # strings, not entities
    if share_values >= 0.5:
        noun = expected.noun or ""
        # "which year", "what rating": a value answers a question whose noun names it
        return YES if expected.kind == ENTITY and _noun_fits_values(noun, kinds) else NO
    typed = [t for t in types if t]
    if not typed:
        return UNKNOWN
    hits = sum(_type_fits(expected, t, embedder, threshold) for t in typed)
    return YES if hits / len(typed) >= 0.5 else NO


def _noun_fits_values(noun: str, kinds: Iterable[str | None]) -> bool:
    return (
        bool(noun)
        and any(k is not None for k in kinds)
        and noun.rstrip("s")
        in {
            "rating",
            "score",
            "vote",
            "number",
            "count",
            "amount",
            "population",
            "height",
            "length",
            "area",
            "value",
            "price",
            "budget",
            "revenue",
            "size",
            "age",
        }
    )


def _type_fits(
    expected: AnswerType, type_labels: set[str], embedder: Embedder, threshold: float
) -> bool:
    words = set().union(*(stems(t) for t in type_labels)) if type_labels else set()
    if expected.kind == PERSON:
        return bool(words & {stem(w) for w in _PERSON_WORDS})
    if expected.kind == PLACE:
        return bool(words & {stem(w) for w in _PLACE_WORDS})
    noun = expected.noun or ""
    if not noun:
        return True
    if stem(noun) in words:
        return True
    sims = embedder.similarity(noun, sorted(type_labels))
    return bool(len(sims) and float(sims.max()) >= threshold)


def aligned_with_types(
    word: str, type_labels: set[str], embedder: Embedder, threshold: float
) -> bool:
    """Does a question word ("country", "movie", "company") name one of these types?"""
    if not type_labels:
        return False
    if stem(word) in set().union(*(stems(t) for t in type_labels)):
        return True
    sims = embedder.similarity(word, sorted(type_labels))
    return bool(len(sims) and float(sims.max()) >= max(threshold, 0.7))
