"""Task-aware denoising (paper §3.4).

Type I — administrative relations: a label containing a keyword of
``config.admin_keywords`` is dropped. Keywords written in capitals ("ID") match
case-sensitively as a whole word, so "IMDb ID" and "Freebase ID" go but "video" and
"identity" stay; other keywords match case-insensitively as whole words (plural allowed),
so "described by source" and "software version" go but "resource" stays.

Type II — redundant attributes: a necessity score per relation label against the question,
from ONE batched yes/no LLM call (``necessity_with="llm"``) or the hybrid relation score
(``"rules"``); labels below ``necessity_threshold`` are dropped.

Parallel track: :func:`cross_redundant` keeps a triple only for the sub-question it serves
best when several sub-questions retrieved it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from dtkg.errors import ModelError
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.parsing import DATA_RULE, delimit
from dtkg.trace import Triple


@lru_cache(maxsize=64)
def _keyword_pattern(keywords: tuple[str, ...]) -> re.Pattern[str] | None:
    parts = []
    for keyword in keywords:
        keyword = keyword.strip()
        if not keyword:
            continue
        body = re.escape(keyword)
        if keyword.isupper():
            parts.append(rf"(?-i:\b{body}s?\b)")
        else:
            parts.append(rf"\b{body}s?\b")
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def is_administrative(label: str, keywords: Sequence[str]) -> bool:
    pattern = _keyword_pattern(tuple(keywords))
    return bool(pattern and pattern.search(label or ""))


def drop_administrative(ctx: RunContext, labels: Sequence[str]) -> set[str]:
    """The labels (of ``labels``) that are administrative; noted in the trace."""
    if ctx.config.mode == "no-denoise":
        return set()
    dropped = {label for label in labels if is_administrative(label, ctx.config.admin_keywords)}
    if dropped:
        shown = ", ".join(sorted(dropped)[:6]) + (" …" if len(dropped) > 6 else "")
        ctx.note(f"denoise: dropped {len(dropped)} administrative relation(s) ({shown})")
    return dropped


NECESSITY_SYSTEM = (
    "You judge whether a knowledge-graph relation is needed to answer a question. "
    "Reply with exactly one word: yes or no. " + DATA_RULE
)


def necessity_prompt(question: str, label: str) -> str:
    return (
        "Is the relation below needed (as one step) to answer the question?\n"
        "Examples: relation 'height' for 'When was X born?' → no; relation 'date of birth' "
        "for 'When was X born?' → yes; relation 'spouse' for 'When was the wife of X "
        "born?' → yes; relation 'IMDb ID' for 'Who directed X?' → no.\n"
        f"{delimit(question)}\nRelation: {label}\nAnswer (yes/no):"
    )


def necessity_by_llm(ctx: RunContext, labels: Sequence[str]) -> dict[str, float] | None:
    """P(yes) per label from ONE batched option-scoring call; None when the LLM fails."""
    labels = list(dict.fromkeys(labels))
    if not labels:
        return {}
    try:
        scores = ctx.llm.score_options_many(
            [necessity_prompt(ctx.question, label) for label in labels],
            ["yes", "no"],
            system=NECESSITY_SYSTEM,
        )
    except ModelError as exc:
        ctx.note(f"necessity: the LLM failed ({exc}); the hybrid score was used instead")
        return None
    if all(s.method == "uniform" for s in scores):
        ctx.note("necessity: the LLM gave no usable yes/no; the hybrid score was used instead")
        return None
    return {label: s.probs["yes"] for label, s in zip(labels, scores)}


def cross_redundant(per_fact: list[list[Triple]]) -> tuple[list[list[Triple]], int]:
    """Keep each triple only under the fact it serves best — highest score relative to that
    fact's best triple; a fact always keeps its own best triple. Returns the pruned lists
    and how many duplicates were removed."""

    def key(t: Triple) -> tuple[str, str, str]:
        return (t.subject_id or t.subject, t.relation_id, t.object_id or t.object)

    tops = [max((t.score or 0.0 for t in triples), default=0.0) or 1e-6 for triples in per_fact]
    best: dict[tuple[str, str, str], tuple[float, int]] = {}
    for fi, triples in enumerate(per_fact):
        for t in triples:
            relative = (t.score or 0.0) / tops[fi]
            if key(t) not in best or relative > best[key(t)][0]:
                best[key(t)] = (relative, fi)
    removed = 0
    pruned: list[list[Triple]] = []
    for fi, triples in enumerate(per_fact):
        kept = [t for i, t in enumerate(triples) if i == 0 or best[key(t)][1] == fi]
        removed += len(triples) - len(kept)
        pruned.append(kept)
    return pruned, removed
