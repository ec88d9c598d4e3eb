"""Task classification (paper §3.2): does answering need facts joined through a shared
intermediate entity (*chained*), or are the facts independent (*parallel*)?

:func:`classify` dispatches on ``config.classify_with``:

``"llm"`` → :class:`LLMClassifier`
    The paper's few-shot prompt: Table 1's five rules and Appendix B.2's six examples (the
    instruction text is ours). P(chained) = P("yes") from the first-token log-probabilities
    (:meth:`dtkg.backends.llm.LLM.score_options`); free text is never parsed. When the LLM is
    missing, fails (:class:`~dtkg.errors.ModelError`) or returns a uniform distribution, the
    rules classifier answers instead and the result says so (method ``"fallback:rules"``).

``"rules"`` → :class:`RulesClassifier` (no LLM; the cpu profile's default)
    Linguistic cues read from the question (see :func:`analyse`) plus the nearest neighbours
    among a hand-labelled question set (``data/labelled_questions.yaml``), combined by one
    logistic formula with hand-set weights::

        z = BIAS + Σ weight(cue) over the cues that fired + W_KNN · knn
        P(chained) = 1 / (1 + exp(−z)),     label = chained iff P(chained) ≥ 0.5

    ``knn`` ∈ [−1, 1] is the similarity-weighted vote (+1 chained, −1 parallel) of the K most
    similar labelled questions (embedding cosine). The cues and their weights are in
    :data:`WEIGHTS`; the main one counts the relations the question chains (descriptors such as
    "the director of X", "the film that …", "the movies written by X", "X's wife", plus the
    asked relation unless the question merely equates the answer with a descriptor, as in
    "what is the capital of France?"). Two or more relations push towards *chained*; one
    relation is a single triple (rule 5) and pushes towards *parallel*; comparisons,
    coordination and "both/same/in common" between two entities push hard towards *parallel*.
    The weights were set by hand and checked on the HotpotQA and MetaQA dev files with
    ``scripts/routing_check.py`` (no per-question or dataset-specific strings).
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from dtkg.backends.embedding import Embedder
from dtkg.backends.llm import LLM
from dtkg.config import DTKGConfig
from dtkg.errors import ModelError
from dtkg.pipeline.parsing import DATA_RULE, delimit
from dtkg.trace import Classification, Label

__all__ = [
    "BIAS",
    "W_KNN",
    "WEIGHTS",
    "PAPER_EXAMPLES",
    "RULES",
    "LabelledQuestion",
    "Analysis",
    "LLMClassifier",
    "RulesClassifier",
    "analyse",
    "build_prompt",
    "classify",
    "load_labelled",
]

CHAINED: Label = "chained"
PARALLEL: Label = "parallel"
LABELLED_PATH = Path(__file__).resolve().parent / "data" / "labelled_questions.yaml"

# ------------------------------------------------------------------------- the paper's prompt
#: Table 1 of the paper: question characteristic → judgment.
RULES: tuple[tuple[str, Label], ...] = (
    ("Answer via a shared intermediate entity (A→B→C)", CHAINED),
    ("Single-entity attribute query", PARALLEL),
    ("Independent entity comparison", PARALLEL),
    ("Multiple independent facts for the same entity", PARALLEL),
    ("Solvable with a single triple", PARALLEL),
)

#: Appendix B.2's six examples: (question, "yes"/"no", why).
PAPER_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("Where was the CEO of Microsoft born?", "yes", "Microsoft → CEO → birthplace"),
    ("Who is older: Elon Musk or Jeff Bezos?", "no", "two independent age look-ups"),
    (
        "Which university did the inventor of Python attend?",
        "yes",
        "Python → inventor → university",
    ),
    ("What is the capital and population of France?", "no", "independent facts"),
    (
        "Who directed Inception and what other films did they make?",
        "no",
        "the subject stays the same",
    ),
    (
        "What is the tallest mountain and who first climbed it?",
        "no",
        "independent facts, each one relation",
    ),
)

_PROMPT_HEAD = """\
Decide whether answering the question below requires multi-hop reasoning through a shared \
intermediate entity.

Rules:
1. Reply with exactly one word: "yes" or "no".
2. Say "yes" only if the answer can be reached just by first finding an intermediate entity \
and then following a further fact from it (A → B → C).
3. Say "no" in these cases:
   - the question asks for an attribute of one entity (age, birthplace, height, a date);
   - it compares independent entities (who is older, which is taller, which came first);
   - it asks for several independent facts about the same entity;
   - a single fact (one triple, A → B) answers it.

Examples:
"""


def build_prompt(question: str) -> str:
    """The classification prompt: the five rules, the six paper examples, then the question."""
    shots = "\n".join(f'Q: "{q}" → {a} ({why})' for q, a, why in PAPER_EXAMPLES)
    return f"{_PROMPT_HEAD}{shots}\n\n{DATA_RULE}\n{delimit(question)}\nAnswer (yes/no):"


# ------------------------------------------------------------------------ the labelled set
@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    label: Label
    rule: int  # 1-5, Table 1
    domain: str = ""
    style: str = "natural"


@lru_cache(maxsize=4)
def load_labelled(path: str | Path = LABELLED_PATH) -> tuple[LabelledQuestion, ...]:
    """The hand-labelled questions (kNN neighbours of the rules classifier)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return tuple(
        LabelledQuestion(
            question=str(row["q"]).strip(),
            label=row["label"],
            rule=int(row["rule"]),
            domain=str(row.get("domain", "")),
            style=str(row.get("style", "natural")),
        )
        for row in data["questions"]
    )


