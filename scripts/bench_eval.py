"""Run the BENCHMARKS.md suites through ``python -m dtkg.eval`` (in one process, so models and
the KG load once) and print their tables as Markdown.

    python scripts/bench_eval.py routing   [--limit N] [--methods rules,llm]
    python scripts/bench_eval.py metaqa    [--limit N] [--hops 1,2,3]
    python scripts/bench_eval.py ablations [--limit N]
    python scripts/bench_eval.py tune      [--limit N] [--hops 1,2,3]

Every run is exactly a ``python -m dtkg.eval ...`` command (printed beside its row); reports
and per-question JSONL go under ``--outdir`` (default /tmp/dtkg-bench) and are resumed when
re-run. Data comes from ``../shared`` (run from the repository root).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from dtkg.eval import cli  # noqa: E402

DATA = Path("../shared/data")
KB = DATA / "metaqa" / "kb.txt"
HOTPOT = DATA / "hotpotqa" / "dev_sample.jsonl"
CWQ = DATA / "tog" / "cwq.json"
EXAMPLES = Path("examples/questions.yaml")
MODES = ("dtkg", "only-fact", "only-chain", "random", "no-denoise")


def metaqa_file(hop: int) -> Path:
    return DATA / "metaqa" / f"{hop}-hop" / "qa_dev.txt"


def run(
    name: str, argv: list[str], outdir: Path, quiet: bool = True, cold: bool = False
) -> dict[str, Any]:
    """Run one eval command (resuming its JSONL); returns the report with the command.
    ``cold``: drop the shared backends first (their embedding caches would otherwise make
    later runs in this process faster than a fresh ``python -m dtkg.eval``)."""
    if cold:
        from dtkg.backends import clear_cache

        clear_cache()
    out = outdir / f"{name}.json"
    full = [*argv, "--out", str(out), *(["--quiet"] if quiet else [])]
    command = "python -m dtkg.eval " + " ".join(argv + ["--out", str(out)])
    print(f"$ {command}", file=sys.stderr, flush=True)
    report = cli.run(full)
    report["bench_command"] = command
    (outdir / f"{name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return report


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- suites
def suite_routing(args: argparse.Namespace, outdir: Path) -> str:
    rows = []
    datasets_ = [
        ("hotpotqa", ["hotpotqa", "--data", str(HOTPOT)]),
        *[(f"metaqa-{h}hop", ["metaqa", "--data", str(metaqa_file(h))]) for h in (1, 2, 3)],
        ("cwq", ["cwq", "--data", str(CWQ)]),
    ]
    wanted = args.datasets.split(",") if args.datasets else None
    for method in args.methods.split(","):
        for label, argv in datasets_:
            if wanted and not any(label.startswith(w) for w in wanted):
                continue
            argv = [*argv, "--routing-only", "--set", f"classify_with={method}"]
            if args.limit:
                argv += ["--limit", str(args.limit)]
            name = f"routing-{label}-{method}-n{args.limit or 'all'}"
            report = run(name, argv, outdir)
            m = report["metrics"]
            groups = report["by_group"].get("type", {})
            by_type = ", ".join(
                f"{value} {fmt(g.get('routing_accuracy'))} (n={g['n']})"
                for value, g in groups.items()
                if "routing_accuracy" in g
            )
            rows.append(
                [
                    label,
                    _classifier_method(outdir / f"{name}.jsonl"),
                    report["n"],
                    m.get("routing_accuracy"),
                    by_type or "–",
                    m.get("chained_rate"),
                    report["questions_per_second"],
                    f"`{report['bench_command']}`",
                ]
            )
    header = ["dataset", "method", "n", "routing acc", "by type", "chained share", "q/s"]
    return table([*header, "command"], rows)


def _classifier_method(jsonl: Path) -> str:
    methods: dict[str, int] = {}
    for line in jsonl.read_text().splitlines():
        try:
            method = json.loads(line)["prediction"].get("method") or "?"
        except (json.JSONDecodeError, KeyError):
            continue
        methods[method] = methods.get(method, 0) + 1
    return ", ".join(f"{k}" + (f" ({v})" if len(methods) > 1 else "") for k, v in methods.items())


def suite_metaqa(args: argparse.Namespace, outdir: Path) -> str:
    rows = []
    for hop in [int(h) for h in args.hops.split(",")]:
        for hint in [h == "yes" for h in args.hints.split(",")]:
            argv = ["metaqa", "--data", str(metaqa_file(hop)), "--kb", str(KB)]
            argv += ["--mode", "only-chain", *args.extra]
            if args.limit:
                argv += ["--limit", str(args.limit)]
            if not hint:
                argv.append("--no-hint")
            name = f"metaqa-{hop}hop-only-chain{'' if hint else '-nohint'}-n{args.limit or 'all'}"
            report = run(name + args.tag, argv, outdir, cold=True)
            m = report["metrics"]
            ans = report["by_group"].get("answerable", {}).get("yes", {})
            rows.append(
                [
                    f"{hop}-hop",
                    "yes" if hint else "no",
                    report["n"],
                    m.get("hits@1"),
                    ans.get("n"),
                    ans.get("hits@1"),
                    ans.get("any-hit"),
                    m.get("em"),
                    m.get("acc"),
                    m.get("f1"),
                    m.get("abstention_rate"),
                    m.get("llm_calls_per_question"),
                    m.get("kg_queries_per_question"),
                    report["questions_per_second"],
                    f"`{report['bench_command']}`",
                ]
            )
    header = ["hops", "hint", "n", "hits@1", "n answerable", "hits@1 answerable"]
    header += ["any-hit answerable", "EM", "ACC", "F1", "abstain", "LLM/q", "KG/q", "q/s"]
    return table([*header, "command"], rows)


def suite_ablations(args: argparse.Namespace, outdir: Path) -> str:
    limit = ["--limit", str(args.limit)] if args.limit else []
    sets: list[tuple[str, list[str]]] = [
        (f"MetaQA {h}-hop", ["metaqa", "--data", str(metaqa_file(h)), "--kb", str(KB), *limit])
        for h in [int(h) for h in args.hops.split(",")]
    ] + [("examples", ["examples", "--data", str(EXAMPLES)])]
    modes = args.modes.split(",")
    cells: dict[tuple[str, str], str] = {}
    commands = []
    for mode in modes:
        for label, argv in sets:
            slug = label.lower().replace(" ", "-")
            n = "all" if label == "examples" else (args.limit or "all")
            report = run(f"ablation-{slug}-{mode}-n{n}{args.tag}", [*argv, "--mode", mode], outdir)
            m = report["metrics"]
            cell = f"{fmt(m.get('em'))} / {fmt(m.get('acc'))} / {fmt(m.get('hits@1'))}"
            if "routing_accuracy" in m:
                cell += f" (routing {fmt(m['routing_accuracy'], 2)})"
            cells[(mode, label)] = cell
            commands.append(report["bench_command"])
    header = ["mode", *[label for label, _ in sets]]
    rows = [[mode, *[cells[(mode, label)] for label, _ in sets]] for mode in modes]
    return (
        table(header, rows)
        + "\n\nCells: EM / ACC / hits@1 (routing accuracy where the classifier routes). "
        + "Commands:\n\n"
        + "\n".join(f"    {c}" for c in commands)
    )


def suite_tune(args: argparse.Namespace, outdir: Path) -> str:
    """Grid over W_max, θ and top-k: examples (mode dtkg) and MetaQA (mode only-chain)."""
    grid = {
        "width": [int(v) for v in args.widths.split(",")],
        "theta": [float(v) for v in args.thetas.split(",")],
        "top_k_cosine": [int(v) for v in args.topks.split(",")],
    }
    if args.sweep:  # one setting at a time around the current defaults
        from dtkg.config import DTKGConfig

        base = DTKGConfig()
        start = (base.width, base.theta, base.top_k_cosine)
        points = [start]
        for i, values in enumerate(grid.values()):
            for value in values:
                point = list(start)
                point[i] = value
                points.append(tuple(point))
        points = list(dict.fromkeys(points))
    else:
        points = list(itertools.product(*grid.values()))
    hops = [int(h) for h in args.hops.split(",")]
    rows = []
    for width, theta, topk in points:
        flags = ["--set", f"width={width}", "--set", f"theta={theta}"]
        flags += ["--set", f"top_k_cosine={topk}", "--no-acc"]
        tag = f"w{width}-t{theta}-k{topk}"
        row: list[Any] = [width, theta, topk]
        report = run(f"tune-examples-{tag}", ["examples", "--data", str(EXAMPLES), *flags], outdir)
        row.append(report["metrics"].get("em"))
        for h in hops:
            if rows and topk != points[0][2] and (width, theta) == points[0][:2]:
                row.append("= first row (only-chain does not use top-k)")
                continue
            argv = ["metaqa", "--data", str(metaqa_file(h)), "--kb", str(KB), "--mode"]
            argv += ["only-chain", "--limit", str(args.limit), "--seed", str(args.seed)]
            name = f"tune-{h}hop-{tag}-n{args.limit}-s{args.seed}"
            report = run(name, [*argv, *flags], outdir)
            row.append(report["by_group"].get("answerable", {}).get("yes", {}).get("hits@1"))
        rows.append(row)
    labels = ["examples EM"] + [f"MetaQA {h}-hop hits@1 (answerable)" for h in hops]
    return table(["W_max", "θ", "top-k", *labels], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=["routing", "metaqa", "ablations", "tune"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hops", default="1,2,3")
    parser.add_argument("--methods", default="rules", help="classify_with values to compare")
    parser.add_argument("--datasets", default="", help="routing: only these (prefixes, comma)")
    parser.add_argument("--modes", default=",".join(MODES), help="ablations: modes to run")
    parser.add_argument("--hints", default="yes,no", help="metaqa: with (yes) / without (no)")
    parser.add_argument("--widths", default="2,3,4")
    parser.add_argument("--thetas", default="0.1,0.2,0.3")
    parser.add_argument("--topks", default="50")
    parser.add_argument("--sweep", action="store_true", help="tune: vary one setting at a time")
    parser.add_argument("--tag", default="", help="suffix for output names")
    parser.add_argument("--extra", nargs="*", default=[], help="more dtkg.eval flags (metaqa)")
    parser.add_argument("--outdir", default="/tmp/dtkg-bench")
    args = parser.parse_args(argv)
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    suite = {
        "routing": suite_routing,
        "metaqa": suite_metaqa,
        "ablations": suite_ablations,
        "tune": suite_tune,
    }[args.suite]
    markdown = suite(args, outdir)
    print(markdown)
    (outdir / f"{args.suite}{args.tag}.md").write_text(markdown + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
