"""Answer generation (paper eq. 11): from the top-k paths only, or from the checked facts.

With the LLM, the paths are serialised KG-CoT style (``A → relation → B``, one per line) for
one answering call, and the reply must name something the paths contain (a grounding check);
otherwise — or with ``answer_with="rules"`` — the answer is the end entities of the best
path, ranked (set-valued answers keep them all).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dtkg.errors import ModelError
from dtkg.pipeline.compare import dates_in, parse_date
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.parsing import DATA_RULE, clean_answer, delimit
from dtkg.trace import Path, Triple

ANSWER_SYSTEM = (
    "You answer questions using only the knowledge-graph facts you are given. Reply with the "
    "answer only (a name, a date or a number; several names separated by commas), no "
    "explanation. If the facts do not contain the answer, reply: unknown. " + DATA_RULE
)
_UNKNOWN = re.compile(r"^(unknown|i don'?t know|not (?:enough|sure)|cannot|can't|n/?a)\b", re.I)


def format_set(labels: Sequence[str], limit: int = 10) -> str:
    """ "A", "A and B", "A, B and C"; long sets are cut with the total named."""
    labels = list(labels)
    if not labels:
        return ""
    if len(labels) == 1:
        return labels[0]
    if len(labels) <= limit:
        return ", ".join(labels[:-1]) + " and " + labels[-1]
    return ", ".join(labels[:limit]) + f" … ({len(labels)} in all)"


def serialise(paths: Sequence[Path]) -> str:
    return "\n".join(path.arrow() for path in paths if path.hops)


def path_prompt(question: str, paths: Sequence[Path]) -> str:
    return (
        f"Knowledge-graph paths:\n{serialise(paths)}\n\n{delimit(question)}\n"
        "Answer the question using only these paths. Answer:"
    )


def grounded(answer: str, triples: Sequence[Triple]) -> bool:
    """Does ``answer`` name an entity or value that the triples contain?"""
    low = answer.lower()
    for t in triples:
        for label in (t.object, t.subject):
            if label and len(label) >= 2 and label.lower() in low:
                return True
            date = parse_date(label) if label else None
            if date is not None and any(d.year == date.year for d in dates_in(answer)):
                return True
            if date is not None and str(date.year) in low:
                return True
    return False


def llm_answer_from_paths(ctx: RunContext, paths: Sequence[Path]) -> str | None:
    """The LLM's answer from the paths, or None (with a note) when it fails, says it does not
    know, or names nothing the paths contain."""
    try:
        reply = ctx.llm.generate(
            path_prompt(ctx.question, paths),
            max_new_tokens=min(64, ctx.config.llm_max_new_tokens),
            system=ANSWER_SYSTEM,
        )
    except ModelError as exc:
        ctx.note(f"answer: the LLM failed ({exc}); the answer is the best path's end")
        return None
    return checked_llm_answer(ctx, reply, [t for p in paths for t in p.hops])


def checked_llm_answer(ctx: RunContext, reply: str, evidence: Sequence[Triple]) -> str | None:
    answer = clean_answer(reply)
    if not answer or _UNKNOWN.match(answer):
        ctx.note(
            "answer: the LLM found no answer in the evidence; the deterministic answer was used"
        )
        return None
    if not grounded(answer, evidence):
        ctx.note(
            f"answer: the LLM's reply ({answer[:80]!r}) names nothing in the evidence; "
            "the deterministic answer was used"
        )
        return None
    return answer


COT_SYSTEM = (
    "Answer the question. Think step by step briefly, then give the final answer on the last "
    "line as 'Answer: <answer>'. " + DATA_RULE
)


def cot_answer(ctx: RunContext) -> str | None:
    """Plain chain-of-thought (the paper's CoT baseline): the LLM alone, no KG."""
    try:
        reply = ctx.llm.generate(
            delimit(ctx.question), max_new_tokens=ctx.config.llm_max_new_tokens, system=COT_SYSTEM
        )
    except ModelError as exc:
        ctx.note(f"cot: the LLM failed ({exc})")
        return None
    ctx.trace.draft = reply.strip()
    match = re.findall(r"answer\s*[:：]\s*(.+)", reply, flags=re.IGNORECASE)
    answer = (
        match[-1].strip()
        if match
        else clean_answer(reply.strip().splitlines()[-1] if reply.strip() else "")
    )
    return answer.strip().rstrip(".") or None
