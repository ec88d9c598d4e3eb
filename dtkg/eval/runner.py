"""Run a benchmark: questions → the pipeline (or only the classifier) → per-question JSONL →
metrics → a JSON report.

The JSONL (``r.json`` → ``r.jsonl``) is appended to and flushed after every question, so a
killed run loses at most the question in flight; re-running with the same ``--out`` skips the
ids already there. The report is always computed from the JSONL records of the selected
questions, so a resumed run reports on all of them.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dtkg.config import DTKGConfig
from dtkg.errors import ConfigError, DTKGError, InputError
from dtkg.eval import metrics
from dtkg.eval.datasets import Example

AnswerFn = Callable[[str], Any]  # question -> Trace (or its dict)
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunSpec:
    """What identifies a run; records from a different run in the same JSONL are refused."""

    dataset: str
    mode: str
    hint: bool = True
    routing_only: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)

    def key(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- predictions
def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if is_dataclass(obj):
        return asdict(obj)  # type: ignore[arg-type]
    raise TypeError(f"Cannot serialise {type(obj).__name__}")


def prediction_from_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """The fields metrics need, from a trace dict."""
    stats = trace.get("stats") or {}
    classification = trace.get("classification") or {}
    return {
        "answer": trace.get("answer", ""),
        "answers": list(trace.get("answers") or []),
        "abstained": bool(trace.get("abstained")),
        "error": trace.get("error", ""),
        "branch": trace.get("branch"),
        "label": classification.get("label"),
        "p_chained": classification.get("p_chained"),
        "method": classification.get("method"),
        "llm_calls": stats.get("llm_calls", 0),
        "kg_queries": stats.get("kg_queries", 0),
        "seconds": stats.get("total_seconds", 0.0),
        "stage_seconds": stats.get("seconds") or {},
    }


def prediction_from_classification(
    classification: dict[str, Any], seconds: float
) -> dict[str, Any]:
    return {
        "label": classification.get("label"),
        "p_chained": classification.get("p_chained"),
        "method": classification.get("method"),
        "seconds": seconds,
    }


# ---------------------------------------------------------------------------- JSONL
def jsonl_path(out: str | Path) -> Path:
    """``r.json`` → ``r.jsonl`` (any other name gets ``.jsonl`` appended)."""
    out = Path(out)
    return (
        out.with_suffix(".jsonl") if out.suffix == ".json" else out.with_name(out.name + ".jsonl")
    )


def read_records(path: Path) -> list[dict[str, Any]]:
    """Complete records of a JSONL file (a torn last line from a killed run is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _repair_tail(path: Path) -> None:
    """Cut a torn last line (no newline: the run was killed mid-write) before appending."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


# ---------------------------------------------------------------------------- the run
def run_examples(
    examples: Sequence[Example],
    spec: RunSpec,
    *,
    answer: AnswerFn | None = None,
    classify: Callable[[str], Any] | None = None,
    jsonl: Path | None = None,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Run ``examples`` not yet in ``jsonl``; returns (records of all selected examples,
    timing). ``answer`` maps a question to a trace; with ``spec.routing_only``, ``classify``
    maps it to a classification instead."""
    done: dict[str, dict[str, Any]] = {}
    if jsonl is not None:
        for record in read_records(jsonl):
            if record.get("run") != spec.key():
                raise InputError(
                    f"{jsonl} holds results of a different run ({record.get('run')}); "
                    "use another --out, or --fresh to start over."
                )
            done[record["id"]] = record
        _repair_tail(jsonl)
        jsonl.parent.mkdir(parents=True, exist_ok=True)
    todo = [e for e in examples if e.id not in done]
    timing = {
        "seconds": 0.0,
        "first_seconds": 0.0,
        "n_run": 0.0,
        "n_resumed": len(examples) - len(todo),
    }
    handle = jsonl.open("a", encoding="utf-8") if jsonl is not None else None
    bar = _bar(len(todo), progress, spec)
    start = time.perf_counter()
    try:
        for example in todo:
            t0 = time.perf_counter()
            record = _run_one(example, spec, answer, classify)
            elapsed = time.perf_counter() - t0
            if timing["n_run"] == 0:
                timing["first_seconds"] = elapsed
            timing["n_run"] += 1
            done[example.id] = record
            if handle is not None:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(_postfix(record), refresh=False)
    finally:
        timing["seconds"] = time.perf_counter() - start
        if handle is not None:
            handle.close()
        if bar is not None:
            bar.close()
    return [done[e.id] for e in examples if e.id in done], timing


def _run_one(
    example: Example, spec: RunSpec, answer: AnswerFn | None, classify: Callable[[str], Any] | None
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": example.id,
        "question": example.question,
        "gold": example.gold,
        "gold_ids": example.gold_ids,
        "route": example.route,
        "groups": example.groups,
        "topic": example.topic,
        "answerable": example.answerable,
        "match": example.match,
        "run": spec.key(),
    }
    t0 = time.perf_counter()
    try:
        if spec.routing_only:
            if classify is None:
                raise ConfigError("routing-only run without a classifier")
            classification = _as_dict(classify(example.question))
            record["prediction"] = prediction_from_classification(
                classification, time.perf_counter() - t0
            )
            record["classification"] = classification
        else:
            if answer is None:
                raise ConfigError("answering run without a pipeline")
            trace = _as_dict(answer(example.question))
            record["prediction"] = prediction_from_trace(trace)
            if not record["prediction"]["seconds"]:
                record["prediction"]["seconds"] = time.perf_counter() - t0
            record["trace"] = trace
    except (ConfigError, KeyboardInterrupt):
        raise  # a setup problem: every question would fail the same way
    except Exception as exc:  # noqa: BLE001 - one bad question must not end the run
        kind = "" if isinstance(exc, DTKGError) else f"{type(exc).__name__}: "
        record["prediction"] = {
            "answer": "",
            "answers": [],
            "abstained": False,
            "error": f"{kind}{exc}",
            "seconds": time.perf_counter() - t0,
        }
    return record


def _bar(total: int, enabled: bool, spec: RunSpec) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    what = "routing" if spec.routing_only else spec.mode
    return tqdm(
        total=total,
        desc=f"{spec.dataset} {what}",
        unit="q",
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 10.0,  # logs get a line per 10 s
    )


def _postfix(record: dict[str, Any]) -> str:
    p = record.get("prediction") or {}
    if p.get("error"):
        return "error"
    if "answer" not in p:
        return str(p.get("label", ""))
    return "abstained" if p.get("abstained") else str(p.get("answer", ""))[:30]


# ---------------------------------------------------------------------------- scoring
def score_records(
    records: Sequence[dict[str, Any]], acc: metrics.AccScorer | None, routing_only: bool
) -> None:
    """Add ``scores`` to each record in place (not for routing-only runs)."""
    if routing_only:
        return
    for record in records:
        prediction = record.get("prediction") or {}
        contains = record.get("match") == "contains"
        scores = metrics.score_prediction(prediction, record["gold"], contains)
        if acc is not None:
            scores["acc"] = acc.acc(prediction, record["gold"], contains, em=scores["em"])
        record["scores"] = scores


def build_report(
    records: Sequence[dict[str, Any]],
    spec: RunSpec,
    config: DTKGConfig | None,
    timing: dict[str, float],
    *,
    acc: metrics.AccScorer | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON report of a run."""
    n_run = int(timing.get("n_run", 0))
    seconds = float(timing.get("seconds", 0.0))
    steady = seconds - float(timing.get("first_seconds", 0.0))
    if n_run > 1 and steady > 0:
        qps = (n_run - 1) / steady  # the first question carries the lazy model / KG loading
    elif n_run and seconds > 0:
        qps = n_run / seconds
    else:
        recorded = sum((r.get("prediction") or {}).get("seconds", 0.0) for r in records)
        qps = len(records) / recorded if recorded else 0.0
    report: dict[str, Any] = {
        "dataset": spec.dataset,
        "n": len(records),
        "mode": "routing-only" if spec.routing_only else spec.mode,
        "metrics": metrics.aggregate(records),
        "by_group": metrics.by_group(records),
        "seconds": round(seconds, 3),
        "questions_per_second": round(qps, 3),
        "n_run": n_run,
        "n_resumed": int(timing.get("n_resumed", 0)),
        "hint": spec.hint,
        "routing_only": spec.routing_only,
        "overrides": spec.overrides,
        "metric_settings": {
            "normalisation": "SQuAD-style: accents folded (NFKD), lower case, apostrophes and "
            "punctuation between digits deleted, other punctuation to spaces, articles "
            "(a/an/the) dropped, whitespace collapsed",
            **(
                {"acc_model": f"all-MiniLM-L6-v2 ({acc.model})", "acc_tau": acc.tau}
                if acc is not None
                else {}
            ),
        },
        "config": config.public_dict() if config is not None else {},
        "git_revision": git_revision(),
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m dtkg.eval", *sys.argv[1:]]),
    }
    if spec.routing_only or report["metrics"].get("n_routed"):
        report["routing_confusion"] = metrics.confusion(records)
    report.update(extra or {})
    return report


def _git(*args: str) -> str:
    """The stdout of ``git args`` in the repository ("" when git fails)."""
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    return out.stdout.strip() if out.returncode == 0 else ""


def git_revision() -> str:
    """``git rev-parse --short HEAD`` (+``-dirty`` with local changes), or ``uncommitted``."""
    try:
        rev = _git("rev-parse", "--short", "HEAD")
        if not rev:
            return "uncommitted"
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "uncommitted"


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    gpu = "none"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    return {
        "cpu": model or platform.machine(),
        "cores": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "gpu": gpu,
        "load_average": [round(x, 2) for x in os.getloadavg()]
        if hasattr(os, "getloadavg")
        else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


# ---------------------------------------------------------------------------- table
_COLUMNS = (
    ("n", "n", "{:d}"),
    ("em", "EM", "{:.3f}"),
    ("acc", "ACC", "{:.3f}"),
    ("hits@1", "hits@1", "{:.3f}"),
    ("any-hit", "any-hit", "{:.3f}"),
    ("f1", "F1", "{:.3f}"),
    ("routing_accuracy", "routing", "{:.3f}"),
    ("abstention_rate", "abstain", "{:.3f}"),
    ("llm_calls_per_question", "LLM/q", "{:.2f}"),
    ("kg_queries_per_question", "KG/q", "{:.1f}"),
    ("seconds_per_question", "s/q", "{:.3f}"),
)


def format_table(report: dict[str, Any]) -> str:
    """The overall metrics and each group's, as an aligned text table."""
    rows: list[tuple[str, dict[str, Any]]] = [("all", report["metrics"])]
    for facet, values in report.get("by_group", {}).items():
        for value, m in values.items():
            rows.append((f"{facet}={value}", m))
    columns = [c for c in _COLUMNS if any(c[0] in m for _, m in rows)]
    header = ["group", *[c[1] for c in columns]]
    body = [
        [name, *[(fmt.format(m[key]) if key in m else "-") for key, _, fmt in columns]]
        for name, m in rows
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    summary = (
        f"{report['dataset']} · {report['mode']} · n={report['n']} · "
        f"{report['seconds']:.1f} s this run · {report['questions_per_second']:.2f} q/s · "
        f"rev {report['git_revision']}"
    )
    return "\n".join([summary, *lines])