# ---------------------------------------------------------------------- question structure
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENT = "ENT"  # an entity mention: [bracketed], "quoted", or a run of capitalised words
NUM = "NUM"

WH = _words("what which who whom whose where when why how")
BE = _words("is are was were be been being am")
DO = _words("do does did")
HAVE = _words("has have had having")
MODAL = _words("can could will would shall should may might must")
DET = _words("the a an this these those its their his her our your my some any each every another")
PREP = _words(
    "of in on at by for from with to into about as under over between among during after "
    "before since until through near against without within like than per via across behind "
    "beyond around along upon onto towards toward"
)
PRON = _words("it they he she him them we you i me us someone anyone")
CONJ = _words("and or but nor")
_OTHER_FUNC = _words(
    "not also that there then than so very only just still ever too more most less least 's , "
    "; : ? ! ( ) one"
)
FUNC = WH | BE | DO | HAVE | MODAL | DET | PREP | PRON | CONJ | _OTHER_FUNC

#: Head nouns that do not name a relation in "N of X" (quantities, kinds, idioms).
_NONRELATIONAL = _words(
    "kind kinds type types sort sorts one ones some all most many each both none any part "
    "number numbers lot lots name names few couple variety group set list pair half majority "
    "rest total amount instead because out ahead front terms spite behalf top side example "
    "form piece think thought made composed consisting consists full aware"
)
#: Wh-nouns that name an attribute (a relation of their own), unlike class nouns (city, person).
_ATTRIBUTE_NOUNS = _words(
    "type types kind kinds sort sorts genre genres style styles language languages year years "
    "date dates time age height length size weight colour color nationality population rating "
    "price value"
)
#: Capitalised role words followed by "of" are relational nouns, not names ("the CEO of X").
_TITLES = _words(
    "ceo cfo cto coo president vice king queen prince princess emperor empress pope mayor "
    "governor chancellor minister premier secretary director founder chairman chairwoman "
    "chair head leader captain coach duke duchess earl bishop archbishop senator chief sultan "
    "tsar czar pharaoh shah owner author creator wife husband son daughter father mother"
)
#: Words that may open a question without being (part of) a name.
_STARTERS = FUNC | _words(
    "name list tell give describe identify show please q1 q2 q3 in during after before"
)
_NAME_CONNECTORS = _words("of the de del della di da du des la le les van von der den y &")

_IRREGULAR_PP = _words(
    "born written known made built held led found won shot sung drawn taken given seen done "
    "sold bought set begun grown thrown chosen spoken stolen worn driven ridden hidden eaten "
    "fallen forgotten frozen broken woven beaten shown sewn flown blown understood brought "
    "taught caught fought sought told paid laid kept left lost meant met said sent spent "
    "stood struck hung bound ground lit fed bred fled dealt felt heard cast overseen "
    "undertaken rewritten co-written"
)
_IRREGULAR_PAST = _words(
    "wrote sang drew took gave saw did sold bought began grew threw chose spoke stole wore "
    "drove rode hid ate fell froze broke wove showed flew blew understood brought taught "
    "caught fought told paid laid kept left lost meant met said sent spent stood struck won "
    "became came ran found made built held led"
)
_ED_NOT_VERBS = _words(
    "hundred indeed speed seed breed creed greed naked wicked sacred beloved red bed need "
    "feed united"
)
_ING_NOT_VERBS = _words(
    "king thing things wedding building buildings morning evening ring string spring wing "
    "ceiling during nothing something anything everything bring sibling siblings beijing "
    "viking vikings clothing meaning earring darling pudding"
)
_AGENT_NOT_NOUNS = _words(
    "answer consider discover remember offer order enter cover gather wonder prefer suffer "
    "deliver register monitor after other either neither never ever over under however "
    "whether rather further farther together later earlier faster longer larger bigger "
    "smaller taller older younger higher lower closer newer greater better"
)
_SAY_VERBS = _words("said stated claimed believed thought announced reported says so such now")
_RELATIVE = _words("that which who whom whose where")
_COMPARATIVES = _words(
    "older younger taller shorter longer larger bigger smaller higher lower earlier later "
    "further farther closer nearer newer heavier lighter faster slower wider deeper greater "
    "better worse more fewer less first last before recently"
)
_SUPERLATIVES = _words(
    "oldest youngest tallest shortest longest largest biggest smallest highest lowest "
    "earliest latest furthest farthest closest nearest newest heaviest lightest fastest "
    "slowest widest deepest greatest best worst most least first"
)
_EST_NOT_SUPERLATIVE = _words(
    "interest forest honest request harvest protest contest west guest test chest nest rest "
    "arrest suggest digest manifest everest conquest quest invest modest priest"
)


