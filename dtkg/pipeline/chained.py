"""The chained track (paper §3.3.2): expand reasoning paths from the central entity.

Search, layer by layer up to D_max (``max_depth``): the relations of every path end are
fetched with ONE ``head_relations_many`` and ONE ``tail_relations_many`` query per layer;
each candidate relation (label and direction) gets the hybrid relation score against the
question in context; administrative relations go (denoise type I), then relations below θ,
then the unnecessary ones (denoise type II), and each path keeps its best W_max
(``width``) — at most ``llm_select_max`` when more survive (chosen by score, or by the LLM).
A path's score is the product of its relation scores; paths are relation sequences whose
end is a *set* of entities, so set-valued answers keep every end.

Sufficiency (may stop early): with ``sufficiency_with="rules"`` a path is sufficient when it
has used up every relation cue of the question (words that align with a relation label or
with an entity type on the path) and its ends fit the expected answer type (when → dates,
who → people, "which university" → universities, …). With the LLM, sufficiency, necessity
and selection are judged in ONE batched yes/no call after the search, so the track costs a
fixed number of LLM calls whatever the depth.

The answer is built from the top-k paths only (``top_paths``) — see :mod:`.answer`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from dtkg.errors import ModelError
from dtkg.pipeline import denoise
from dtkg.pipeline.compare import value_kind
from dtkg.pipeline.context import RunContext
from dtkg.pipeline.parsing import DATA_RULE, delimit
from dtkg.pipeline.scoring import QuestionContext, RelationScore
from dtkg.pipeline.text import (
    ENTITY,
    PERSON,
    SIBLING_WORDS,
    VAGUE,
    WH_WORDS,
    AnswerType,
    asks_for_siblings,
    stem,
    tokenize,
)
from dtkg.pipeline.types import NO, UNKNOWN, YES, aligned_with_types, fits
from dtkg.trace import Event, Path, PathsExpandedEvent, ProgressEvent, Triple

HEAD, TAIL = "head", "tail"
MAX_ENDS = 2000  # ends kept per path (a relation into a hub can return thousands)
ORDER_PENALTY = 0.9  # a hop using a cue nearer the entity than an earlier hop's cue


@dataclass(frozen=True)
class Hop:
    relation_id: str
    label: str
    direction: str  # head: end → relation → new end ; tail: new end → relation → end
    score: float
    cosine: float
    rerank: float | None
    cue_distance: float | None = None  # distance to the mention of the question cue it used
    cue_side: int = 0  # which side of the mention that cue is on

    def arrow_label(self) -> str:
        return self.label if self.direction == HEAD else f"{self.label} (inverse)"


@dataclass
class End:
    id: str  # "" for a literal value
    label: str
    chain: list[Triple]
    count: int = 1


@dataclass
class Branch:
    """A relation path from the central entity and the set of entities it reaches."""

    hops: tuple[Hop, ...]
    score: float
    used: frozenset[int]
    ends: dict[str, End]
    sufficient: bool | None = None
    why: str = ""
    llm_sufficient: float | None = None
    type_fit: str = UNKNOWN
    coverage: float = 0.0
    priority: dict[str, int] = field(default_factory=dict)  # end label → rank (compare)
    last_cues: frozenset[int] = frozenset()  # the cues the last hop used

    @property
    def depth(self) -> int:
        return len(self.hops)

    def relations(self) -> str:
        return " → ".join(h.arrow_label() for h in self.hops)

    def ranked_ends(self) -> list[End]:
        last = len(self.priority)
        return sorted(
            self.ends.values(),
            key=lambda e: (self.priority.get(e.label, last), -e.count, e.label.lower(), e.id),
        )


@dataclass
class ChainResult:
    anchor: str
    branches: list[Branch]  # chosen, best first
    depth: int
    stopped_early: bool
    layers: list[list[Branch]] = field(default_factory=list)
    decided_by: str = "rules"


def _walked_back(branch: Branch) -> list[Hop]:
    """Relations the path walks there and back (X → r → Y ← r ← Z)."""
    return [
        a
        for a, b in zip(branch.hops, branch.hops[1:])
        if a.relation_id == b.relation_id and a.direction != b.direction
    ]


def reads_outwards(branch: Branch) -> bool:
    """Do the hops use their question cues in order of distance from the mention, on each
    side of it? "who directed films for the *writer* of [X]" reads writer first, then
    directed; a path that uses "directed" first reads the question inside out."""
    last: dict[int, float] = {}
    for hop in branch.hops:
        if hop.cue_distance is None:
            continue
        if hop.cue_distance < last.get(hop.cue_side, -1.0):
            return False
        last[hop.cue_side] = hop.cue_distance
    return True


def _preference(branch: Branch) -> tuple[bool, float]:
    """Among sufficient paths: those that read the question outwards first, then by score."""
    return (not reads_outwards(branch), -branch.score)


def sibling_cues(qctx: QuestionContext) -> set[int]:
    """Cues next to a sharing word ("share *actors*", "*actors* in common", "*co-wrote*")."""
    tokens = tokenize(qctx.question)
    marks = [
        t.index
        for t in tokens
        if t.lower in SIBLING_WORDS or (t.lower.startswith("co-") and len(t.lower) > 4)
    ]
    return {
        i
        for i, c in enumerate(qctx.cues)
        if c.word.startswith("co-") or any(0 < abs(c.index - m) <= 2 for m in marks)
    }


def _end_key(entity_id: str, label: str) -> str:
    return entity_id or f"literal:{label}"


class ChainSearch:
    """One chained search from one anchor entity (see the module docstring)."""

    def __init__(
        self,
        ctx: RunContext,
        anchor_id: str,
        anchor_label: str,
        qctx: QuestionContext,
        expected: AnswerType,
    ) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.anchor_id = anchor_id
        self.anchor_label = anchor_label
        self.qctx = qctx
        self.expected = expected
        self.head: dict[str, list[Triple]] = {}
        self.tail: dict[str, list[Triple]] = {}
        self.types: dict[str, set[str]] = {}
        # relation labels known so far: the graph's whole vocabulary when it is small, so
        # a question word naming a relation the search has not reached yet still counts
        self.seen_labels: dict[str, None] = dict.fromkeys(ctx.kg.relation_labels() or [])
        self._align: dict[str, np.ndarray] = {}
        self._type_labels = {t.lower() for t in self.config.type_relations}
        self.siblings = asks_for_siblings(qctx.question)
        self._relational_all: set[int] = set()
        self.sibling_cues = sibling_cues(qctx) if self.siblings else set()
        wh_noun = expected.noun
        self.wh_cue = next(
            (i for i, c in enumerate(qctx.cues) if wh_noun and stem(c.word) == stem(wh_noun)), None
        )

    # ------------------------------------------------------------------ KG access
    def _fetch(self, ids: list[str], *, head: bool, tail: bool) -> None:
        ids = [i for i in dict.fromkeys(ids) if i]
        with self.ctx.timed("kg"):
            need = [i for i in ids if i not in self.head] if head else []
            if need:
                found = self.ctx.kg.head_relations_many(need)
                for qid in need:
                    triples = found.get(qid, [])
                    self.head[qid] = triples
                    self.types[qid] = {
                        t.object for t in triples if t.relation.lower() in self._type_labels
                    }
                    for t in triples:
                        self.seen_labels.setdefault(t.relation)
            need = [i for i in ids if i not in self.tail] if tail else []
            if need:
                found = self.ctx.kg.tail_relations_many(need)
                for qid in need:
                    self.tail[qid] = found.get(qid, [])
                    for t in self.tail[qid]:
                        self.seen_labels.setdefault(t.relation)

    # ------------------------------------------------------------------ cue bookkeeping
    def _alignment(self, label: str) -> np.ndarray:
        if label not in self._align:
            missing = [lb for lb in self.seen_labels if lb not in self._align]
            if label not in missing:
                missing.append(label)
            matrix = self.ctx.relations.alignments(self.qctx, missing)
            for i, lb in enumerate(missing):
                self._align[lb] = matrix[:, i] if matrix.size else np.zeros(len(self.qctx.cues))
        return self._align[label]

    def relational_cues(self, *, with_answer_noun: bool = False) -> set[int]:
        """Cues that align with some relation label seen so far (the question asks for that
        relation somewhere), the answer-type noun excepted unless asked for."""
        out: set[int] = set()
        threshold = self.config.cue_threshold
        for label in list(self.seen_labels):
            row = self._alignment(label)
            out |= {int(i) for i in np.nonzero(row >= threshold)[0]}
        if self.wh_cue is not None and not with_answer_noun:
            out.discard(self.wh_cue)
        return out

    def _type_cues(self, ends: list[End], used: frozenset[int]) -> frozenset[int]:
        """Cues naming the type of these entities ("the country whose…", "the movie X")."""
        labels: set[str] = set()
        for end in ends[:50]:
            labels |= self.types.get(end.id, set())
        if not labels:
            return used
        extra = {
            i
            for i, cue in enumerate(self.qctx.cues)
            if i not in used
            and aligned_with_types(cue.word, labels, self.ctx.embedder, self.config.cue_threshold)
        }
        return used | extra

    # ------------------------------------------------------------------ sufficiency (rules)
    def judge(self, branch: Branch, required: set[int]) -> None:
        """Set ``branch.sufficient`` / ``why`` / ``type_fit`` / ``coverage``."""
        ends = branch.ranked_ends()
        missing = self.missing_cues(branch, required)
        branch.coverage = 1.0 - len(missing) / len(required) if required else 1.0
        if not ends:
            branch.sufficient, branch.why = False, "no entities reached"
            return
        labels = [e.label for e in ends[:20]]
        types = [self.types.get(e.id, set()) for e in ends[:20]]
        fit = fits(
            self.expected,
            labels,
            types,
            self.ctx.embedder,
            self.config.cue_threshold,
            [e.id for e in ends[:20]],
        )
        if fit == UNKNOWN:
            fit = self._shape_fit(branch)
        branch.type_fit = fit
        if missing:
            words = ", ".join(sorted(self.qctx.cues[i].word for i in missing))
            branch.sufficient, branch.why = False, f"question cue(s) not used yet: {words}"
        elif not self._ends_on_final_cue(branch, self._relational_all):
            words = self.qctx.cues[self._final_cue(self._relational_all)].word
            branch.sufficient = False
            branch.why = f"the question asks for its answer through '{words}', not this relation"
        elif self.siblings and not any(self._shared(h.label) for h in _walked_back(branch)):
            branch.sufficient = False
            branch.why = "the question asks for something shared, but the path never walks back"
        elif fit == NO:
            branch.sufficient = False
            branch.why = f"ends do not fit the expected answer ({self.expected.kind}" + (
                f" '{self.expected.noun}')" if self.expected.noun else ")"
            )
        else:
            branch.sufficient, branch.why = True, "every relation cue used; answer type fits"

    def _final_cue(self, relational: set[int]) -> int | None:
        """The cue the question word asks through — the path's last hop must name it:
        the answer noun ("what *genres* …", "which *country* …"), the verb or noun right after
        "who" ("who *directed* …", "who is the *director* of …"), the verb closing a
        "when/where … X *born*" question, or the cue before a final "by who"."""
        if not relational:
            return None
        if self.wh_cue is not None and self.wh_cue in relational:
            return self.wh_cue
        tokens = tokenize(self.qctx.question)
        wh = next((t for t in tokens if t.lower in WH_WORDS), None)
        if wh is None:
            return None
        by_token = {c.index: i for i, c in enumerate(self.qctx.cues)}
        mention_end = max(
            (t.index for t in tokens for s, e in self.qctx.mention_spans if s <= t.start < e),
            default=-1,
        )
        after = [i for i in relational if self.qctx.cues[i].index > wh.index]
        if not after:  # "… directed by who": the question word closes the question
            before = [i for i in relational if self.qctx.cues[i].index < wh.index]
            return max(before, key=lambda i: self.qctx.cues[i].index) if before else None
        nxt = tokens[wh.index + 1].lower if wh.index + 1 < len(tokens) else ""
        if self.wh_cue is not None:  # "which person directed …": skip the answer noun
            nxt = ""
        if wh.lower in ("when", "where", "what", "which", "how") or nxt in ("did", "does", "do"):
            closing = [i for i in after if self.qctx.cues[i].index > mention_end >= 0]
            if closing and (
                nxt in ("did", "does", "do", "was", "were", "is", "are")
                or wh.lower in ("when", "where")
            ):
                return max(closing, key=lambda i: self.qctx.cues[i].index)
        first = min(after, key=lambda i: self.qctx.cues[i].index)
        if self.qctx.cues[first].index - wh.index <= 4 and first in by_token.values():
            return first
        return None

    def _ends_on_final_cue(self, branch: Branch, relational: set[int]) -> bool:
        final = self._final_cue(relational)
        if final is None or not branch.hops:
            return True
        return bool(self._alignment(branch.hops[-1].label)[final] >= self.config.cue_threshold)

    def _shape_fit(self, branch: Branch) -> str:
        """Untyped graph: read the expected answer from the path's shape. A head hop ends in
        what its label names ("starred actors" → actors); a tail hop ends in the things that
        *have* that relation, which a "who" question or a different answer noun rules out."""
        last = branch.hops[-1]
        if self.expected.kind == PERSON and last.direction == TAIL:
            return NO
        noun = self.expected.noun
        if self.expected.kind == ENTITY and noun and noun not in VAGUE:
            own = (
                float(self._alignment(last.label)[self.wh_cue]) if self.wh_cue is not None else 0.0
            )
            if last.direction == HEAD:
                # "what genres …" ← has genre; "which movies share the actor of X" ↚ starred actors
                return YES if own >= self.config.cue_threshold else NO
            noun_align = (
                max(
                    (float(self._alignment(lb)[self.wh_cue]) for lb in self.seen_labels),
                    default=0.0,
                )
                if self.wh_cue is not None
                else 0.0
            )
            if noun_align >= self.config.cue_threshold:
                return NO  # the noun names a relation, so the answer is that relation's object
            if last.direction == TAIL:
                before = self._noun_before_cue(branch)
                if before and stem(before) != stem(noun):
                    return NO
        return YES

    def _noun_before_cue(self, branch: Branch) -> str | None:
        """The word just before the cue the last hop used ("the movies directed by" →
        movies): the question's name for that hop's result set."""
        for ci in branch.last_cues:
            cue = self.qctx.cues[ci]
            previous = [c for c in self.qctx.cues if c.index == cue.index - 1]
            if previous:
                return previous[0].word
        return None

    # ------------------------------------------------------------------ expansion
    def expand(self, parents: list[Branch], depth: int) -> list[Branch]:
        config = self.config
        groups_per_parent: list[dict[tuple[str, str], tuple[str, list[tuple[End, Triple]]]]] = []
        all_labels: dict[str, None] = {}
        for parent in parents:
            groups: dict[tuple[str, str], tuple[str, list[tuple[End, Triple]]]] = {}
            for end in parent.ends.values():
                if not end.id or (parent.hops and value_kind(end.label) is not None):
                    continue  # values (dates, numbers) are answers, not bridges
                for direction, source in ((HEAD, self.head), (TAIL, self.tail)):
                    for triple in source.get(end.id, []):
                        key = (triple.relation_id, direction)
                        groups.setdefault(key, (triple.relation, []))[1].append((end, triple))
                        all_labels.setdefault(triple.relation)
            groups_per_parent.append(groups)
        dropped = denoise.drop_administrative(self.ctx, list(all_labels))
        children: list[Branch] = []
        for parent, groups in zip(parents, groups_per_parent):
            keys = [k for k, (label, _) in groups.items() if label not in dropped]
            if not keys:
                continue
            labels = [groups[k][0] for k in keys]
            unique = list(dict.fromkeys(labels))
            with self.ctx.timed("score"):
                scored = self.ctx.relations.score(self.qctx, unique, parent.used)
            by_label: dict[str, RelationScore] = {s.label: s for s in scored}
            keys = [k for k in keys if groups[k][0] in by_label]  # beyond the top K: dropped
            value = {k: self._adjusted(parent, k, by_label[groups[k][0]]) for k in keys}
            self._first_hop_order(parent, keys, value, by_label, groups)
            options = sorted(keys, key=lambda k: (-value[k], k))
            passing = [k for k in options if value[k] >= config.theta]
            if not passing and options:
                # the entity is reached for a reason: its best relation stays as a bridge
                # (with its low score), so a chain can pass through it
                passing = options[:1]
                self.ctx.note(
                    f"chained: where no relation of a step reached θ = "
                    f"{config.theta}, its best one was kept as a low-scoring bridge"
                )
            options = passing
            if not options:
                continue
            options = self._prune(options, value)
            for key in options:
                label, members = groups[key]
                child = self._child(parent, key, label, members, by_label[label], value[key])
                if child is not None:
                    children.append(child)
        children.sort(key=lambda b: (-b.score, b.relations()))
        if len(children) > config.beam:
            children = children[: config.beam]
        return children

    def _adjusted(self, parent: Branch, key: tuple[str, str], rs: RelationScore) -> float:
        """The hop's score: the hybrid relation score, raised for walking the previous
        relation back when the question asks for something shared ("co-wrote with X"), and
        lowered when the hop uses a cue nearer the entity than an earlier hop did (the chain
        reads outwards from the entity)."""
        relation_id, direction = key
        consumed = rs.cue is not None and rs.alignment >= self.config.cue_threshold
        score = rs.combined
        if self.siblings and parent.hops and not consumed:
            previous = parent.hops[-1]
            if (
                previous.relation_id == relation_id
                and previous.direction != direction
                and self._shared(previous.label)
            ):
                score = max(score, previous.score)
        if consumed:
            cue = self.qctx.cues[rs.cue]
            same_side = [
                h for h in parent.hops if h.cue_side == cue.side and h.cue_distance is not None
            ]
            if same_side and cue.distance < max(h.cue_distance for h in same_side):
                score *= ORDER_PENALTY
        return score

    def _shared(self, label: str) -> bool:
        """Is this the relation the question says is shared ("share *actors* with", "the
        same *director*", "*co-wrote*")? Any relation when no word stands next to the
        sharing word."""
        threshold = self.config.cue_threshold
        named = {
            i
            for i in self.sibling_cues
            if any(self._alignment(lb)[i] >= threshold for lb in self.seen_labels)
        }
        if not named:  # "who appeared in the same *movie* with X": no relation named there
            return True
        row = self._alignment(label)
        return any(row[i] >= threshold for i in named)

    def _first_hop_order(self, parent: Branch, options, value, by_label, groups) -> None:
        """At the entity, the hop using the cue nearest to the mention comes first."""
        if parent.hops:
            return
        distances = {}
        for key in options:
            rs = by_label[groups[key][0]]
            if rs.cue is not None and rs.alignment >= self.config.cue_threshold:
                distances[key] = self.qctx.cues[rs.cue].distance
        if not distances:
            return
        nearest = min(distances.values())
        for key, distance in distances.items():
            if distance > nearest:
                value[key] *= ORDER_PENALTY

    def _prune(self, options: list[tuple[str, str]], value: dict) -> list[tuple[str, str]]:
        """Necessity (rules: score relative to the best ≥ threshold), selection and width."""
        config = self.config
        ctx = self.ctx
        best = value[options[0]] or 1.0
        if config.mode != "no-denoise" and not ctx.use_llm("necessity"):
            kept = [k for k in options if value[k] / best >= config.necessity_threshold]
            if len(kept) < len(options):
                ctx.note(
                    "denoise: relations whose score is below necessity_threshold × the "
                    "best score of their step were dropped (necessity_with = rules)"
                )
            options = kept
        if len(options) > config.llm_select_max and not ctx.use_llm("select"):
            options = options[: config.llm_select_max]
            ctx.note(
                f"select: more than {config.llm_select_max} relations survived a step; "
                "the best-scoring ones were kept (select_with = rules)"
            )
        return options[: config.width]

    def _child(
        self, parent: Branch, key, label: str, members, rs: RelationScore, score: float
    ) -> Branch | None:
        relation_id, direction = key
        consumed = rs.cue is not None and rs.alignment >= self.config.cue_threshold
        distance = self.qctx.cues[rs.cue].distance if consumed else None
        side = self.qctx.cues[rs.cue].side if consumed else 0
        hop = Hop(
            relation_id,
            label,
            direction,
            round(score, 4),
            round(rs.cosine, 4),
            None if rs.rerank is None else round(rs.rerank, 4),
            distance,
            side,
        )
        ends: dict[str, End] = {}
        for end, triple in members:
            if direction == HEAD:
                new_id, new_label = triple.object_id, triple.object
            else:
                new_id, new_label = triple.subject_id, triple.subject
            if new_id and new_id in (self.anchor_id, end.id):
                continue  # the topic entity is never its own answer; no step straight back
            scored = dataclasses.replace(
                triple, score=hop.score, cosine=hop.cosine, rerank=hop.rerank
            )
            k = _end_key(new_id, new_label)
            if k in ends:
                ends[k].count += 1
            elif len(ends) < MAX_ENDS:
                ends[k] = End(new_id, new_label, [*end.chain, scored])
        if not ends:
            return None
        used = parent.used
        if consumed:
            used = used | {rs.cue} | self._same_phrase(rs.cue, label, parent.used)
        # the cue a hop uses is its best unused one; other words naming the same relation
        # count as covered when the path is judged (see missing_cues)
        return Branch(
            (*parent.hops, hop), parent.score * hop.score, used, ends, last_cues=used - parent.used
        )

    def _same_phrase(self, cue: int, label: str, used: frozenset[int]) -> set[int]:
        """The same word root right next to the used cue ("the director that directed X")
        is the same mention of the relation."""
        row = self._alignment(label)
        root, at = stem(self.qctx.cues[cue].word), self.qctx.cues[cue].index
        return {
            i
            for i, c in enumerate(self.qctx.cues)
            if i not in used
            and i != cue
            and row[i] >= self.config.cue_threshold
            and stem(c.word) == root
            and abs(c.index - at) <= 2
        }

    def missing_cues(self, branch: Branch, required: set[int]) -> set[int]:
        """Required cues the path does not cover. A cue is covered when a hop used it or when
        it names one of the path's relations ("describe … in a few words" → has tags); a word
        root repeated apart ("the director of X also directed …") needs as many hops of its
        relation as it has mentions."""
        threshold = self.config.cue_threshold
        rows = [self._alignment(h.label) for h in branch.hops]
        covered = set(branch.used) | {i for i in required if any(r[i] >= threshold for r in rows)}
        missing = required - covered
        by_root: dict[str, list[int]] = {}
        for i in required:
            by_root.setdefault(stem(self.qctx.cues[i].word), []).append(i)
        for cues in by_root.values():
            positions = sorted(self.qctx.cues[i].index for i in cues)
            mentions = 1 + sum(b - a > 2 for a, b in zip(positions, positions[1:]))
            hops = sum(any(r[i] >= threshold for i in cues) for r in rows)
            if hops < mentions:
                missing |= set(cues) - set(branch.used) or set(cues[-1:])
        return missing

    # ------------------------------------------------------------------ the search
    def run(self) -> Iterator[Event]:
        """Yields progress and per-layer events; returns a :class:`ChainResult`."""
        config = self.config
        ctx = self.ctx
        root = Branch(
            (), 1.0, frozenset(), {self.anchor_id: End(self.anchor_id, self.anchor_label, [])}
        )
        layers: list[list[Branch]] = [[root]]
        stop_rules = not ctx.use_llm("sufficiency")
        stopped_at: int | None = None
        for depth in range(1, config.max_depth + 1):
            parents = layers[-1]
            frontier = [
                e.id
                for b in parents
                for e in b.ends.values()
                if e.id and (not b.hops or value_kind(e.label) is None)
            ]
            yield ProgressEvent(
                "expand",
                f"Fetching relations of {len(set(frontier))} "
                f"entit{'y' if len(set(frontier)) == 1 else 'ies'} "
                f"(layer {depth})",
            )
            self._fetch(frontier, head=True, tail=True)  # both: the check needs the vocabulary
            if depth == 1:
                root.used = self._type_cues(list(root.ends.values()), root.used)
            else:
                self._judge_layer(parents)
                if stop_rules and any(b.sufficient for b in parents):
                    stopped_at = depth - 1
                    break
            self._fetch(frontier, head=False, tail=True)
            with ctx.timed("expand"):
                children = self.expand(parents, depth)
            if not children:
                ctx.note(f"chained: no relation passed the filters at layer {depth}")
                break
            layers.append(children)
            yield PathsExpandedEvent(
                "expand", depth=depth, paths=top_paths(children, config.top_paths)
            )
        if stopped_at is None and len(layers) > 1:
            last = layers[-1]
            needs_types = self.expected.kind in (PERSON, ENTITY, "place")
            if needs_types:
                self._fetch(
                    [e.id for b in last for e in list(b.ends.values())[:50] if e.id],
                    head=True,
                    tail=False,
                )
            self._judge_layer(last)
        result = ChainResult(self.anchor_label, [], 0, stopped_at is not None, layers)
        if stopped_at is not None:
            chosen = [b for b in layers[stopped_at] if b.sufficient]
            ctx.note(
                f"chained: stopped early after layer {stopped_at} — sufficiency check "
                f"(rules): {chosen[0].why}"
            )
            result.branches, result.depth = sorted(chosen, key=_preference), stopped_at
        else:
            result.branches, result.depth = self._choose(layers)
        return result

    def _judge_layer(self, branches: list[Branch]) -> None:
        for branch in branches:
            branch.used = self._type_cues(list(branch.ends.values()), branch.used)
        required = self.relational_cues()
        self._relational_all = self.relational_cues(with_answer_noun=True)
        for branch in branches:
            self.judge(branch, required)

    def _choose(self, layers: list[list[Branch]]) -> tuple[list[Branch], int]:
        """No early stop: the shallowest layer with a sufficient path, else the best path by
        (type fit, cue coverage, score)."""
        for depth, layer in enumerate(layers[1:], 1):
            sufficient = [b for b in layer if b.sufficient]
            if sufficient:
                return sorted(sufficient, key=_preference), depth
        candidates = [b for layer in layers[1:] for b in layer]
        if not candidates:
            return [], 0
        order = {YES: 2, UNKNOWN: 1, NO: 0}
        candidates.sort(key=lambda b: (-order.get(b.type_fit, 1), -b.coverage, -b.score))
        best = candidates[0]
        if best.type_fit == NO:
            self.ctx.note(
                "chained: no path reached an answer of the expected kind "
                f"({self.expected.kind}); abstaining rather than guessing"
            )
            return [], 0
        self.ctx.note(
            f"chained: no path passed the sufficiency check; answering from the best "
            f"path by answer-type fit, cue coverage and score ({best.why})"
        )
        same_depth = [b for b in candidates if b.depth == best.depth]
        return same_depth, best.depth


# ---------------------------------------------------------------------- LLM judgments
JUDGE_SYSTEM = (
    "You judge, for a question, whether a knowledge-graph relation is needed or whether "
    "reasoning paths contain enough information to answer it. Reply with exactly one word: "
    "yes or no. " + DATA_RULE
)


def sufficiency_prompt(question: str, branch: Branch, top: int) -> str:
    lines = "\n".join(p.arrow() for p in branch_paths(branch, top))
    return (
        f"{delimit(question)}\nPaths:\n{lines}\n"
        "Do these paths contain enough information to answer the question? (yes/no):"
    )


def judge_with_llm(ctx: RunContext, result: ChainResult) -> None:
    """ONE batched yes/no call: necessity of every relation label on the candidate paths
    (also used to select relations) and sufficiency of the best paths at every depth."""
    layers = result.layers[1:]
    if not layers:
        return
    config = ctx.config
    use_necessity = ctx.use_llm("necessity") and config.mode != "no-denoise"
    use_select = ctx.use_llm("select")
    use_sufficiency = ctx.use_llm("sufficiency")
    labels = list(dict.fromkeys(h.label for layer in layers for b in layer for h in b.hops))
    prompts = []
    if use_necessity or use_select:
        prompts += [denoise.necessity_prompt(ctx.question, label) for label in labels]
    judged: list[Branch] = []
    if use_sufficiency:
        for layer in layers:
            judged += sorted(layer, key=lambda b: -b.score)[:2]
        prompts += [sufficiency_prompt(ctx.question, b, 2) for b in judged]
    if not prompts:
        return
    try:
        with ctx.timed("llm-judge"):
            scores = ctx.llm.score_options_many(prompts, ["yes", "no"], system=JUDGE_SYSTEM)
    except ModelError as exc:
        ctx.note(f"chained: the LLM judgments failed ({exc}); the rules decided instead")
        return
    if all(s.method == "uniform" for s in scores):
        ctx.note("chained: the LLM gave no usable yes/no; the rules decided instead")
        return
    n = len(labels) if (use_necessity or use_select) else 0
    p_need = {label: s.probs["yes"] for label, s in zip(labels, scores[:n])}
    for branch, s in zip(judged, scores[n:]):
        branch.llm_sufficient = s.probs["yes"]
    keep_layers: list[list[Branch]] = []
    for layer in layers:
        kept = list(layer)
        if use_necessity:
            kept = [
                b
                for b in kept
                if all(p_need[h.label] >= config.necessity_threshold for h in b.hops)
            ]
        if use_select:
            last = list(dict.fromkeys(b.hops[-1].label for b in kept))
            if len(last) > config.llm_select_max:
                chosen = set(sorted(last, key=lambda lb: -p_need[lb])[: config.llm_select_max])
                kept = [b for b in kept if b.hops[-1].label in chosen]
        keep_layers.append(kept)
    if use_necessity:
        dropped = [lb for lb in labels if p_need[lb] < config.necessity_threshold]
        if dropped:
            ctx.note(
                f"denoise: the LLM judged {len(dropped)} relation(s) unnecessary "
                f"({', '.join(dropped[:6])})"
            )
    if not any(keep_layers):
        ctx.note("chained: the LLM judged every path unnecessary; the rules' choice stands")
        return
    if use_sufficiency:
        for depth, layer in enumerate(keep_layers, 1):
            ok = [b for b in layer if b.llm_sufficient is not None and b.llm_sufficient >= 0.5]
            if ok:
                result.branches = sorted(layer, key=lambda b: (-(b.llm_sufficient or 0), -b.score))
                result.depth, result.decided_by = depth, "llm"
                ctx.note(
                    f"chained: the LLM judged the paths of layer {depth} sufficient "
                    f"(P(yes) = {ok[0].llm_sufficient:.2f})"
                )
                return
        ctx.note("chained: the LLM judged no layer's paths sufficient; the rules' choice stands")
    chosen = [b for b in result.branches if any(b is k for layer in keep_layers for k in layer)]
    if chosen:
        result.branches = chosen


# ---------------------------------------------------------------------- paths for the trace
def branch_paths(branch: Branch, limit: int) -> list[Path]:
    return [Path(round(branch.score, 6), list(end.chain)) for end in branch.ranked_ends()[:limit]]


def top_paths(branches: list[Branch], k: int) -> list[Path]:
    """The top-k concrete paths: the best branch's ends first, then the next branches'."""
    out: list[Path] = []
    per_branch = max(1, k)
    for branch in sorted(branches, key=lambda b: -b.score):
        for path in branch_paths(branch, per_branch):
            out.append(path)
            if len(out) >= k:
                return out
    return out


def search_anchor(
    ctx: RunContext, anchor_id: str, anchor_label: str, qctx: QuestionContext, expected: AnswerType
) -> Iterator[Event]:
    """Run the search (and the batched LLM judgments when configured); returns ChainResult."""
    search = ChainSearch(ctx, anchor_id, anchor_label, qctx, expected)
    result = yield from search.run()
    if (
        ctx.use_llm("sufficiency")
        or (ctx.use_llm("necessity") and ctx.config.mode != "no-denoise")
        or ctx.use_llm("select")
    ):
        judge_with_llm(ctx, result)
    return result
