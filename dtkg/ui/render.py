"""Pure functions turning trace pieces into what the tabs show (Markdown, table rows).

No Gradio here: everything returns strings and lists, so it is trivially testable. Entity and
property ids of Wikidata's shape link to their Wikidata pages; local ids are shown, not linked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from dtkg.kg.ids import is_pid, is_qid
from dtkg.trace import Classification, EntityLink, Fact, Path, Stats, Trace, Triple

WIKIDATA_WIKI = "https://www.wikidata.org/wiki/"

FACT_HEADERS = ["Claim", "Verdict", "Evidence triple", "Cosine", "Rerank", "Combined", "Revised"]
FACT_TYPES = ["markdown", "str", "markdown", "str", "str", "str", "markdown"]
PATH_HEADERS = ["Rank", "Score", "Path", "Hops"]
PATH_TYPES = ["number", "str", "markdown", "number"]
VERDICT_ICONS = {"supported": "✅ supported", "revised": "✏️ revised", "unverified": "❔ unverified"}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+|!~])")


def md_escape(text: object) -> str:
    """Escape Markdown (and HTML) metacharacters so labels and user text render literally."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def wikidata_url(item_id: str | None) -> str | None:
    """``Q42`` → its item page, ``P57`` → its property page; anything else (local ids,
    literals) → None."""
    if not item_id:
        return None
    if is_qid(item_id):
        return WIKIDATA_WIKI + item_id
    if is_pid(item_id):
        return f"{WIKIDATA_WIKI}Property:{item_id}"
    return None


def linked(label: str, item_id: str | None) -> str:
    """``[label](wikidata page)`` for Wikidata ids, the escaped label otherwise."""
    url = wikidata_url(item_id)
    text = md_escape(label or item_id or "?")
    return f'[{text}]({url} "{item_id}")' if url else text


def triple_md(triple: Triple) -> str:
    return " → ".join(
        (
            linked(triple.subject, triple.subject_id),
            linked(triple.relation, triple.relation_id),
            linked(triple.object, triple.object_id),
        )
    )


