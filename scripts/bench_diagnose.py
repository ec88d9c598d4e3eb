"""Diagnose a MetaQA run: for each question type, the relation chain the top path took versus
the chain the type implies, and what went wrong.

    python scripts/bench_diagnose.py /tmp/dtkg-bench/metaqa-2hop-only-chain.jsonl [--show 5]

Failure kinds: ``abstained``, ``link`` (the path does not start at the topic entity),
``relations`` (a relation or its direction differs from the type's chain), ``depth`` (right
relations but too few or too many hops), ``ranking`` (right chain, but the top-ranked end is
not gold: ties or several entities of one name), ``unreachable`` (no gold answer reachable in
the partial KB).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dtkg.eval import metrics  # noqa: E402
from dtkg.eval.datasets import METAQA_RELATIONS  # noqa: E402


def expected_chain(qtype: str) -> list[str]:
    """``movie_to_director_to_movie`` → ["directed_by>", "directed_by<"]."""
    types = qtype.split("_to_")
    out = []
    for a, b in zip(types, types[1:], strict=False):
        if a == "movie":
            out.append(METAQA_RELATIONS.get(b, b) + ">")
        else:
            out.append(METAQA_RELATIONS.get(a, a) + "<")
    return out


def taken_chain(trace: dict[str, Any]) -> tuple[list[str], str]:
    """The top path as ["relation_id>" (forwards) | "relation_id<" (backwards)], and the
    label of the entity it starts from."""
    if not trace.get("paths"):
        return [], ""
    hops = trace["paths"][0]["hops"]
    current = {hops[0]["subject_id"], hops[0]["object_id"]} if hops else set()
    start = ""
    out = []
    for i, hop in enumerate(hops):
        if i == 0:
            link = (trace.get("entities") or [{}])[0]
            anchor = link.get("qid")
            forward = hop["subject_id"] == anchor
            start = link.get("label") or ""
        else:
            forward = hop["subject_id"] in current
        out.append(hop["relation_id"] + (">" if forward else "<"))
        current = {hop["object_id"] if forward else hop["subject_id"]}
    return out, start


def classify_failure(record: dict[str, Any]) -> str:
    prediction = record["prediction"]
    if record.get("answerable") is False:
        return "unreachable"
    if prediction.get("error"):
        return "error"
    if prediction.get("abstained"):
        return "abstained"
    trace = record.get("trace") or {}
    taken, start = taken_chain(trace)
    topic = record.get("topic") or ""
    if topic and start and metrics.normalize(start) != metrics.normalize(topic):
        return "link"
    expected = expected_chain(record["groups"].get("qtype", ""))
    if taken == expected:
        return "ranking"
    if [t.rstrip("<>") for t in taken] == [e.rstrip("<>") for e in expected]:
        return "direction"
    if len(taken) != len(expected) and all(t in expected for t in taken):
        return "depth"
    return "relations"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", nargs="+")
    parser.add_argument("--show", type=int, default=3, help="examples per failure kind")
    args = parser.parse_args(argv)
    records = []
    for path in args.jsonl:
        records += [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    kinds: Counter[str] = Counter()
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    chains: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    for record in records:
        score = metrics.score_prediction(record["prediction"], record["gold"])
        qtype = record["groups"].get("qtype", "?")
        by_type[qtype]["n"] += 1
        if score["hits@1"]:
            continue
        kind = classify_failure(record)
        kinds[kind] += 1
        by_type[qtype][kind] += 1
        taken, _ = taken_chain(record.get("trace") or {})
        chains[qtype][" ".join(taken) or "-"] += 1
        if len(examples[kind]) < args.show:
            gold = [g[0] for g in record["gold"]][:3]
            examples[kind].append(
                f"  {record['question']} | gold {gold} | got {record['prediction'].get('answers', [])[:3]}"
                f" | path {' '.join(taken)} (expected {' '.join(expected_chain(qtype))})"
            )
    n = len(records)
    print(f"{n} questions, {sum(kinds.values())} wrong at hits@1: {dict(kinds.most_common())}\n")
    print("| question type | n | wrong | kinds | chains taken when wrong (expected) |")
    print("|---|---|---|---|---|")
    for qtype, counts in sorted(by_type.items()):
        wrong = sum(v for k, v in counts.items() if k != "n")
        if not wrong:
            continue
        kinds_text = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "n")
        taken = "; ".join(f"`{c}` ×{v}" for c, v in chains[qtype].most_common(3))
        expected = " ".join(expected_chain(qtype))
        print(f"| {qtype} | {counts['n']} | {wrong} | {kinds_text} | {taken} (`{expected}`) |")
    for kind, lines in examples.items():
        print(f"\n{kind}:")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
