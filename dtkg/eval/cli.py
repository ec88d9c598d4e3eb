"""``python -m dtkg.eval DATASET --data PATH ...``: run a benchmark through the same pipeline a
user runs, print a metrics table, write per-question JSONL and a JSON report.

Examples (from the repository root)::

    python -m dtkg.eval metaqa --data ../shared/data/metaqa/2-hop/qa_dev.txt \\
        --kb ../shared/data/metaqa/kb.txt --limit 500 --mode only-chain --out /tmp/r.json
    python -m dtkg.eval hotpotqa --data ../shared/data/hotpotqa/dev_sample.jsonl \\
        --routing-only --out /tmp/routing.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dtkg.cli import build_config
from dtkg.config import MODES, PROFILES, DTKGConfig
from dtkg.errors import ConfigError, DTKGError
from dtkg.eval import datasets, metrics, runner

PipelineFactory = Callable[[DTKGConfig], Callable[[str], Any]]
ClassifierFactory = Callable[[DTKGConfig], Callable[[str], Any]]


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``["width=3", "theta=0.25", "classify_with=llm"]`` → typed config overrides (the type
    follows the field's default; lists are comma-separated)."""
    defaults = {f.name: f.default for f in dataclasses.fields(DTKGConfig)}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {pair!r}.")
        if key not in defaults:
            raise ConfigError(f"Unknown setting {key!r} in --set; see dtkg.config.DTKGConfig.")
        out[key] = _coerce(key, raw.strip(), defaults[key])
    return out


def _coerce(key: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, tuple):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise ConfigError(f"--set {key}: cannot read {raw!r} as {type(default).__name__}.") from exc
    if raw.lower() in ("none", "null") and default is None:
        return None
    return raw


def default_pipeline(config: DTKGConfig) -> Callable[[str], Any]:
    """The user's pipeline: ``Pipeline(config).answer``."""
    from dtkg.pipeline import Pipeline

    return Pipeline(config).answer


def default_classifier(config: DTKGConfig) -> Callable[[str], Any]:
    """The pipeline's classifier with the profile's backends (the LLM only when
    ``classify_with = "llm"``)."""
    from dtkg.backends import get_embedder, get_llm
    from dtkg.pipeline.classify import classify

    llm = get_llm(config) if config.classify_with == "llm" else None
    embedder = get_embedder(config)
    return lambda question: classify(question, config, llm=llm, embedder=embedder)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dtkg.eval",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dataset",
        choices=datasets.DATASETS,
        help="benchmark format (tog: any Think-on-Graph JSON file)",
    )
    parser.add_argument("--data", required=True, help="the question file")
    parser.add_argument(
        "--kb",
        help="knowledge-graph file to answer from (MetaQA: kb.txt); "
        "also used to mark which MetaQA questions the KB can answer",
    )
    parser.add_argument("--limit", type=int, help="a seeded random sample of N questions")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the --limit sample and of the config (random mode)",
    )
    parser.add_argument("--mode", choices=MODES, help="method variant (default: dtkg)")
    parser.add_argument("--profile", choices=PROFILES, help="settings profile (default: cpu)")
    parser.add_argument("--config", dest="config_file", help="TOML config file")
    parser.add_argument("--kg", help="embedded | wikidata | SPARQL endpoint URL | KG file")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, repeatable (e.g. width=4)",
    )
    parser.add_argument(
        "--routing-only",
        action="store_true",
        help="run only the classifier; report routing accuracy",
    )
    parser.add_argument(
        "--no-hint",
        dest="hint",
        action="store_false",
        help="MetaQA: strip the [topic entity] brackets (no linking hint)",
    )
    parser.add_argument("--out", help="JSON report; per-question records go to the .jsonl beside")
    parser.add_argument(
        "--fresh", action="store_true", help="discard the existing .jsonl instead of resuming it"
    )
    parser.add_argument(
        "--tau",
        type=float,
        default=metrics.ACC_TAU,
        help=f"ACC threshold on MiniLM cosine (default {metrics.ACC_TAU})",
    )
    parser.add_argument(
        "--no-acc",
        dest="acc",
        action="store_false",
        help="skip ACC (saves loading the similarity model)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def run(
    argv: Sequence[str] | None = None,
    *,
    pipeline_factory: PipelineFactory | None = None,
    classifier_factory: ClassifierFactory | None = None,
    acc_scorer: metrics.AccScorer | None = None,
) -> dict[str, Any]:
    """Parse ``argv``, run, write the outputs; returns the report. Factories and the ACC
    scorer can be replaced (tests use fakes)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    overrides = parse_overrides(args.overrides)
    kg_settings: dict[str, Any] = {}
    if args.kb and not args.kg:
        kg_settings = {"kg_backend": "embedded", "kg_file": str(Path(args.kb))}
    config = build_config(
        profile=args.profile,
        config_file=args.config_file,
        kg=args.kg,
        mode=args.mode,
        seed=args.seed,
        **kg_settings,
        **overrides,
    )
    examples = datasets.load_dataset(
        args.dataset, args.data, kb=args.kb, hint=args.hint, limit=args.limit, seed=args.seed
    )
    spec = runner.RunSpec(
        dataset=args.dataset,
        mode=config.mode,
        hint=args.hint,
        routing_only=args.routing_only,
        overrides={**overrides, **({"kb": str(args.kb)} if args.kb else {})},
    )
    jsonl = runner.jsonl_path(args.out) if args.out else None
    if jsonl is not None and args.fresh and jsonl.exists():
        jsonl.unlink()

    revision = runner.git_revision()  # of the code this process loaded, not at the end
    setup = time.perf_counter()
    answer = classify = None
    if args.routing_only:
        classify = (classifier_factory or default_classifier)(config)
    else:
        answer = (pipeline_factory or default_pipeline)(config)
    setup_seconds = time.perf_counter() - setup

    records, timing = runner.run_examples(
        examples,
        spec,
        answer=answer,
        classify=classify,
        jsonl=jsonl,
        progress=not args.quiet,
    )
    acc = None
    if not args.routing_only and args.acc:
        acc = acc_scorer or metrics.AccScorer(tau=args.tau)
        acc.tau = args.tau
    runner.score_records(records, acc, args.routing_only)
    report = runner.build_report(
        records,
        spec,
        config,
        timing,
        acc=acc,
        extra={
            "data": str(args.data),
            "kb": str(args.kb) if args.kb else None,
            "limit": args.limit,
            "seed": args.seed,
            "setup_seconds": round(setup_seconds, 3),
            "jsonl": str(jsonl) if jsonl else None,
            "command": "python -m dtkg.eval " + shlex.join(argv),
            "git_revision": revision,
        },
    )
    print(runner.format_table(report))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out} and {jsonl}", file=sys.stderr)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        run(argv)
    except DTKGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: finished questions are in the .jsonl; re-run to resume", file=sys.stderr
        )
        return 130
    return 0