def _is_participle(word: str) -> bool:
    return word in _IRREGULAR_PP or (
        word.endswith("ed") and len(word) > 3 and word not in _ED_NOT_VERBS and word.isalpha()
    )


def _is_ing(word: str) -> bool:
    return word.endswith("ing") and len(word) > 5 and word not in _ING_NOT_VERBS


def _is_content(word: str) -> bool:
    return word not in FUNC and word not in (ENT, NUM) and word[:1].isalpha()


def _is_nounish(word: str) -> bool:
    """Could head a noun phrase: an entity or a content word that is not an obvious verb form."""
    return word == ENT or (
        _is_content(word)
        and not _is_participle(word)
        and word not in _IRREGULAR_PAST
        and not word.endswith("ly")
    )


def _is_agent_noun(word: str) -> bool:
    return (
        _is_content(word)
        and len(word) > 4
        and word not in _AGENT_NOT_NOUNS
        and re.search(r"(er|or|ist|ian|ent|ant)s?$", word) is not None
    )


def _same_stem(a: str, b: str) -> bool:
    return len(a) >= 4 and len(b) >= 4 and a[:5] == b[:5]


_BRACKETED = re.compile(r"\[[^\]\n]{1,150}\]")
_QUOTED = re.compile(r'"[^"\n]{1,150}"|“[^”\n]{1,150}”|«[^»\n]{1,150}»')
_TOKEN = re.compile(
    r"ENT|\d[\d,.:/]*(?:st|nd|rd|th|s)?(?![\w])|'s\b|[^\W\d_](?:[\w'\-.&]*\w)?|[,;:?!.]"
)
_CONTRACTION = re.compile(
    r"\b(who|what|where|when|which|how|that|it|there|he|she)'s\b|\bwhats\b", re.I
)


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper()


def mask(question: str) -> list[str]:
    """Lower-cased tokens with entity mentions replaced by ``ENT`` and numbers by ``NUM``."""
    text = question.replace("’", "'").replace("‘", "'").strip()
    if not any(c.islower() for c in text):
        text = text.lower()  # ALL CAPS: capitals say nothing about names
    text = _BRACKETED.sub(f" {ENT} ", text)
    text = _QUOTED.sub(f" {ENT} ", text)
    text = _CONTRACTION.sub(lambda m: f"{(m.group(1) or 'what')} is", text)
    text = re.sub(r"(\w)'s\b", r"\1 's", text)
    raw = _TOKEN.findall(text)
    out: list[str] = []
    i = 0
    while i < len(raw):
        tok = raw[i]
        if tok == ".":
            # a sentence boundary ("… musicians. Which …"), not an abbreviation ("St. Louis")
            if i and raw[i - 1][:1].islower() and len(raw[i - 1]) > 2 and i + 1 < len(raw):
                out.append(".")
        elif tok == ENT:
            out.append(ENT)
        elif tok[:1].isdigit():
            out.append(NUM)
        elif _is_capitalised(tok) and _starts_name(raw, i):
            j = i + 1
            while j < len(raw):
                if (
                    raw[j] == ENT
                    or (_is_capitalised(raw[j]) and raw[j].lower() not in _TITLES)
                    or (
                        raw[j].lower() in _NAME_CONNECTORS
                        and j + 1 < len(raw)
                        and (_is_capitalised(raw[j + 1]) or raw[j + 1] == ENT)
                        and raw[j + 1].lower() not in _STARTERS
                    )
                ):
                    j += 1
                else:
                    break
            out.append(ENT)
            i = j
            continue
        else:
            out.append(tok.lower())
        i += 1
    # collapse runs of entities ("the song ENT ENT" → one mention; "Scream 2" → one)
    merged: list[str] = []
    for t in out:
        if merged and merged[-1] == ENT and t in (ENT, NUM):
            continue
        merged.append(t)
    return merged


def _starts_name(raw: list[str], i: int) -> bool:
    low = raw[i].lower()
    nxt = raw[i + 1] if i + 1 < len(raw) else ""
    if low in _TITLES and nxt.lower() in ("of", "'s"):
        return False  # "the CEO of Microsoft": a relational noun
    if low in _TITLES and i + 2 < len(raw) and nxt.lower() in _TITLES and raw[i + 2] == "of":
        return False  # "the Prime Minister of …"
    first = (
        i == 0
        or raw[i - 1] in (":", ";", "?", "!")
        or (raw[i - 1] == "." and i >= 2 and raw[i - 2][:1].islower() and len(raw[i - 2]) > 2)
    )
    if not first:
        return True
    if low in _STARTERS:
        return False
    # A capitalised first word is a name only when a name visibly goes on.
    return bool(nxt) and (
        (_is_capitalised(nxt) and nxt.lower() not in _STARTERS) or nxt in ("'s", ENT)
    )


