"""Routing accuracy of the question classifier on the dev files in ../shared/data.

HotpotQA: bridge → chained, comparison → parallel. MetaQA: 1-hop → parallel (rule 5),
2-hop and 3-hop → chained. Prints accuracy and a confusion table per dataset and method.
``simplequestions`` (SimpleQuestions-Wikidata valid, every question one triple → parallel) is an
extra check of rule 5 that the cues were not tuned on; ``examples`` is the demo's
``examples/questions.yaml`` (each question has its ``type``).

    .venv/bin/python scripts/routing_check.py                      # full dev files, rules
    .venv/bin/python scripts/routing_check.py --limit 200 --methods rules cues knn
    .venv/bin/python scripts/routing_check.py --limit 100 --datasets hotpotqa --methods llm
    .venv/bin/python scripts/routing_check.py --errors 20          # show misrouted questions

Methods: ``rules`` (cues + kNN, the shipped no-LLM classifier), ``cues`` (cues only, no
embedder), ``knn`` (neighbour vote only), ``llm`` (the few-shot prompt on the cpu profile's
LLM; falls back to rules only when the LLM fails or is uniform).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

Example = tuple[str, str, str]  # (question, gold label, subset)


def load_hotpotqa(path: Path) -> list[Example]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            gold = "chained" if row["type"] == "bridge" else "parallel"
            out.append((row["question"].strip(), gold, row["type"]))
    return out


def load_metaqa(path: Path, hops: int) -> list[Example]:
    gold = "parallel" if hops == 1 else "chained"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        question = line.split("\t", 1)[0].strip()
        if question:
            out.append((question, gold, f"{hops}-hop"))
    return out


def load_simplequestions(path: Path) -> list[Example]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 4 and parts[3].strip():
            out.append((parts[3].strip(), "parallel", "one-triple"))
    return out


def load_examples(path: Path) -> list[Example]:
    import yaml

    rows = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    return [(r["question"], r["type"], r["type"]) for r in rows if r.get("type")]


def routing_sample(
    shared: Path = SHARED,
    *,
    hotpotqa: int | None = 200,
    metaqa: int | None = 200,
    simplequestions: int | None = 0,
    seed: int = 0,
) -> dict[str, list[Example]]:
    """A fixed sample: ``hotpotqa`` random dev questions (natural bridge/comparison mix) and
    ``metaqa`` dev questions split evenly over 1/2/3 hops. ``None`` = every question."""
    rng = random.Random(seed)
    data: dict[str, list[Example]] = {}
    if hotpotqa != 0:
        rows = load_hotpotqa(shared / "data" / "hotpotqa" / "dev_sample.jsonl")
        data["hotpotqa"] = rows if hotpotqa is None else rng.sample(rows, min(hotpotqa, len(rows)))
    if metaqa != 0:
        rows = []
        for hops in (1, 2, 3):
            part = load_metaqa(shared / "data" / "metaqa" / f"{hops}-hop" / "qa_dev.txt", hops)
            if metaqa is not None:
                want = metaqa // 3 + (1 if hops <= metaqa % 3 else 0)
                part = rng.sample(part, min(want, len(part)))
            rows += part
        data["metaqa"] = rows
    if simplequestions != 0:
        rows = load_simplequestions(shared / "data" / "simplequestions_wd" / "valid_answerable.txt")
        data["simplequestions"] = (
            rows if simplequestions is None else rng.sample(rows, min(simplequestions, len(rows)))
        )
    return data


def score(
    examples: list[Example], predict: Callable[[str], str]
) -> tuple[float, Counter[tuple[str, str]], list[tuple[Example, str]]]:
    """Accuracy, confusion counts over (subset, predicted) and the misrouted examples."""
    confusion: Counter[tuple[str, str]] = Counter()
    errors = []
    for ex in examples:
        pred = predict(ex[0])
        confusion[(ex[2], pred)] += 1
        if pred != ex[1]:
            errors.append((ex, pred))
    acc = 1.0 - len(errors) / len(examples) if examples else float("nan")
    return acc, confusion, errors


def make_predictors(methods: list[str]) -> tuple[dict[str, Callable[[str], str]], Any]:
    """Predictors by method name, and the embedder they share (None if none needs one)."""
    from dtkg.backends import get_embedder, get_llm
    from dtkg.config import DTKGConfig
    from dtkg.pipeline.classify import CHAINED, PARALLEL, LLMClassifier, RulesClassifier

    config = DTKGConfig.from_profile("cpu")
    embedder = get_embedder(config) if {"rules", "knn", "llm"} & set(methods) else None
    rules = RulesClassifier(embedder)
    out: dict[str, Callable[[str], str]] = {}
    if "rules" in methods:
        out["rules"] = lambda q: rules(q).label
    if "cues" in methods:
        cues_only = RulesClassifier(None)
        out["cues"] = lambda q: cues_only(q).label
    if "knn" in methods:
        out["knn"] = lambda q: CHAINED if rules.knn_vote(rules.neighbours(q)) >= 0 else PARALLEL
    if "llm" in methods:
        llm = get_llm(config)
        classifier = LLMClassifier(llm, rules)
        llm_log: list = []

        def predict_llm(q: str) -> str:
            result = classifier(q)
            llm_log.append((result.p_chained, result.method))
            return result.label

        predict_llm.log = llm_log  # type: ignore[attr-defined]
        out["llm"] = predict_llm
    return out, embedder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument(
        "--limit", type=int, default=None, help="questions per dataset (default: all)"
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["hotpotqa", "metaqa"],
        choices=["hotpotqa", "metaqa", "simplequestions", "examples"],
    )
    parser.add_argument(
        "--methods", nargs="+", default=["rules"], choices=["rules", "cues", "knn", "llm"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--errors", type=int, default=0, help="print this many misrouted questions")
    parser.add_argument("--grep", default=None, help="only questions matching this regex")
    args = parser.parse_args(argv)

    data = routing_sample(
        args.shared,
        hotpotqa=(args.limit if "hotpotqa" in args.datasets else 0),
        metaqa=(args.limit if "metaqa" in args.datasets else 0),
        simplequestions=(args.limit if "simplequestions" in args.datasets else 0),
        seed=args.seed,
    )
    if "examples" in args.datasets and (ROOT / "examples" / "questions.yaml").exists():
        data["examples"] = load_examples(ROOT / "examples" / "questions.yaml")
    if args.grep:
        data = {k: [e for e in v if re.search(args.grep, e[0], re.I)] for k, v in data.items()}
    predictors, embedder = make_predictors(args.methods)
    if embedder is not None:  # one batched pass fills the embedding cache
        embedder.encode([q for examples in data.values() for q, _, _ in examples])
    print(
        f"{'dataset':10} {'method':6} {'n':>6} {'acc':>7}  confusion (gold subset → predicted)  s"
    )
    for name, examples in data.items():
        for method, predict in predictors.items():
            start = time.perf_counter()
            acc, confusion, errors = score(examples, predict)
            seconds = time.perf_counter() - start
            subsets = sorted({s for s, _ in confusion})
            table = "; ".join(
                f"{s}: {confusion[(s, 'chained')]} ch / {confusion[(s, 'parallel')]} pa"
                for s in subsets
            )
            print(f"{name:10} {method:6} {len(examples):6d} {acc:7.3f}  {table}  {seconds:.1f}")
            log = getattr(predict, "log", None)
            if log:
                ps = [p for p, _ in log]
                methods = Counter(m for _, m in log)
                print(
                    f"{'':18} P(chained) min {min(ps):.3f} mean {sum(ps) / len(ps):.3f} "
                    f"max {max(ps):.3f}; methods {dict(methods)}"
                )
                log.clear()
            for (q, _gold, subset), pred in errors[: args.errors]:
                print(f"    [{subset} → {pred}] {q}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
