"""Deterministic comparison (LatWeave's *compare*): comparatives and superlatives are decided
from verified KG values — dates and quantities — never by a model.

:func:`comparison_in` reads the comparison a question asks for ("older", "youngest",
"tallest", "released first", "more populous", "larger in area") from a small English
lexicon; :func:`decide` picks the winner from (item, value) pairs and explains the decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from dtkg.pipeline.text import words

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})

_ISO = re.compile(r"^\s*([+-]?\d{1,9})-(\d{1,2})-(\d{1,2})(?:T[\d:]+Z?)?\s*$")
_YEAR = re.compile(r"^\s*([+-]?\d{3,4})\s*(?:(BCE|BC|CE|AD))?\s*$", re.IGNORECASE)
_TEXT_DATE = re.compile(
    r"\b(?:(\d{1,2})\s+([A-Za-z]{3,9})\.?,?\s+(\d{3,4})|([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{3,4}))\b"
)
_ISO_IN_TEXT = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# a number with at most one unit word: "8848.86", "8,848.86 m", "643801 km²", "12 %"
_NUMBER = re.compile(r"^\s*[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*(?:[A-Za-z%²³/]{1,12})?\s*$")


@dataclass(frozen=True, order=True)
class DateValue:
    """A calendar date with its precision (year-only dates compare by year)."""

    year: int
    month: int = 0
    day: int = 0

    @property
    def precision(self) -> str:
        return "day" if self.day else "month" if self.month else "year"

    def iso(self) -> str:
        if self.day:
            return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"
        if self.month:
            return f"{self.year:04d}-{self.month:02d}"
        return f"{self.year:04d}"

    def age_on(self, today: date) -> int:
        years = today.year - self.year
        if (today.month, today.day) < (self.month or 1, self.day or 1):
            years -= 1
        return years


def parse_date(text: str) -> DateValue | None:
    """ISO dates (``1971-12-09``, ``+1971-12-09T00:00:00Z``), bare years, and "9 December
    1971" / "December 9, 1971" in running text. Wikidata's year-precision ``YYYY-01-01`` is
    kept as a full date (the slice marks precision only in comments)."""
    if not text:
        return None
    match = _ISO.match(text)
    if match:
        year, month, day = (int(g) for g in match.groups())
        if 1 <= month <= 12 and 1 <= day <= 31:
            return DateValue(year, month, day)
        return DateValue(year)
    match = _YEAR.match(text)
    if match:
        year = int(match.group(1))
        if match.group(2) and match.group(2).upper() in ("BC", "BCE"):
            year = -year
        return DateValue(year)
    return None


def dates_in(text: str) -> list[DateValue]:
    """Every date written in free text (ISO or spelled-out month), for checking claims."""
    found: list[DateValue] = []
    for m in _ISO_IN_TEXT.finditer(text):
        found.append(DateValue(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for m in _TEXT_DATE.finditer(text):
        if m.group(1):
            day, month_name, year = m.group(1), m.group(2), m.group(3)
        else:
            month_name, day, year = m.group(4), m.group(5), m.group(6)
        month = _MONTHS.get(month_name.lower()) or _MONTHS.get(month_name.lower()[:3])
        if month:
            found.append(DateValue(int(year), month, int(day)))
    return found


def parse_quantity(text: str) -> float | None:
    """``68373433``, ``+8848.86``, ``8,848.86 m``, ``643801 km²`` → a float; else None."""
    if not text or not _NUMBER.match(text):
        return None
    number = re.match(r"\s*([+-]?[\d,]+(?:\.\d+)?)", text)
    try:
        return float(number.group(1).replace(",", "")) if number else None
    except ValueError:
        return None


def numbers_in(text: str) -> list[float]:
    out = []
    for m in re.finditer(
        r"(?<![\w.])[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])[+-]?\d+(?:\.\d+)?", text
    ):
        try:
            out.append(float(m.group(0).replace(",", "")))
        except ValueError:
            continue
    return out


def value_kind(text: str) -> str | None:
    """ "date" (an ISO date), "year" (a bare 4-digit number: a year or a quantity),
    "quantity", or None (an entity label or other text)."""
    if not text:
        return None
    if _ISO.match(text):
        return "date"
    if re.fullmatch(r"\s*\d{4}\s*", text):
        return "year"
    if parse_quantity(text) is not None:
        return "quantity"
    return None


def is_kind(text: str, wanted: str) -> bool:
    """Is ``text`` a value of kind ``wanted`` ("date" or "quantity")? Years are both."""
    kind = value_kind(text)
    return kind == wanted or (kind == "year" and wanted in ("date", "quantity"))


# ------------------------------------------------------------------ the comparison lexicon
@dataclass(frozen=True)
class Comparison:
    """What a comparative/superlative asks: compare ``kind`` values of an attribute like
    ``hint`` and pick the ``pick`` (min/max) one."""

    word: str
    kind: str  # date | quantity
    pick: str  # min | max
    hint: str  # words describing the attribute, to choose the KG relation
    superlative: bool


# word → (kind, pick, hint). Ages: older = earlier date of birth (min).
_LEXICON: dict[str, tuple[str, str, str]] = {}


def _add(words_: str, kind: str, pick: str, hint: str) -> None:
    for word in words_.split():
        _LEXICON[word] = (kind, pick, hint)


_add("older elder oldest eldest", "date", "min", "date of birth born inception founded")
_add("younger youngest", "date", "max", "date of birth born")
_add("newer newest", "date", "max", "inception publication date founded")
_add("first earliest earlier sooner", "date", "min", "date publication release inception start")
_add("latest later last recent", "date", "max", "date publication release inception start")
_add("taller tallest", "quantity", "max", "height")
_add("shorter shortest", "quantity", "min", "height length duration")
_add("higher highest", "quantity", "max", "elevation above sea level height")
_add("lower lowest", "quantity", "min", "elevation above sea level height")
_add("larger largest bigger biggest", "quantity", "max", "area size population")
_add("smaller smallest", "quantity", "min", "area size population")
_add("longer longest", "quantity", "max", "length duration")
_add("heavier heaviest", "quantity", "max", "mass weight")
_add("lighter lightest", "quantity", "min", "mass weight")
_add("deeper deepest", "quantity", "max", "depth")
_add("populous", "quantity", "max", "population")

_SUPERLATIVE = re.compile(r"(est|first|last|latest)$")
# Words that refine the attribute: "larger in area", "more populous".
_REFINERS = {
    "area": "area",
    "population": "population",
    "populous": "population",
    "height": "height",
    "elevation": "elevation",
    "length": "length",
}


def comparison_in(question: str) -> Comparison | None:
    """The comparison the question asks for, or None. "less populous" flips the pick."""
    toks = words(question)
    for i, word in enumerate(toks):
        if word not in _LEXICON:
            continue
        if word in ("first", "last") and not _temporal_context(toks, i):
            continue
        kind, pick, hint = _LEXICON[word]
        previous = toks[i - 1] if i else ""
        if word == "populous" and previous in ("less", "least"):
            pick = "min"
        refined = next((_REFINERS[t] for t in toks if t in _REFINERS and t != word), None)
        if refined and kind == "quantity":
            hint = refined
        superlative = bool(_SUPERLATIVE.search(word)) or previous in ("most", "least")
        return Comparison(word, kind, pick, hint, superlative)
    return None


def _temporal_context(toks: list[str], i: int) -> bool:
    """ "first"/"last" compare dates only next to a verb of happening ("released first",
    "came out first", "the first film released"), not in "first name"."""
    near = set(toks[max(0, i - 3) : i + 4])
    return bool(
        near
        & {
            "released",
            "release",
            "came",
            "published",
            "founded",
            "born",
            "built",
            "made",
            "premiered",
            "appeared",
            "created",
            "happened",
            "directed",
            "written",
            "out",
            "film",
            "movie",
            "book",
        }
    )


# ------------------------------------------------------------------ deciding
@dataclass
class Decision:
    winner: str | None
    ranked: list[str]
    explanation: str
    values: dict[str, str]


def decide(items: list[tuple[str, str]], comparison: Comparison) -> Decision:
    """Pick the min/max of ``(item label, value text)`` pairs; unparseable values are left
    out (and named in the explanation). Ties keep every tied item at the top."""
    parsed: list[tuple[str, object, str]] = []
    skipped: list[str] = []
    for label, text in items:
        value = parse_date(text) if comparison.kind == "date" else parse_quantity(text)
        if value is None:
            skipped.append(label)
        else:
            parsed.append((label, value, text))
    if not parsed:
        return Decision(None, [], f"no comparable {comparison.kind} values", {})
    reverse = comparison.pick == "max"
    best_per_item: dict[str, tuple[object, str]] = {}
    for label, value, text in parsed:  # an item with several values: its extreme one
        current = best_per_item.get(label)
        if current is None or (value > current[0] if reverse else value < current[0]):
            best_per_item[label] = (value, text)
    ranked = sorted(best_per_item, key=lambda lbl: best_per_item[lbl][0], reverse=reverse)
    top_value = best_per_item[ranked[0]][0]
    tied = [lbl for lbl in ranked if best_per_item[lbl][0] == top_value]
    winner = " and ".join(tied)
    which = "latest" if reverse else "earliest"
    if comparison.kind == "quantity":
        which = "largest" if reverse else "smallest"
    listing = ", ".join(f"{lbl} {best_per_item[lbl][1]}" for lbl in ranked)
    explanation = f"'{comparison.word}' → the {which} {comparison.kind}: {listing}"
    if skipped:
        explanation += f"; no usable value for {', '.join(skipped)}"
    values = {lbl: best_per_item[lbl][1] for lbl in ranked}
    return Decision(winner, ranked, explanation, values)