# ----------------------------------------------------------------------------- cue analysis
#: Hand-set weights of the logistic formula (positive → chained, negative → parallel).
BIAS = 0.8  # a lean towards chained: the chained branch also answers one-hop questions
W_KNN = 0.5
K_NEIGHBOURS = 7
WEIGHTS: dict[str, float] = {
    # relations chained through intermediate entities (A → B → C)
    "extra_relation": 2.0,  # per relation beyond the first, at most two counted
    "single_relation": -2.0,  # one relation: a single triple answers it (rule 5)
    "shared_with": 3.0,  # "together with X", "the same director as X", "co-wrote with X"
    # comparisons of independent entities (rule 3)
    "choice": -6.0,  # "…, A or B?", "between A and B"
    "entity_pair": -2.0,  # "A and B" as the topic: "Are A and B …", "What do A and B …"
    "entity_pair_object": -0.5,  # "A and B" further in: "written by A and B"
    "both": -2.5,  # both / either / neither
    "in_common": -2.5,  # "have in common", "A and B share", "the same … (A and B)"
    "comparative": -1.0,  # older, more … than, first (with a pair or "than")
    "superlative": -0.5,  # youngest, tallest, largest (weak: bridges use them too)
    "superlative_predicate": -3.0,  # "… was released first", "… is the oldest"
    "yes_no": -3.0,  # "Are …", "Did …", "Is …"
    # several independent facts about one entity (rule 4)
    "coordinated_attributes": -3.0,  # "the capital and population of"
    "coordinated_questions": -3.0,  # "… and what/when/who …", "when and where"
    # each content word beyond FREE_CONTENT_WORDS: descriptions that usually pin down an
    # intermediate entity ("the Mexican singer who …"); a single triple needs few words
    "descriptive_words": 0.8,
    # each named entity beyond the first (not coordinated): linked to the rest by a relation
    "extra_entities": 1.5,
}
FREE_CONTENT_WORDS = 3
UNMARKED_NAME_WORDS = 2
MAX_DESCRIPTIVE = 3.0


@dataclass
class Analysis:
    """What the cue reader found in one question."""

    tokens: list[str]
    relations: int  # estimated number of chained relations (descriptors + the asked one)
    descriptors: list[str] = field(default_factory=list)  # descriptor cue names, in order
    equation: bool = False  # "what is <descriptor>": the asked relation is the descriptor
    cues: dict[str, float] = field(default_factory=dict)  # cue → contribution to z

    @property
    def z(self) -> float:
        return sum(self.cues.values())


_WH_ALT = "what|who|whom|when|where|which|how|why"
_CHOICE = re.compile(
    rf"\b{ENT} ,? ?or (?:the |a |an )?{ENT}\b"  # "…, A or B"
    r"|, (?:the |a |an )?[\w'-]+(?: [\w'-]+){0,3} ,? ?or (?:the |a |an )?[\w'-]+(?: [\w'-]+){0,3}$"
    rf"|\bbetween (?:the )?{ENT} and (?:the )?{ENT}\b"
    r"|\bof the two\b"
)
_WHICH_OF = re.compile(r"^(?:\w+ )?(?:which|who|what) (?:one )?of\b")  # "which of A and B"
_YES_NO_CHOICE = re.compile(r"\b\w+ or (?:the |a |an )?\w+$")  # "is it a town or a city"
_BOTH = re.compile(r"\b(?:both|either|neither)\b")
_SAME = re.compile(r"\b(?:same|in common|share|shares|shared)\b")
_SHARED_WITH = re.compile(r"\btogether with\b|\bco-\w+ (?:\w+ ){0,2}(?:with|of)\b")
_THAN = re.compile(r"\b(?<!other )(?<!rather )than\b")
_COMPARATIVE_THAN = re.compile(
    r"\b(?!other\b|rather\b)\w+er than\b|\b(?:more|less|fewer) \w+(?: \w+)? than\b"
)
_MOST = re.compile(r"\b(?:most|least) \w+")
# "which film by X was released first": the answer is picked from a set by comparison
_SUPERLATIVE_PREDICATE = re.compile(
    r"\b(?:\w+ed|is|was|are|were) (?:the )?(?:first|last|earliest|latest|\w+est|most \w+)$"
)
_COORDINATED_QUESTIONS = re.compile(
    rf"\b(?:{_WH_ALT}) and (?:{_WH_ALT})\b|\band (?:{_WH_ALT})\b"
    r"|, and (?:did|does|is|was|are|were|has|have) (?:he|she|it|they)\b"
)


def _pair_kind(body: list[str]) -> str:
    """ "subject" when two coordinated entities are what the question is about, "object" when
    they sit deeper ("a film written by A and B"), "" when there is no such pair."""
    kind = ""
    for k in range(len(body) - 2):
        if body[k] != ENT or body[k + 1] not in ("and", "&", ","):
            continue
        j = k + 2
        if body[k + 1] == ",":  # "A, B and C"
            while j < len(body) and body[j] in (ENT, ","):
                j += 1
            if j >= len(body) or body[j] != "and":
                continue
            j += 1
        if j < len(body) and body[j] in ("the", "a", "an"):
            j += 1
        if j >= len(body) or body[j] != ENT:
            continue
        before = [t for t in body[:k] if t not in ("the", "a", "an")]
        while len(before) > 1 and _is_content(before[-1]) and before[-2] in BE | DO | HAVE | MODAL:
            before.pop()  # "do the bands A and B …": a class noun before the pair
        if not before or before[-1] in BE | DO | HAVE | MODAL | {"both", "between", ",", ":", "."}:
            return "subject"
        kind = "object"
    return kind


