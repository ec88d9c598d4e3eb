"""The About tab: what DTKG does and what this instance runs."""

from __future__ import annotations

from dtkg.config import DTKGConfig
from dtkg.feedback import kg_endpoint_of

INTRO = """\
**DTKG** (Dual-Track Knowledge-Graph-verified reasoning) answers multi-hop questions and checks
its work against Wikidata.

1. **Classification.** A question is *chained* when answering needs a hop through an unnamed
   intermediate entity ("Where was the director of Inception born?"), *parallel* when it is a
   set of independent facts ("Who directed Inception and when was it released?").
2. **Parallel track — fact verification.** Atomic facts of a draft answer are linked to
   Wikidata entities; candidate triples are scored by embedding cosine (top K kept), then by a
   reranker; combined = α·rerank + (1 − α)·cosine. Each fact is *supported* by the best triple
   or *revised* from it.
3. **Chained track — reasoning paths.** From the central entity, head and tail relations are
   scored against the question and expanded depth-first (at most D_max hops, W_max relations per
   step, threshold θ); a path's score is the product of its relations' scores; the answer comes
   from the top paths only.
4. **Task-aware denoising** drops administrative relations (IDs, sources, versions, metadata)
   and relations the question does not need.

Every answer ships with its evidence: the *Facts* and *Reasoning paths* tabs show the triples,
with links to their Wikidata pages, and the *Trace & cost* tab the full audit record.
"""


NO_LLM_STAGES = (
    "none — every stage uses its deterministic alternative (rules, embeddings, label matching)"
)


def about_md(config: DTKGConfig, profile_note: str = "", feedback_where: str = "") -> str:
    """What this instance runs: profile, models, KG, the α = 0 note without a reranker."""
    llm = config.llm_model if config.llm_backend != "none" else "none"
    if config.llm_gguf_file and config.llm_backend == "transformers":
        llm += f" ({config.llm_gguf_file})"
    if config.llm_backend == "openai":
        llm += " via an OpenAI-compatible server"
    reranker = config.reranker_model if config.reranker_backend != "none" else None
    stages = sorted(
        name.removesuffix("_with")
        for name, value in config.public_dict().items()
        if name.endswith("_with") and value == "llm"
    )
    lines = [
        INTRO,
        "### This instance",
        f"- **Profile:** `{config.profile}`" + (f" — {profile_note}" if profile_note else ""),
        f"- **LLM:** `{llm}`",
        f"- **LLM stages:** {', '.join(stages) if stages else NO_LLM_STAGES}",
        f"- **Embedder:** `{config.embedder_model}`",
        f"- **Reranker:** `{reranker}`" if reranker else "- **Reranker:** none",
        f"- **Knowledge graph:** `{kg_endpoint_of(config.public_dict())}`",
        f"- **Defaults:** mode `{config.mode}`, α = {config.alpha}, K = {config.top_k_cosine}, "
        f"W_max = {config.width}, θ = {config.theta}, D_max = {config.max_depth}",
    ]
    if reranker is None:
        lines.append(
            "\n> **α = 0:** no reranker runs in this profile (no cross-encoder with trained "
            "weights is available offline), so candidates are ranked by embedding cosine alone."
        )
    if feedback_where:
        lines.append(
            f"\nRatings are stored in {feedback_where} with the answer's trace and an "
            "anonymous random session id — never IP addresses or request headers."
        )
    return "\n".join(lines)
