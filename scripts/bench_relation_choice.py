"""Which relation does each scoring choose? A measurement on MetaQA 1-hop dev questions, for
the parallel track's triple scoring (a finding for the pipeline, not part of it).

For each question: the bracketed topic entity is looked up in the MetaQA KB, all its head and
tail triples are fetched (as both tracks do), and each scorer's top-ranked triple gives a
(relation, direction); it is right when it equals the question type's relation
(``movie_to_director`` → directed_by; the direction follows from the entity's type here, so
only the relation is compared). Scorers:

- ``triple-cosine``: cosine(question, "subject relation object") — the parallel track's stage I
  (``HybridScorer`` on ``Triple.text()``) with α = 0;
- ``triple-cosine-masked``: the same with the mention masked in the question ("X") and the
  topic entity's name replaced by "X" in every triple;
- ``relation-scorer``: the chained track's ``RelationScorer`` on the relation labels (cue
  alignment with the mention masked), as the chained track scores its first hop.

    python scripts/bench_relation_choice.py --limit 300
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from dtkg.backends import get_embedder  # noqa: E402
from dtkg.config import DTKGConfig  # noqa: E402
from dtkg.eval.datasets import METAQA_RELATIONS, load_dataset  # noqa: E402
from dtkg.kg import open_kg  # noqa: E402
from dtkg.pipeline.scoring import HybridScorer, QuestionContext, RelationScorer  # noqa: E402

DATA = Path("../shared/data/metaqa")


def gold_relation(qtype: str) -> tuple[str, bool]:
    a, b = qtype.split("_to_")
    return (METAQA_RELATIONS[b], True) if a == "movie" else (METAQA_RELATIONS[a], False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    config = DTKGConfig.from_profile("cpu", kg_file=str(DATA / "kb.txt"))
    kg = open_kg(config)
    embedder = get_embedder(config)
    hybrid = HybridScorer(embedder, None, 0.0, config.top_k_cosine)
    relation_scorer = RelationScorer(embedder, cue_threshold=config.cue_threshold)
    examples = load_dataset(
        "metaqa", DATA / "1-hop" / "qa_dev.txt", limit=args.limit, seed=args.seed
    )
    right: Counter[str] = Counter()
    wrong_by_type: dict[str, Counter[str]] = {}
    n = 0
    for example in examples:
        found = kg.search_entities(example.topic or "", limit=1)
        if not found:
            continue
        qid = found[0].qid
        triples = kg.head_relations(qid) + kg.tail_relations(qid)
        if not triples:
            continue
        n += 1
        want = gold_relation(example.meta["qtype"])
        start = example.question.index("[")
        end = example.question.index("]") + 1
        qctx = QuestionContext.build(example.question, [(start, end)])

        def key(t) -> str:
            return t.relation_id

        choices = {}
        ranked = hybrid.rank(example.question, [t.text() for t in triples])
        choices["triple-cosine"] = key(triples[ranked[0].index])
        masked = [
            f"{'X' if t.subject_id == qid else t.subject} {t.relation} "  # noqa: B023
            f"{'X' if t.object_id == qid else t.object}"  # noqa: B023
            for t in triples
        ]
        ranked = hybrid.rank(qctx.masked, masked)
        choices["triple-cosine-masked"] = key(triples[ranked[0].index])
        options = list(dict.fromkeys(key(t) for t in triples))
        labels = [next(t.relation for t in triples if key(t) == o) for o in options]
        scores = relation_scorer.score(qctx, labels)  # best first
        choices["relation-scorer"] = options[labels.index(scores[0].label)]
        for name, choice in choices.items():
            if choice == want[0]:
                right[name] += 1
            else:
                wrong_by_type.setdefault(name, Counter())[example.meta["qtype"]] += 1
    print(f"{n} MetaQA 1-hop dev questions (seed {args.seed}) with a linked topic entity\n")
    print("| scorer | right relation | wrong, by question type |")
    print("|---|---|---|")
    for name in ("triple-cosine", "triple-cosine-masked", "relation-scorer"):
        worst = ", ".join(f"{q} {c}" for q, c in wrong_by_type.get(name, Counter()).most_common(4))
        print(f"| {name} | {right[name] / n:.3f} ({right[name]}/{n}) | {worst or '–'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
