"""Entity / property ids, their IRIs, and the strict checks ids pass before entering a query.

Two namespaces hold entities: Wikidata's (``wd:Q42``, ``wd:P57`` with direct claims
``wdt:P57``) and a local one for things that are not (or not surely) Wikidata items: the
slice's unsure entities and the MetaQA KB. An id is the IRI's last segment. A Wikidata-shaped
id (``Q42``/``P57``) may live in either namespace, so queries ask for both IRIs.
"""

from __future__ import annotations

import re
import unicodedata

from dtkg.errors import KGError

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LOCAL = "https://dtkg-demo.invalid/entity/"
LOCAL_DIRECT = "https://dtkg-demo.invalid/prop/direct/"
VOCAB = "https://dtkg-demo.invalid/vocab/"  # dtkg's own helper predicates (search keys)

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SCHEMA_DESCRIPTION = "http://schema.org/description"
SKOS_ALT_LABEL = "http://www.w3.org/2004/02/skos/core#altLabel"
WIKIBASE_PROPERTY = "http://wikiba.se/ontology#Property"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
LABEL_KEY = VOCAB + "labelKey"
ALIAS_KEY = VOCAB + "aliasKey"

_QID = re.compile(r"Q[1-9][0-9]{0,11}")
_PID = re.compile(r"P[1-9][0-9]{0,11}")
# Local ids: a letter, then letters, digits, "_" or "-" (safe inside an IRI and readable).
_LOCAL_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}")
_DATE = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)T00:00:00Z")


def is_qid(value: str) -> bool:
    return isinstance(value, str) and _QID.fullmatch(value) is not None


def is_pid(value: str) -> bool:
    return isinstance(value, str) and _PID.fullmatch(value) is not None


def is_local_id(value: str) -> bool:
    return isinstance(value, str) and _LOCAL_ID.fullmatch(value) is not None


def check_id(value: object, kind: str = "entity") -> str:
    """Return ``value`` if it is a well-formed entity/property id, else raise :class:`KGError`."""
    if isinstance(value, str) and (is_qid(value) or is_pid(value) or is_local_id(value)):
        return value
    raise KGError(
        f"{value!r} is not a valid {kind} id. Use a Wikidata id such as 'Q42' / 'P57', or a "
        "local id (a letter followed by letters, digits, '_' or '-')."
    )


def entity_iris(entity_id: str) -> list[str]:
    """The IRIs an id may denote (checked first): Wikidata-shaped ids in both namespaces."""
    check_id(entity_id)
    if is_qid(entity_id) or is_pid(entity_id):
        return [WD + entity_id, LOCAL + entity_id]
    return [LOCAL + entity_id]


def direct_property_iris(pid: str) -> list[str]:
    """The predicate IRIs (truthy statements) of property ``pid``."""
    check_id(pid, "property")
    if is_pid(pid):
        return [WDT + pid, LOCAL_DIRECT + pid]
    return [LOCAL_DIRECT + pid]


def entity_id(iri: str) -> str | None:
    """The id of an entity IRI of either namespace; ``None`` for any other IRI or value."""
    if iri.startswith(WD):
        local = iri[len(WD) :]
        return local if is_qid(local) or is_pid(local) else None
    if iri.startswith(LOCAL):
        local = iri[len(LOCAL) :]
        return local if is_local_id(local) else None
    return None


def property_id(iri: str) -> str | None:
    """The property id of a direct-claim predicate IRI (``wdt:P57`` → ``P57``), else ``None``."""
    if iri.startswith(WDT):
        local = iri[len(WDT) :]
        return local if is_pid(local) else None
    if iri.startswith(LOCAL_DIRECT):
        local = iri[len(LOCAL_DIRECT) :]
        return local if is_local_id(local) else None
    return None


def format_value(lexical: str) -> str:
    """A literal for display: Wikidata's midnight dates ``1952-03-11T00:00:00Z`` → ``1952-03-11``."""
    match = _DATE.fullmatch(lexical)
    return "-".join(match.groups()) if match else lexical


def search_key(text: str) -> str:
    """Normalised form for case-insensitive exact matching (NFKC, casefold, single spaces)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
