"""The Settings accordion's values → a per-request config (validated; bad values raise
:class:`ConfigError` with a message that says what to fix)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dtkg.config import BOUNDS, MODES, WIKIDATA_ENDPOINT, DTKGConfig
from dtkg.errors import ConfigError

KG_CHOICES = (
    ("Embedded Wikidata slice (offline)", "embedded"),
    ("Live Wikidata (query.wikidata.org)", "wikidata"),
    ("Custom SPARQL endpoint", "custom"),
)
KG_VALUES = tuple(value for _, value in KG_CHOICES)

# UI field name → (config field, is integer)
NUMERIC = {
    "alpha": ("alpha", False),
    "top_k": ("top_k_cosine", True),
    "width": ("width", True),
    "theta": ("theta", False),
    "max_depth": ("max_depth", True),
}
LABELS = {"alpha": "α", "top_k": "K", "width": "W_max", "theta": "θ", "max_depth": "D_max"}


@dataclass
class RequestSettings:
    """What one request asks for; ``None`` keeps the instance's default."""

    kg: str | None = None
    endpoint: str | None = None
    mode: str | None = None
    alpha: float | None = None
    top_k: float | None = None
    width: float | None = None
    theta: float | None = None
    max_depth: float | None = None


def kg_choice_of(config: DTKGConfig) -> str:
    """The KG radio value that matches a config."""
    if config.kg_backend == "embedded":
        return "embedded"
    return "wikidata" if config.kg_endpoint == WIKIDATA_ENDPOINT else "custom"


def check_endpoint(url: str, *, allow_private: bool) -> str:
    """A usable SPARQL endpoint URL, or :class:`ConfigError`. With ``allow_private`` False (a
    public Space) loopback, private and link-local hosts are refused."""
    url = (url or "").strip()
    if not url:
        raise ConfigError("Enter the SPARQL endpoint URL (e.g. https://query.wikidata.org/sparql).")
    if len(url) > 2000 or any(ch.isspace() for ch in url):
        raise ConfigError(
            "The SPARQL endpoint URL must be one line without spaces (≤ 2000 characters)."
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{url!r} is not an http(s) URL; a SPARQL endpoint looks like https://host/sparql."
        )
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"{url!r} has an invalid port.") from exc
    if parts.username or parts.password:
        raise ConfigError("Put no credentials in the endpoint URL.")
    if not allow_private and _is_private_host(parts.hostname):
        raise ConfigError(
            f"This instance does not query local or private addresses ({parts.hostname}); "
            "use a public SPARQL endpoint."
        )
    return url


def _is_private_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


def _number(name: str, value: Any) -> float | int:
    field, integer = NUMERIC[name]
    low, high = BOUNDS[field]
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{LABELS[name]} must be a number, got {value!r}.") from exc
    if not low <= number <= high:
        raise ConfigError(f"{LABELS[name]} must be between {low:g} and {high:g}, got {number:g}.")
    if integer:
        if number != int(number):
            raise ConfigError(f"{LABELS[name]} must be a whole number, got {number:g}.")
        return int(number)
    return number


def apply_settings(
    base: DTKGConfig, settings: RequestSettings, *, allow_private_endpoints: bool = True
) -> DTKGConfig:
    """``base`` with the request's settings applied via ``config.replace`` (validated)."""
    changes: dict[str, Any] = {}
    kg = settings.kg or None
    if kg is not None:
        if kg not in KG_VALUES:
            raise ConfigError(f"Unknown KG choice {kg!r}; choose one of {', '.join(KG_VALUES)}.")
        if kg == "embedded":
            changes["kg_backend"] = "embedded"
        elif kg == "wikidata":
            changes.update(kg_backend="wikidata", kg_endpoint=WIKIDATA_ENDPOINT)
        else:
            url = check_endpoint(settings.endpoint or "", allow_private=allow_private_endpoints)
            changes.update(kg_backend="wikidata", kg_endpoint=url)
    if settings.mode:
        if settings.mode not in MODES:
            raise ConfigError(f"Unknown mode {settings.mode!r}; choose one of {', '.join(MODES)}.")
        changes["mode"] = settings.mode
    for name, (field, _integer) in NUMERIC.items():
        value = getattr(settings, name)
        if value is not None and value != "":
            changes[field] = _number(name, value)
    return base.replace(**changes) if changes else base