def _is_superlative(word: str) -> bool:
    return word in _SUPERLATIVES or (
        word.endswith("est") and len(word) > 5 and word not in _EST_NOT_SUPERLATIVE
    )


def analyse(question: str) -> Analysis:
    """Read the linguistic cues of ``question`` and their contributions to the logit."""
    body = [t for t in mask(question) if t not in ("?", "!")]
    while body and body[-1] in (".", ",", ";", ":"):
        body.pop()
    body = _strip_request(body)
    s = " ".join(body)
    descriptors = _descriptors(body)
    equation = _is_equation(body)
    relations = max(1, len(descriptors) + (0 if equation else 1))
    a = Analysis(tokens=body, relations=relations, descriptors=descriptors, equation=equation)
    cues = a.cues

    yes_no = bool(body) and body[0] in BE | DO | HAVE | MODAL
    pair = _pair_kind(body)
    choice = bool(
        _CHOICE.search(s) or (yes_no and _YES_NO_CHOICE.search(s)) or (pair and _WHICH_OF.search(s))
    )
    both = bool(_BOTH.search(s))
    comparison = choice or pair == "subject" or both or bool(_THAN.search(s))
    if choice:
        cues["choice"] = WEIGHTS["choice"]
    if pair == "subject":
        cues["entity_pair"] = WEIGHTS["entity_pair"]
    elif pair == "object":
        cues["entity_pair_object"] = WEIGHTS["entity_pair_object"]
    if both:
        cues["both"] = WEIGHTS["both"]
    same = bool(_SAME.search(s))
    if same and (pair or both or yes_no):
        cues["in_common"] = WEIGHTS["in_common"]  # "do A and B have the same …"
    # "which films have the same director as X", "who acted together with X"
    if not (comparison or pair or yes_no) and (same or _SHARED_WITH.search(s)):
        cues["shared_with"] = WEIGHTS["shared_with"]
    if (comparison and any(t in _COMPARATIVES for t in body)) or _COMPARATIVE_THAN.search(s):
        cues["comparative"] = WEIGHTS["comparative"]
    if any(_is_superlative(t) for t in body) or _MOST.search(s):
        cues["superlative"] = WEIGHTS["superlative"]
    if _SUPERLATIVE_PREDICATE.search(s):
        cues["superlative_predicate"] = WEIGHTS["superlative_predicate"]
    if yes_no:
        cues["yes_no"] = WEIGHTS["yes_no"]
    if _COORDINATED_ATTRIBUTES.search(s):
        cues["coordinated_attributes"] = WEIGHTS["coordinated_attributes"]
    if _COORDINATED_QUESTIONS.search(s):
        cues["coordinated_questions"] = WEIGHTS["coordinated_questions"]
    if relations >= 2:
        cues["extra_relation"] = WEIGHTS["extra_relation"] * min(relations - 1, 2)
    elif "shared_with" not in cues:
        cues["single_relation"] = WEIGHTS["single_relation"]
    entities = body.count(ENT)
    if entities > 1 and not (pair == "subject" or choice or both):
        cues["extra_entities"] = WEIGHTS["extra_entities"] * min(entities - 1, 2)
    # Without a visible entity (all lower case) the name itself is among the content words.
    free = FREE_CONTENT_WORDS + (0 if entities else UNMARKED_NAME_WORDS)
    # Not counted: superlatives (a cue of their own) and type nouns before a name ("the film X").
    content = sum(
        1
        for k, t in enumerate(body)
        if _is_content(t)
        and not _is_superlative(t)
        and not (k + 1 < len(body) and body[k + 1] == ENT and k and body[k - 1] in DET)
    )
    if content > free:
        cues["descriptive_words"] = min(
            WEIGHTS["descriptive_words"] * (content - free), MAX_DESCRIPTIVE
        )
    return a


_COORDINATED_ATTRIBUTES = re.compile(
    r"^(?:what|which|who) (?:is|are|was|were) (?:the |its |their )?[a-z]+(?: [a-z]+)?"
    r"(?: , [a-z]+(?: [a-z]+)?)* ,? ?and (?:the |its |their )?(?:[a-z]+ ){1,3}of\b"
)
_REQUEST = re.compile(
    r"^(?:(?:can|could|would|will) you (?:please )?|please )?"
    r"(?:name|list|give|tell|describe|identify|show|find)(?: me| us)?\b"
)


def _strip_request(body: list[str]) -> list[str]:
    """Drop a leading "can you name / give me / describe …" (a request is not a relation)."""
    s = " ".join(body)
    m = _REQUEST.match(s)
    if not m:
        return body
    rest = s[m.end() :].split()
    return ["what", "is", *rest] if rest else body


