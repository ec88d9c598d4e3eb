"""Example questions for the Answer tab, from ``examples/questions.yaml``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

EXAMPLES_FILE = Path(__file__).resolve().parents[2] / "examples" / "questions.yaml"
# Used only when the examples file is missing (e.g. the package installed without the repo).
FALLBACK = [
    {"question": "Who directed Inception?", "type": "parallel"},
    {"question": "Where was the director of Inception born?", "type": "chained"},
]


def load_examples(path: Path | None = None, limit: int = 24) -> list[dict[str, Any]]:
    """The ``{question, type, …}`` entries of the examples file (a list, or ``{questions:
    [...]}``); malformed entries are skipped; the fallback list when the file is absent."""
    path = path or EXAMPLES_FILE
    if not path.exists():
        return FALLBACK[:limit]
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - examples are a convenience, never fatal
        log.warning("cannot read examples from %s: %s", path, exc)
        return FALLBACK[:limit]
    if isinstance(data, dict):
        data = data.get("questions") or data.get("examples") or []
    items = [
        item
        for item in (data or [])
        if isinstance(item, dict)
        and isinstance(item.get("question"), str)
        and item["question"].strip()
    ]
    return items[:limit] or FALLBACK[:limit]
