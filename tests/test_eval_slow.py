"""The harness end to end through the real pipeline and the MetaQA KB (slow: loads MiniLM
and 129k triples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_path

from dtkg.eval import cli

pytestmark = pytest.mark.slow


def test_only_chain_on_20_metaqa_one_hop_questions(tmp_path: Path) -> None:
    pytest.importorskip("dtkg.pipeline", reason="the pipeline package is not there yet")
    qa = shared_path("data", "metaqa", "1-hop", "qa_dev.txt")
    kb = shared_path("data", "metaqa", "kb.txt")
    out = tmp_path / "r.json"
    report = cli.run(
        [
            "metaqa",
            "--data",
            str(qa),
            "--kb",
            str(kb),
            "--limit",
            "20",
            "--mode",
            "only-chain",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert report["n"] == 20 and report["metrics"]["errors"] == 0
    assert report["config"]["mode"] == "only-chain"
    assert report["metrics"]["hits@1"] >= 0.8, report["metrics"]
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(records) == 20
    assert all(r["trace"]["branch"] == "chained" for r in records)
    assert all(r["trace"]["stats"]["llm_calls"] == 0 for r in records)  # deterministic stages
