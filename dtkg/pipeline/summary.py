"""A readable multi-line summary of a trace, for the CLI (``python -m dtkg ask``)."""

from __future__ import annotations

from dtkg.trace import Trace

_MARK = {"supported": "✓", "revised": "~", "unverified": "?"}


def summarise(trace: Trace) -> str:
    lines = [f"Question: {trace.question}"]
    c = trace.classification
    if c is not None:
        lines.append(f"Route:    {trace.branch} (P(chained) = {c.p_chained:.2f}, {c.method})")
    elif trace.branch:
        lines.append(f"Route:    {trace.branch}")
    if trace.abstained:
        lines.append(f"Answer:   (abstained) {trace.abstain_reason}")
    else:
        lines.append(f"Answer:   {trace.answer}")
        if len(trace.answers) > 1:
            shown = ", ".join(trace.answers[:10]) + (" …" if len(trace.answers) > 10 else "")
            lines.append(f"Ranked:   {shown}")
    if trace.entities:
        linked = ", ".join(f"{e.mention} → {e.label} ({e.qid})" for e in trace.entities if e.qid)
        lines.append(f"Entities: {linked}")
    if trace.draft:
        lines.append(f"Draft:    {trace.draft[:300]}")
    if trace.facts:
        lines.append("Facts:")
        for fact in trace.facts:
            lines.append(f"  {_MARK.get(fact.verdict, '-')} [{fact.verdict}] {fact.claim}")
            if fact.revised:
                lines.append(f"      → {fact.revised}")
            for triple in fact.evidence[:3]:
                lines.append(f"      evidence: {triple.arrow()}")
            if len(fact.evidence) > 3:
                lines.append(f"      … {len(fact.evidence) - 3} more")
    if trace.paths:
        lines.append("Paths:")
        for path in trace.paths:
            lines.append(f"  {path.score:.3f}  {path.arrow()}")
    s = trace.stats
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in s.seconds.items())
    lines.append(
        f"Cost:     {s.llm_calls} LLM call(s), {s.llm_tokens} tokens; {s.kg_queries} KG "
        f"queries ({s.kg_cache_hits} cache hits); {s.total_seconds:.2f}s"
        + (f" [{stages}]" if stages else "")
    )
    if trace.notes:
        lines.append("Notes:")
        lines.extend(f"  - {note}" for note in trace.notes)
    if trace.error:
        lines.append(f"Error:    {trace.error}")
    return "\n".join(lines)
