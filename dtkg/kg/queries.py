"""Every SPARQL query dtkg sends, in one place (paper appendix B.1, made portable).

Labels come from ``rdfs:label`` (not the ``wikibase:label`` service), so the same text runs
on the Wikidata Query Service, on ``oxigraph serve`` and on the embedded pyoxigraph store.
User text enters a query only through :func:`literal`; ids only after :mod:`dtkg.kg.ids`
checked them, and always as full ``<IRI>``s.
"""

from __future__ import annotations

from collections.abc import Iterable

from dtkg.kg import ids

PREFIXES = f"""PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX schema: <http://schema.org/>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX dtkg: <{ids.VOCAB}>
"""

# Variables the relation queries bind (the base class reads these names).
# ?e focus entity, ?eLabel; ?p predicate, ?pLabel; ?x the other end, ?xLabel, ?xIri (bool).


def _surrogate_free(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8") if _has_surrogates(text) else text


def _has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


_ECHAR = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def escape_string(text: str) -> str:
    """The body of a double-quoted SPARQL string literal that denotes exactly ``text``.

    Quotes, backslashes and line breaks use SPARQL's ECHAR escapes; other control characters
    become ``\\uXXXX``. A ``u``/``U`` right after a backslash is written ``\\u0075``/``\\u0055``,
    because SPARQL lets servers expand ``\\u`` escapes *before* tokenising, which would
    otherwise turn the text ``\\u0022`` into a quote. Lone surrogates (not encodable) become
    U+FFFD. Braces, ``#``, ``'`` and non-ASCII characters are safe inside the literal as is.
    """
    out: list[str] = []
    previous = ""
    for ch in _surrogate_free(text):
        if ch in _ECHAR:
            out.append(_ECHAR[ch])
        elif (ch in "uU" and previous == "\\") or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
        previous = ch
    return "".join(out)


def literal(text: str, lang: str | None = "en") -> str:
    """A complete SPARQL literal, ``"…"@en`` by default (``lang=None``: a plain string)."""
    body = f'"{escape_string(text)}"'
    return f"{body}@{lang}" if lang else body


def _iris(values: Iterable[str]) -> str:
    return " ".join(f"<{iri}>" for iri in values)


def _entity_values(entity_ids: Iterable[str]) -> str:
    return _iris(iri for eid in entity_ids for iri in ids.entity_iris(eid))


_IS_DIRECT = f'(STRSTARTS(STR(?p), "{ids.WDT}") || STRSTARTS(STR(?p), "{ids.LOCAL_DIRECT}"))'
_IS_ITEM = f'(STRSTARTS(STR(?item), "{ids.WD}Q") || STRSTARTS(STR(?item), "{ids.LOCAL}"))'
# The property entity of a direct-claim predicate: …/prop/direct/P57 → …/entity/P57. The
# "a wikibase:Property" keeps the optional's right side small (oxigraph hash-joins it).
_PROPERTY_LABEL = """BIND(IRI(REPLACE(STR(?p), "/prop/direct/", "/entity/")) AS ?prop)
  OPTIONAL { ?prop a wikibase:Property ; rdfs:label ?pLabel . FILTER(LANG(?pLabel) = "en") }"""


def label_search(variants: Iterable[str], key: str, limit: int) -> str:
    """Items whose English label or alias is one of ``variants`` (exact strings), or whose
    stored search key equals ``key`` (stores that have keys answer case-insensitively fast).

    Binds ?item ?label ?desc ?matched ?how ("label" | "alias").
    """
    values = " ".join(literal(v) for v in variants)
    key_lit = literal(key, lang=None)
    return f"""{PREFIXES}SELECT DISTINCT ?item ?label ?desc ?matched ?how WHERE {{
  {{ VALUES ?matched {{ {values} }} ?item rdfs:label ?matched . BIND("label" AS ?how) }}
  UNION {{ ?item dtkg:labelKey {key_lit} ; rdfs:label ?matched . BIND("label" AS ?how) }}
  UNION {{ VALUES ?matched {{ {values} }} ?item skos:altLabel ?matched . BIND("alias" AS ?how) }}
  UNION {{ ?item dtkg:aliasKey {key_lit} ; skos:altLabel ?matched . BIND("alias" AS ?how) }}
  FILTER(LANG(?matched) = "en" && {_IS_ITEM})
  FILTER NOT EXISTS {{ ?item a wikibase:Property }}
  OPTIONAL {{ ?item rdfs:label ?label . FILTER(LANG(?label) = "en") }}
  OPTIONAL {{ ?item schema:description ?desc . FILTER(LANG(?desc) = "en") }}
}} LIMIT {int(limit)}"""


def fuzzy_search(needle: str, limit: int) -> str:
    """Portable fuzzy search: labels/aliases containing ``needle`` (lower-cased), shortest
    first. A scan; fine for the embedded graphs, too slow for the full Wikidata (use mwapi)."""
    lit = literal(needle.lower(), lang=None)
    return f"""{PREFIXES}SELECT ?item ?label ?desc ?matched ?how WHERE {{
  {{ ?item rdfs:label ?matched . BIND("label" AS ?how) }}
  UNION {{ ?item skos:altLabel ?matched . BIND("alias" AS ?how) }}
  FILTER(LANG(?matched) = "en" && {_IS_ITEM})
  FILTER(CONTAINS(LCASE(STR(?matched)), {lit}))
  FILTER NOT EXISTS {{ ?item a wikibase:Property }}
  OPTIONAL {{ ?item rdfs:label ?label . FILTER(LANG(?label) = "en") }}
  OPTIONAL {{ ?item schema:description ?desc . FILTER(LANG(?desc) = "en") }}
}} ORDER BY STRLEN(STR(?matched)) STR(?item) LIMIT {int(limit)}"""


def mwapi_search(text: str, limit: int) -> str:
    """Wikidata's own entity search (wbsearchentities) through the WDQS ``mwapi`` service:
    case-insensitive prefix matching on labels and aliases, ranked by Wikidata. WDQS only."""
    return f"""{PREFIXES}PREFIX bd: <http://www.bigdata.com/rdf#>
PREFIX mwapi: <https://www.mediawiki.org/ontology#API/>
SELECT ?item ?label ?desc ?matched ?how ?rank WHERE {{
  SERVICE wikibase:mwapi {{
    bd:serviceParam wikibase:endpoint "www.wikidata.org" ;
                    wikibase:api "EntitySearch" ;
                    mwapi:search {literal(text, lang=None)} ;
                    mwapi:language "en" ;
                    wikibase:limit {int(limit)} .
    ?item wikibase:apiOutputItem mwapi:item .
    ?rank wikibase:apiOrdinal true .
  }}
  ?item rdfs:label ?label . FILTER(LANG(?label) = "en")
  BIND(?label AS ?matched) BIND("label" AS ?how)
  OPTIONAL {{ ?item schema:description ?desc . FILTER(LANG(?desc) = "en") }}
}} ORDER BY ?rank"""


def entity_info(entity_ids: Iterable[str]) -> str:
    """English label and description of entities. Binds ?e ?label ?desc."""
    return f"""{PREFIXES}SELECT ?e ?label ?desc WHERE {{
  VALUES ?e {{ {_entity_values(entity_ids)} }}
  OPTIONAL {{ ?e rdfs:label ?label . FILTER(LANG(?label) = "en") }}
  OPTIONAL {{ ?e schema:description ?desc . FILTER(LANG(?desc) = "en") }}
  FILTER(BOUND(?label) || BOUND(?desc))
}}"""


_RELATION_TAIL = f"""  BIND(ISIRI(?x) AS ?xIri)
  {_PROPERTY_LABEL}
  OPTIONAL {{ ?e rdfs:label ?eLabel . FILTER(LANG(?eLabel) = "en") }}
  OPTIONAL {{ ?x rdfs:label ?xLabel . FILTER(LANG(?xLabel) = "en") }}
}}"""


def _per_entity(entity_ids: Iterable[str], pattern: str, limit: int) -> str:
    """A UNION of one sub-select per entity, each with its own LIMIT, so a hub entity cannot
    use up the rows of the others in the same (single) query."""
    parts = [
        f"{{ SELECT ?e ?p ?x WHERE {{ VALUES ?e {{ {_entity_values([eid])} }} {pattern} }} "
        f"LIMIT {int(limit)} }}"
        for eid in entity_ids
    ]
    return "\n  UNION ".join(parts)


def head_relations(entity_ids: Iterable[str], limit: int) -> str:
    """Truthy statements with the entities as subject (paper: get_head_relations), at most
    ``limit`` per entity."""
    pattern = (
        f"?e ?p ?x . FILTER{_IS_DIRECT} "
        'FILTER(!ISLITERAL(?x) || LANG(?x) = "" || LANGMATCHES(LANG(?x), "en"))'
    )
    return f"""{PREFIXES}SELECT ?e ?eLabel ?p ?pLabel ?x ?xLabel ?xIri WHERE {{
  {_per_entity(entity_ids, pattern, limit)}
{_RELATION_TAIL}"""


def tail_relations(entity_ids: Iterable[str], limit: int) -> str:
    """Truthy statements with the entities as object (paper: get_tail_relations), at most
    ``limit`` per entity."""
    pattern = f"?x ?p ?e . FILTER{_IS_DIRECT}"
    return f"""{PREFIXES}SELECT ?e ?eLabel ?p ?pLabel ?x ?xLabel ?xIri WHERE {{
  {_per_entity(entity_ids, pattern, limit)}
{_RELATION_TAIL}"""


def property_values(entity_ids: Iterable[str], pids: Iterable[str], limit: int) -> str:
    """Statements of the given properties only (e.g. P31 of a set of items); same bindings
    as :func:`head_relations`; ``limit`` in total."""
    predicates = _iris(iri for pid in pids for iri in ids.direct_property_iris(pid))
    return f"""{PREFIXES}SELECT ?e ?eLabel ?p ?pLabel ?x ?xLabel ?xIri WHERE {{
  {{ SELECT ?e ?p ?x WHERE {{
    VALUES ?e {{ {_entity_values(entity_ids)} }} VALUES ?p {{ {predicates} }} ?e ?p ?x .
  }} LIMIT {int(limit)} }}
{_RELATION_TAIL}"""


def relation_vocabulary(limit: int) -> str:
    """English labels of the declared properties (small stores only: the caller gives up
    beyond ``limit``)."""
    return f"""{PREFIXES}SELECT DISTINCT ?label WHERE {{
  ?prop a wikibase:Property ; rdfs:label ?label . FILTER(LANG(?label) = "en")
}} LIMIT {int(limit) + 1}"""
