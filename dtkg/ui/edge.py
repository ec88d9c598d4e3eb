"""Turning environment variables into ``create_app`` options (called from ``app.py`` only)."""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dtkg.config import DTKGConfig
from dtkg.errors import ConfigError

log = logging.getLogger(__name__)
TRUE = ("1", "true", "yes", "on")


SPACE_PROFILE = Path(__file__).resolve().parents[2] / "space_config" / "profile.toml"


def app_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment with the app's defaults: with neither DTKG_CONFIG nor DTKG_PROFILE set,
    a Space (``SPACE_ID``) uses ``space_config/profile.toml`` and anything else the ``auto``
    profile (the CLI's default stays ``cpu``)."""
    env = dict(environ)
    if not env.get("DTKG_CONFIG") and not env.get("DTKG_PROFILE"):
        if env.get("SPACE_ID") and SPACE_PROFILE.exists():
            env["DTKG_CONFIG"] = str(SPACE_PROFILE)
        else:
            env["DTKG_PROFILE"] = "auto"
    return env


def _int(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}.") from exc
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}.")
    return value


def requested_profile(environ: Mapping[str, str]) -> str:
    """The profile asked for (before ``auto`` is resolved): env, else the config file's."""
    if environ.get("DTKG_PROFILE"):
        return environ["DTKG_PROFILE"]
    path = environ.get("DTKG_CONFIG")
    if path and Path(path).exists():
        try:
            return str(tomllib.loads(Path(path).read_text(encoding="utf-8")).get("profile", "cpu"))
        except tomllib.TOMLDecodeError:
            return "cpu"
    return "cpu"


def profile_note(config: DTKGConfig, environ: Mapping[str, str]) -> str:
    """Says why ``auto`` chose this profile (shown in the About tab); '' for explicit ones."""
    if requested_profile(environ) != "auto":
        return ""
    from dtkg.backends.transformers_llm import cuda_available

    if config.profile == "gpu":
        why = "CUDA found and the LLM weights are reachable"
    elif cuda_available():
        why = "CUDA found but the LLM weights are unreachable (gated model without HF_TOKEN?)"
    else:
        why = "no CUDA device found, so the offline cpu profile runs"
    return f"chosen by `auto`: {why}"


def app_options(config: DTKGConfig, environ: Mapping[str, str]) -> dict[str, Any]:
    """``create_app`` keyword arguments from the environment."""
    on_space = bool(environ.get("SPACE_ID"))
    default_concurrency = 4 if config.profile in ("gpu", "remote") else 2
    options: dict[str, Any] = {
        "concurrency_limit": _int(environ, "DTKG_CONCURRENCY", default_concurrency, 1, 64),
        "max_queue": _int(environ, "DTKG_QUEUE_SIZE", 64, 1, 10_000),
        "allow_private_endpoints": (
            environ.get("DTKG_ALLOW_PRIVATE_ENDPOINTS", "").lower() in TRUE or not on_space
        ),
        "profile_note": profile_note(config, environ),
    }
    if environ.get("DTKG_FAKE_PIPELINE", "").lower() in TRUE:
        from dtkg.ui.fake import FakePipeline

        options["pipeline_factory"] = FakePipeline
    return options


def should_preload(environ: Mapping[str, str]) -> bool:
    """Load the models at start-up (needed on ZeroGPU; optional elsewhere)."""
    from dtkg.ui.gpu import on_zero_gpu

    return environ.get("DTKG_PRELOAD", "").lower() in TRUE or on_zero_gpu()


def preload(config: DTKGConfig) -> None:
    """Load the shared backends now instead of on the first question."""
    from dtkg.ui.app import shared_backends

    for what, backend in shared_backends(config):
        if backend is not None:
            backend.load(lambda message, what=what: log.info("%s: %s", what, message))
