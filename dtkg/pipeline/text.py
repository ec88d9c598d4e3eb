"""Question text: validation, tokens, a light stemmer, and the expected answer type.

Only general English is encoded here (function words, question words, suffixes); nothing
about any dataset's relations or question templates.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from dtkg.errors import InputError


def word_set(text: str) -> frozenset[str]:
    """A set of words written as one space-separated string (easier to read and edit)."""
    return frozenset(text.split())


STOPWORDS = word_set(
    """a an the of in on at by for from to with into onto about as than then and or nor but
    is are was were be been being am do does did done doing has have had having will would
    shall should can could may might must it its it's this that these those there their
    theirs they them he him his she her hers we us our you your i me my mine who whom whose
    what which when where why how whats what's who's whos also both each either neither
    respectively some any all other another same such very just only too so not no yes
    please tell give list name me let's lets s one ones get got"""
)
WH_WORDS = word_set("who whom whose what which when where why how")
# Words that describe an answer only vaguely (never a relation cue on their own).
VAGUE = word_set("""thing things something anything someone anyone person people one ones name names
    many much number""")

_TOKEN = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*|\d+(?:[.,]\d+)*", re.UNICODE)


@dataclass
class Token:
    text: str
    start: int
    end: int
    index: int

    @property
    def lower(self) -> str:
        return self.text.lower()


def tokenize(text: str) -> list[Token]:
    return [Token(m.group(0), m.start(), m.end(), i) for i, m in enumerate(_TOKEN.finditer(text))]