def _np_start(body: list[str], head: int) -> int | None:
    """Index of the determiner (or possessive) opening the noun phrase headed at ``head``."""
    k = head - 1
    while k >= 0 and (_is_content(body[k]) or body[k] in (ENT, NUM)) and head - k <= 4:
        k -= 1
    if k >= 0 and (body[k] in DET or body[k] == "'s" or body[k] in ("what", "which")):
        return k
    return None


def _descriptors(body: list[str]) -> list[str]:
    """Relational descriptors: noun phrases that carry a relation of their own."""
    found: list[str] = []
    n = len(body)
    for i, w in enumerate(body):
        prev = body[i - 1] if i else ""
        nxt = body[i + 1] if i + 1 < n else ""
        if not nxt:
            continue
        if not i:
            if w == ENT and _entity_modifier(body, i):
                found.append("entity_modifier")  # "[J. K. Rowling] written books were …"
            continue
        # "the Chief Executive Officer of the corporation …": a capitalised title
        if w == "of" and prev == ENT and i >= 2 and body[i - 2] == "the" and nxt in DET:
            found.append("of_phrase")
        # "the director of X", "the release date of X", "which season of X"
        elif w == "of" and _is_content(prev) and _is_relational_head(body, i - 1):
            start = _np_start(body, i)
            if nxt in WH and _nested_wh(body, i):
                found.append("nested_wh")  # "directed by the founder of which studio"
            elif start is not None and nxt not in WH:
                wh_phrase = body[start] in ("what", "which")
                if wh_phrase and not (nxt == ENT or nxt in DET):
                    continue  # "what genre of film is X": a type phrase
                if body[start] == "'s" and not (nxt in DET or nxt == ENT):
                    continue  # "X's date of birth": one relation
                found.append("of_phrase")
        # "X's wife" (each possessive is a relation)
        elif (
            w == "'s"
            and (prev == ENT or _is_content(prev))
            and (_is_content(nxt) or nxt in (ENT, "most", "least"))
        ):
            found.append("possessive")
        # "the actor in X", "what actress from X", "the actors in the movies written by X"
        elif (
            w in _DESCRIPTOR_PREPS
            and _is_content(prev)
            and not _is_participle(prev)
            and _np_start(body, i) is not None
            and (nxt in DET or nxt in WH or (nxt == ENT and w in ("in", "from", "by", "behind")))
        ):
            if nxt not in WH:
                found.append("prepositional_phrase")
            elif _nested_wh(body, i):
                found.append("nested_wh")
        # "the film that …", "the country where …", "the team for which …"
        elif w in _RELATIVE:
            if _is_relative(body, i):
                found.append("relative_clause")
        # "the year the album came out" (a relative clause without "that")
        elif w == "the" and _is_nounish(prev) and prev != ENT and _np_start(body, i) is not None:
            if (
                body[_np_start(body, i)] in DET
                and i - _np_start(body, i) >= 2
                and prev.endswith("s")
            ):
                found.append("contact_clause")
        # "the movies written by X", "a film starring X"
        elif (_is_participle(w) or _is_ing(w)) and _is_reduced_relative(body, i):
            found.append("reduced_relative")
        # "the only battleship to provide …" (an infinitival relative clause)
        elif w == "to" and _is_nounish(prev) and prev != ENT and _is_content(nxt):
            start = _np_start(body, i)
            if start is not None and body[start] in DET and not _is_participle(nxt):
                found.append("infinitival_relative")
        # "X written movies", "the X director", "X actors"
        elif w == ENT and prev not in BE | DO | HAVE | MODAL:
            if _entity_modifier(body, i):
                found.append("entity_modifier")
        # "… is home to the team that …", "who was vice president under the president …"
        elif w in ("to", "under", "of", "for") and _is_content(prev) and nxt in DET | {ENT}:
            k = i - 1
            while k > 0 and _is_content(body[k - 1]):
                k -= 1
            if k > 0 and body[k - 1] in BE and body[k] not in _NONRELATIONAL:
                found.append("predicate_phrase")
    return found


_DESCRIPTOR_PREPS = _words("in from by behind for of to on at with") - {"of"}


def _nested_wh(body: list[str], i: int) -> bool:
    """ "licensed to a city in which county": the wh-phrase sits inside a descriptor that is
    itself an argument ("… the founder of which studio"), not the copula's predicate ("X was
    the director of which films")."""
    start = _np_start(body, i)
    return start is not None and body[start] in DET and start > 0 and body[start - 1] not in BE


def _entity_modifier(body: list[str], i: int) -> bool:
    """An entity modifying a noun: "X written movies", "the X director", "X actors"."""
    prev = body[i - 1] if i else ""
    nxt = body[i + 1] if i + 1 < len(body) else ""
    after = body[i + 2] if i + 2 < len(body) else ""
    if _is_participle(nxt) and _is_content(after) and not _is_participle(after):
        return True
    return _is_agent_noun(nxt) and (prev == "the" or nxt.endswith("s")) and after != "of"


