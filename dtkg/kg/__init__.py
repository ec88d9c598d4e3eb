"""The knowledge-graph layer: one interface (:class:`KnowledgeGraph`), backends by name.

``open_kg(config)`` picks the backend from ``config.kg_backend``:

- ``"embedded"``: pyoxigraph in process, from ``config.kg_file`` (``.ttl``/``.nt``; a ``.txt``
  path is read as a MetaQA ``head|relation|tail`` KB) or the slice the package ships;
- ``"wikidata"``: SPARQL over HTTP to ``config.kg_endpoint`` (default: the Wikidata Query
  Service);
- an ``http(s)://`` URL: SPARQL over HTTP to that URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtkg.errors import ConfigError
from dtkg.kg.base import EntityCandidate, EntityInfo, KGStats, KnowledgeGraph

if TYPE_CHECKING:
    from dtkg.config import DTKGConfig

__all__ = ["EntityCandidate", "EntityInfo", "KGStats", "KnowledgeGraph", "open_kg"]


def open_kg(config: DTKGConfig) -> KnowledgeGraph:
    """The knowledge graph ``config`` names (see the module docstring)."""
    backend = (config.kg_backend or "").strip()
    if backend == "embedded":
        from dtkg.kg.embedded import EmbeddedKG

        return EmbeddedKG(config.kg_file, result_limit=config.kg_result_limit)
    if backend == "wikidata" or backend.startswith(("http://", "https://")):
        from dtkg.kg.sparql_endpoint import SparqlKG

        return SparqlKG(
            config.kg_endpoint if backend == "wikidata" else backend,
            user_agent=config.kg_user_agent,
            timeout=config.kg_timeout,
            max_in_flight=config.kg_max_in_flight,
            retries=config.kg_retries,
            cache_dir=config.kg_cache_dir,
            cache_ttl=config.kg_cache_ttl,
            result_limit=config.kg_result_limit,
            entity_search=getattr(config, "kg_entity_search", "auto"),
        )
    raise ConfigError(
        f"Unknown knowledge graph {backend!r}: use 'embedded', 'wikidata' or the URL of a "
        "SPARQL endpoint (http:// or https://)."
    )