def words(text: str) -> list[str]:
    return [t.lower for t in tokenize(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS]


_SUFFIXES = (
    "ational",
    "ations",
    "ation",
    "ments",
    "ment",
    "ness",
    "ings",
    "ing",
    "ers",
    "ors",
    "ies",
    "ied",
    "ed",
    "er",
    "or",
    "es",
    "en",
    "s",
    "e",
    "y",
)


# Irregular English forms whose root differs from the suffix-stripped word.
_IRREGULAR = {
    "born": "birth",
    "bore": "birth",
    "birthplace": "birth",
    "died": "death",
    "die": "death",
    "dies": "death",
    "dead": "death",
    "wrote": "writ",
    "write": "writ",
    "writes": "writ",
    "written": "writ",
    "writer": "writ",
    "writers": "writ",
    "writing": "writ",
    "made": "make",
    "sang": "sing",
    "sung": "sing",
    "spoke": "speak",
    "spoken": "speak",
    "led": "lead",
    "won": "win",
    "children": "child",
    "men": "man",
    "women": "woman",
    "people": "person",
    "lived": "live",
    "resided": "resid",
    "residence": "resid",
}


def stem(word: str) -> str:
    """A crude suffix stripper: acted/actors/act → act, directed/director → direct,
    released/release → releas, genres/genre → genr, born/birth → birth. Enough to spot
    shared word roots."""
    word = word.lower().strip("'’")
    if word.startswith("co-") and len(word) > 5:
        word = word[3:]  # co-wrote → wrote, co-stars → stars
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # starred → starr → star
    return word


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


# ------------------------------------------------------------------ validation
def validate_question(question: object, max_chars: int) -> str:
    """The question, normalised (NFC, single spaces); :class:`InputError` when it is empty,
    not text, or longer than ``max_chars``."""
    if not isinstance(question, str):
        raise InputError(f"The question must be text, got {type(question).__name__}.")
    text = unicodedata.normalize("NFC", question)
    text = "".join(ch if ch.isprintable() or ch in "\t\n" else " " for ch in text)
    text = " ".join(text.split())
    if not text:
        raise InputError(
            "The question is empty: type a question, e.g. "
            "'When was the wife of the director of Inception born?'."
        )
    if len(text) > max_chars:
        raise InputError(
            f"The question is {len(text)} characters long; the limit is {max_chars} "
            "(max_question_chars). Shorten it to the question itself."
        )
    return text


# ------------------------------------------------------------------ answer type
PERSON, DATE, PLACE, QUANTITY, ENTITY, ANY = "person", "date", "place", "quantity", "entity", "any"

_DATE_NOUNS = word_set("year years date dates day days decade century time month")
_QUANTITY_START = re.compile(r"\bhow (many|much|long|tall|high|big|large|old|far|heavy|deep)\b")
_PERSON_NOUNS = word_set("person people persons man woman men women")
_PLACE_NOUNS = word_set("place places location locations")


@dataclass
class AnswerType:
    """What kind of thing the question asks for, read from its question phrase."""

    kind: str = ANY  # person | date | place | quantity | entity | any
    noun: str | None = None  # "movies" in "what movies …", "universities" in "which …"
    wh: str | None = None
    cues: list[str] = field(default_factory=list)  # the words that decided it


_ENTITY = "qqentityqq"  # stands for a blanked mention: the answer noun never lies beyond it


def answer_type(question: str, mentions: list[tuple[int, int]] | None = None) -> AnswerType:
    """The expected answer, read from the question phrase. Entity mentions (character
    spans; [bracketed] and "quoted" spans by default) are blanked first, so "what [Parents]
    is about" does not ask for parents."""
    spans = mentions if mentions is not None else [(s, e) for s, e, _ in marked_spans(question)]
    for start, end in sorted(spans, reverse=True):
        question = question[:start] + f" {_ENTITY} " + question[end:]
    low = question.lower()
    toks = words(low)
    if _QUANTITY_START.search(low) or re.search(r"\b(number of|population of)\b", low):
        return AnswerType(QUANTITY, None, "how", ["how many/much"])
    wh_index = next((i for i, w in enumerate(toks) if w in WH_WORDS), None)
    wh = toks[wh_index] if wh_index is not None else None
    if wh in ("when",):
        return AnswerType(DATE, None, wh, [wh])
    if wh in ("who", "whom"):
        return AnswerType(PERSON, None, wh, [wh])
    if wh == "where":
        return AnswerType(PLACE, None, wh, [wh])
    if wh in ("what", "which") and wh_index is not None:
        noun = _wh_noun(toks, wh_index)
        if noun:
            if noun in _DATE_NOUNS or noun.rstrip("s") in _DATE_NOUNS:
                return AnswerType(DATE, noun, wh, [wh, noun])
            if noun in _PERSON_NOUNS:
                return AnswerType(PERSON, noun, wh, [wh, noun])
            if noun in _PLACE_NOUNS:
                return AnswerType(PLACE, noun, wh, [wh, noun])
            return AnswerType(ENTITY, noun, wh, [wh, noun])
    # "… released in which years", "… starred who": the question word at the end
    if ("year" in toks or "years" in toks) and wh is not None:
        return AnswerType(DATE, "years", wh, ["year"])
    return AnswerType(ANY, None, wh, [wh] if wh else [])


def _wh_noun(toks: list[str], wh_index: int) -> str | None:
    """The noun the question word governs: "which university", "what are the genres of",
    "what is the population of", "what kind of film" → film."""
    rest = toks[wh_index + 1 :]
    skip = {"is", "are", "was", "were", "the", "a", "an", "some", "main", "primary", "other"}
    i = 0
    while i < len(rest) and rest[i] in skip:
        i += 1
    if i < len(rest) and rest[i] == _ENTITY:
        return None  # "what was [X] the director of": no answer noun
    if i < len(rest) and rest[i] in ("kind", "sort", "type", "types", "kinds", "sorts"):
        return rest[i]  # "what sort of film is X" asks for the sort, not for a film
    if i < len(rest) and rest[i] not in STOPWORDS and not rest[i].isdigit():
        noun = rest[i]
        # a two-word compound: "which production company was …" → company, only before an
        # auxiliary or at the end (so "a movie written by" stays movie, "screenwriters
        # co-wrote films" stays screenwriters)
        following = rest[i + 2] if i + 2 < len(rest) else None
        second = rest[i + 1] if i + 1 < len(rest) else None
        if (
            second
            and second not in STOPWORDS
            and _nounish(second)
            and (following is None or following in STOPWORDS)
        ):
            noun = second
        return noun
    return None


# Words saying the answer shares something with the topic entity ("co-wrote with X", "the
# same director as X", "also directed"): the path may walk a relation there and back.
SIBLING_WORDS = word_set("together same share shares shared also other fellow both")


def asks_for_siblings(question: str) -> bool:
    toks = words(question)
    return any(w in SIBLING_WORDS or (w.startswith("co-") and len(w) > 4) for w in toks)


_PARTICIPLES = word_set(
    """written born made known sung spoken shot led won seen given taken drawn shown built
    sold held brought thought found set put cast run begun grown sent spent told"""
)


def _nounish(word: str) -> bool:
    """Could this word head a noun phrase? (not a participle like "directed", "written")"""
    return (
        not word.endswith(("ed", "ly", "ing")) and word not in WH_WORDS and word not in _PARTICIPLES
    )


# ------------------------------------------------------------------ spans
_BRACKETED = re.compile(r"\[([^\[\]]{1,200})\]")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{1,200})[\"“”«»]|(?<!\w)'([^']{2,200})'(?!\w)")


def marked_spans(text: str) -> list[tuple[int, int, str]]:
    """[bracketed] and "quoted" spans: (start, end, inner text), bracketed first."""
    spans = [(m.start(1), m.end(1), m.group(1).strip()) for m in _BRACKETED.finditer(text)]
    for m in _QUOTED.finditer(text):
        group = 1 if m.group(1) is not None else 2
        spans.append((m.start(group), m.end(group), m.group(group).strip()))
    return [s for s in spans if s[2]]