def _is_relational_head(body: list[str], k: int) -> bool:
    """Whether ``body[k]`` (before "of") names a relation: not "kind of", "one of"; "name of"
    only with a modifier ("the middle name of")."""
    word = body[k]
    if word in ("name", "names"):
        return k > 0 and _is_content(body[k - 1])
    return word not in _NONRELATIONAL


def _is_relative(body: list[str], i: int) -> bool:
    w, prev = body[i], body[i - 1]
    nxt = body[i + 1] if i + 1 < len(body) else ""
    if not nxt or nxt in ("?", ",", "and", "or"):
        return False
    if prev == "," and i >= 2 and w in ("which", "who", "whose", "where"):
        prev = body[i - 2]  # non-restrictive: "…, which premiered on what date"
    elif prev == NUM and i >= 3 and body[i - 2] in PREP and w in ("that", "which", "who"):
        prev = body[i - 3]  # "a company in 1970 that makes …"
    if w in ("which", "whom", "whose") and prev in PREP and i >= 2:
        head = body[i - 2] if body[i - 2] != "," or i < 3 else body[i - 3]
        if not (_is_nounish(head) or _is_participle(head)):
            return False
        # "the team for which X played" vs "appears in which movies" (interrogative)
        return not (w == "which" and _is_interrogative(body, i))
    if not _is_nounish(prev) or prev in _SAY_VERBS:
        return False
    if w in ("which", "what") and _is_interrogative(body, i):
        return False  # "X directed which films"
    # "the director that directed X" names the same relation twice
    return not (w == "that" and _is_content(nxt) and _same_stem(prev, nxt))


def _is_interrogative(body: list[str], i: int) -> bool:
    """ "which films" ending the question or followed by an auxiliary: a question word."""
    k = i + 1
    while (
        k < len(body) and (_is_content(body[k]) or body[k] == ENT) and not _is_participle(body[k])
    ):
        k += 1
    if k == i + 1 or ENT in body[i + 1 : k]:
        return False  # "in which X is located": X is the subject of a relative clause
    return k == len(body) or body[k] in BE | DO | HAVE | MODAL | {","} or body[k] in PREP


def _is_reduced_relative(body: list[str], i: int) -> bool:
    prev = body[i - 1]
    nxt = body[i + 1]
    if prev == ENT:
        before = body[i - 2] if i >= 2 else ""
        if not before or before in BE | DO | HAVE | MODAL | WH or before in PRON or before == ",":
            return False
    elif not _is_nounish(prev) or prev in _SAY_VERBS:
        return False
    start = _np_start(body, i)
    if (
        start == 0
        and body[0] in WH
        and not any(
            t in BE | HAVE | DO or t in _IRREGULAR_PAST or _is_participle(t) for t in body[i + 2 :]
        )
    ):
        return False  # "which person directed X": the main verb after a wh-phrase
    rest = body[i + 1 :]
    if all(t in PREP for t in rest):
        return False  # "which country was the film shot in": a passive main verb
    if _is_ing(body[i]):
        return nxt in (ENT, NUM) or nxt in DET or _is_content(nxt) and nxt not in WH
    if nxt in ("where", "when") and i + 2 == len(body):
        return True  # "a resort located where"
    return nxt in PREP or nxt in (ENT, NUM) or nxt in DET


def _is_equation(body: list[str]) -> bool:
    """True when the question only equates the answer with a descriptor ("what is the capital
    of France?", "the director of X was who"), so the asked relation is no extra hop."""
    if not body or any(t in DO or t in MODAL for t in body):
        return False
    b = next((k for k, t in enumerate(body) if t in BE), None)
    if b is None:
        return False
    left, right = body[:b], body[b + 1 :]
    if right and right[-1] in PREP:
        return False  # "what language is X in": a relation of its own
    tail = list(right)
    while tail and tail[-1] in PREP:
        tail.pop()
    if tail and _is_participle(tail[-1]) and len(tail) > 1:
        in_relative = bool(_RELATIVE & set(tail)) and tail[-2] in BE | HAVE
        if not in_relative:  # "… the city where X was born" keeps the participle inside
            return False  # passive main verb at the end: "when was the club that X joined founded"
    for k, t in enumerate(right):
        if _is_participle(t) and (
            k == 0
            or right[k - 1] in (ENT, "also", "not", "originally", "first", "then", "later")
            or right[k - 1].endswith("ly")
        ):
            return False  # passive main verb: "what year was X released"
    if len(left) >= 2 and left[0] in PREP and left[1] in WH:
        return False  # "on which river is X": the wh-phrase asks a relation of its own
    if len(left) >= 2 and left[0] == "how" and left[1] not in ("many", "much"):
        return False  # "how long is X": an attribute
    if right and right[0] in PREP:
        return False  # "which star is in X": the preposition names a relation
    if left and left[0] in WH:
        wh_nouns = [t for t in left[1:] if _is_content(t)]
        return not any(t in _ATTRIBUTE_NOUNS for t in wh_nouns)
    # declarative: "<descriptor> was who", "X is a film written by …"
    return not any(
        t == "of" and k + 1 < len(right) and right[k + 1] in WH for k, t in enumerate(right)
    )