def score(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


# ------------------------------------------------------------------------------ answer
def answer_md(
    trace: Trace | None,
    *,
    answer: str = "",
    answers: Sequence[str] = (),
    abstained: bool = False,
    reason: str = "",
) -> str:
    """The answer with its badges (route, confidence, abstention, timing)."""
    if trace is not None:
        answer, answers, abstained = trace.answer, trace.answers, trace.abstained
        reason = trace.abstain_reason
    if abstained:
        text = f"### 🤷 No answer\n{md_escape(reason or 'The evidence did not support an answer.')}"
    elif answer:
        text = f"### {md_escape(answer)}"
        others = [a for a in answers if a != answer][:4]
        if others:
            text += "\n\nOther candidates: " + ", ".join(md_escape(a) for a in others)
    else:
        text = "### …"
    if trace is not None:
        text += "\n\n" + " · ".join(badges(trace))
    return text


def badges(trace: Trace) -> list[str]:
    """Short status badges: route, route confidence, evidence, abstention, time."""
    out: list[str] = []
    c = trace.classification
    route = trace.branch or (c.label if c else None)
    if route:
        out.append(f"🧭 route **{route}**")
    if c is not None:
        confidence = c.p_chained if c.label == "chained" else 1.0 - c.p_chained
        out.append(f"📈 confidence **{confidence:.0%}** ({md_escape(c.method)})")
    if trace.paths:
        out.append(f"🔗 top path score **{trace.paths[0].score:.3f}**")
    if trace.facts:
        ok = sum(f.verdict in ("supported", "revised") for f in trace.facts)
        out.append(f"✅ facts checked **{ok}/{len(trace.facts)}**")
    out.append("🤷 **abstained**" if trace.abstained else "💬 answered")
    out.append(f"⏱ **{trace.stats.total_seconds:.1f} s**")
    return out


def entities_md(links: Sequence[EntityLink]) -> str:
    if not links:
        return ""
    parts = []
    for link in links:
        target = linked(link.label or link.mention, link.qid) if link.qid else "*not linked*"
        parts.append(
            f"{md_escape(link.mention)} → {target} ({link.score:.2f}, {md_escape(link.method)})"
        )
    return "**Linked entities:** " + "; ".join(parts)


# ----------------------------------------------------------------------- classification
def classification_label(c: Classification | None) -> dict[str, float] | None:
    """Value for a ``gr.Label``: the probability of each route."""
    if c is None:
        return None
    return {"chained": round(c.p_chained, 4), "parallel": round(1.0 - c.p_chained, 4)}


def classification_md(c: Classification | None) -> str:
    if c is None:
        return "*Not classified yet.*"
    lines = [
        f"**Route:** {c.label}  ",
        f"**P(chained):** {c.p_chained:.3f}  ",
        f"**Method:** {md_escape(c.method)}",
    ]
    if c.reason:
        lines.append(f"\n**Why:** {md_escape(c.reason)}")
    if c.fired:
        lines.append("\n**Rules / examples that fired:**")
        lines += [f"- {md_escape(item)}" for item in c.fired]
    else:
        lines.append("\n*No rule or example fired.*")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ facts
def fact_row(fact: Fact) -> list[Any]:
    best = fact.evidence[0] if fact.evidence else None
    evidence = triple_md(best) if best else "*no evidence found*"
    if len(fact.evidence) > 1:
        evidence += f" (+{len(fact.evidence) - 1} more)"
    revised = md_escape(fact.revised) if fact.revised else ""
    return [
        md_escape(fact.claim),
        VERDICT_ICONS.get(fact.verdict, fact.verdict),
        evidence,
        score(best.cosine if best else None),
        score(best.rerank if best else None),
        score(best.score if best else None),
        revised,
    ]


def fact_rows(facts: Sequence[Fact]) -> list[list[Any]]:
    return [fact_row(f) for f in facts]


# ------------------------------------------------------------------------------ paths
def path_md(path: Path) -> str:
    if not path.hops:
        return ""
    parts = [linked(path.hops[0].subject, path.hops[0].subject_id)]
    for hop in path.hops:
        parts += [f"*{linked(hop.relation, hop.relation_id)}*", linked(hop.object, hop.object_id)]
    return " → ".join(parts)


def path_rows(paths: Sequence[Path]) -> list[list[Any]]:
    return [[i + 1, score(p.score, 4), path_md(p), len(p.hops)] for i, p in enumerate(paths)]


# ------------------------------------------------------------------------------ cost
def cost_md(stats: Stats) -> str:
    hits, misses = stats.kg_cache_hits, stats.kg_cache_misses
    rate = f" ({hits / (hits + misses):.0%} hit rate)" if hits + misses else ""
    return "\n".join(
        [
            "| Cost | |",
            "|---|---|",
            f"| LLM calls | {stats.llm_calls} |",
            f"| LLM tokens | {stats.llm_tokens} ({stats.llm_prompt_tokens} prompt + "
            f"{stats.llm_completion_tokens} completion) |",
            f"| LLM time | {stats.llm_seconds:.2f} s |",
            f"| KG queries | {stats.kg_queries} |",
            f"| KG cache hits / misses | {hits} / {misses}{rate} |",
            f"| Total time | {stats.total_seconds:.2f} s |",
        ]
    )


SETTINGS_SHOWN = (
    ("mode", "mode"),
    ("kg_backend", "KG"),
    ("kg_endpoint", "endpoint"),
    ("alpha", "α"),
    ("top_k_cosine", "K"),
    ("width", "W_max"),
    ("theta", "θ"),
    ("max_depth", "D_max"),
    ("top_paths", "top paths"),
)


def settings_md(config: dict[str, Any], notes: Sequence[str] = ()) -> str:
    """The settings this answer ran with (from the trace) and the pipeline's notes."""
    shown = dict(SETTINGS_SHOWN)
    if config.get("kg_backend") == "embedded":
        shown.pop("kg_endpoint")
    items = [f"{label} = `{config[key]}`" for key, label in shown.items() if key in config]
    text = "**Settings used:** " + ", ".join(items) if items else ""
    if notes:
        text += "\n\n**Notes:**\n" + "\n".join(f"- {md_escape(n)}" for n in notes)
    return text