# ------------------------------------------------------------------------------ classifiers
def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


# Embeddings of the labelled questions, per embedder instance (computed once).
_LABELLED_VECTORS: weakref.WeakKeyDictionary[Embedder, dict[tuple[str, ...], np.ndarray]] = (
    weakref.WeakKeyDictionary()
)
_VECTORS_LOCK = threading.Lock()


class RulesClassifier:
    """Cues + nearest labelled neighbours → P(chained); needs no LLM."""

    method = "rules+embedding"

    def __init__(
        self,
        embedder: Embedder | None,
        labelled: Sequence[LabelledQuestion] | None = None,
        *,
        k: int = K_NEIGHBOURS,
    ) -> None:
        self.embedder = embedder
        self.labelled = tuple(labelled) if labelled is not None else load_labelled()
        self.k = k

    def _labelled_vectors(self) -> np.ndarray:
        assert self.embedder is not None
        texts = tuple(q.question for q in self.labelled)
        with _VECTORS_LOCK:
            per_embedder = _LABELLED_VECTORS.setdefault(self.embedder, {})
            vectors = per_embedder.get(texts)
        if vectors is None:
            vectors = self.embedder.encode(list(texts))
            with _VECTORS_LOCK:
                per_embedder[texts] = vectors
        return vectors

    def neighbours(self, question: str) -> list[tuple[float, LabelledQuestion]]:
        """The ``k`` most similar labelled questions, with their cosine similarity."""
        if self.embedder is None or not self.labelled:
            return []
        sims = self._labelled_vectors() @ self.embedder.encode([question])[0]
        order = np.argsort(-sims, kind="stable")[: self.k]
        return [(float(sims[j]), self.labelled[j]) for j in order]

    @staticmethod
    def knn_vote(neighbours: list[tuple[float, LabelledQuestion]]) -> float:
        """Similarity-weighted vote in [-1, 1] (+1: every neighbour is chained)."""
        weights = np.array([max(sim, 0.0) for sim, _ in neighbours])
        if not neighbours or weights.sum() <= 0:
            return 0.0
        votes = np.array([1.0 if q.label == CHAINED else -1.0 for _, q in neighbours])
        return float((weights * votes).sum() / weights.sum())

    def __call__(self, question: str) -> Classification:
        a = analyse(question)
        near = self.neighbours(question)
        knn = self.knn_vote(near)
        z = BIAS + a.z + W_KNN * knn
        p = _sigmoid(z)
        label: Label = CHAINED if p >= 0.5 else PARALLEL
        fired = [f"{name} {weight:+.1f}" for name, weight in a.cues.items()]
        shape = ", ".join(a.descriptors) or "no descriptor"
        fired.append(f"relations={a.relations} ({shape}{'; equation' if a.equation else ''})")
        if near:
            fired.append(f"knn {knn:+.2f} × {W_KNN} = {W_KNN * knn:+.2f}")
            fired += [f"nn {sim:.2f} {q.label}: {q.question}" for sim, q in near[:3]]
        reason = (
            f"P(chained) = σ({BIAS:.1f} bias {a.z:+.1f} cues {W_KNN * knn:+.2f} kNN) = {p:.2f}; "
            f"{a.relations} relation(s) found"
        )
        return Classification(label, round(p, 4), self.method if near else "rules", fired, reason)


class LLMClassifier:
    """The paper's few-shot yes/no prompt, scored from first-token probabilities."""

    method = "llm"

    def __init__(self, llm: LLM | None, fallback: RulesClassifier) -> None:
        self.llm = llm
        self.fallback = fallback

    def __call__(self, question: str) -> Classification:
        if self.llm is None:
            return self._fall_back(question, "no LLM is configured")
        try:
            scores = self.llm.score_options(build_prompt(question), ["yes", "no"])
        except ModelError as exc:
            return self._fall_back(question, f"the LLM failed: {exc}")
        p_yes = float(scores.probs.get("yes", 0.0))
        if scores.method == "uniform" or abs(p_yes - 0.5) < 1e-6:
            return self._fall_back(question, "the LLM gave no preference between yes and no")
        label: Label = CHAINED if p_yes >= 0.5 else PARALLEL
        return Classification(
            label,
            round(p_yes, 4),
            self.method,
            [f"P(yes)={p_yes:.3f}", f"P(no)={1 - p_yes:.3f}", f"scored by {scores.method}"],
            f"few-shot prompt (5 rules, 6 examples): P(yes) = {p_yes:.2f} → {label}",
        )

    def _fall_back(self, question: str, why: str) -> Classification:
        result = self.fallback(question)
        result.method = "fallback:rules"
        result.reason = f"{why}; used the rules classifier instead. {result.reason}"
        return result


def classify(
    question: str, config: DTKGConfig, *, llm: LLM | None, embedder: Embedder
) -> Classification:
    """Label ``question`` chained or parallel with the method ``config.classify_with`` names."""
    rules = RulesClassifier(embedder)
    if config.classify_with == "llm":
        return LLMClassifier(llm, rules)(question)
    return rules(question)
