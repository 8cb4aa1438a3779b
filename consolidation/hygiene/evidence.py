"""What scores a pair (pure): what two texts share, what each adds, and what one swaps for the other, with the
conflicting values (numbers, names, dates, negation, the side of a relation) that keep them apart."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .reading import Reading, as_written, value_class

# Two spellings of one word: one a prefix of the other ("Tim" / "Timothy", "Syria" / "Syrian"), or the same
# but for their last letters ("Greece" / "Greek"), read as the same term once exact matches are taken.
SHORTEST_PREFIX = 3
SHORTEST_STEM = 4
# Kinds of value that conflict only between texts that differ in at most ALIKE_WITHIN terms on either side.
LOOSE_KINDS = frozenset(("name", "day"))
ALIKE_WITHIN = 2


@dataclass(frozen=True, slots=True)
class Conflict:
    """A value one text has where the other has another of the same kind ("number": 5 / 15)."""

    kind: str
    first: str
    second: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """The comparison of two texts: the terms they share (as the first spells them), the terms only one has,
    and the conflicts among those."""

    shared: tuple[str, ...]
    only_first: tuple[str, ...]
    only_second: tuple[str, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def added_share(self) -> float:
        """The larger share of either text's terms that the other lacks (0: each says only what both say)."""
        shared = len(self.shared)
        return max(_share(len(self.only_first), shared), _share(len(self.only_second), shared))

    @property
    def swapped(self) -> int:
        """How many terms each side could have put in place of one of the other's (one for one at most)."""
        return min(len(self.only_first), len(self.only_second))


def weigh(first: Reading, second: Reading) -> Evidence:
    """Compare two readings: exact terms first, then compounds ("sun glasses" / "sunglasses") and spellings of
    one word (a prefix, or one stem but for its ending); numbers and words of a value class match only
    exactly. Then the terms left on both sides are checked for conflicts."""
    a, b = first.content, second.content
    shared = [t for t in first.terms if t in b]
    only_a = dict.fromkeys(t for t in first.terms if t not in b)
    only_b = dict.fromkeys(t for t in second.terms if t not in a)
    for reading, mine, theirs in ((first, only_a, only_b), (second, only_b, only_a)):
        for x, y in zip(reading.terms, reading.terms[1:]):
            joined = next((j for j in (x + y, x + y.rstrip("s")) if j in theirs), None)
            if joined is not None:
                del theirs[joined]
                mine.pop(x, None)
                mine.pop(y, None)
                shared.append(joined)
    for x, y in _spellings(first, list(only_a), second, list(only_b)) + _times(list(only_a), list(only_b)):
        del only_a[x], only_b[y]
        shared.append(x)
    return Evidence(tuple(dict.fromkeys(shared)), tuple(only_a), tuple(only_b),
                    _conflicts(first, list(only_a), second, list(only_b)))


def _share(added: int, shared: int) -> float:
    return added / (added + shared) if added else 0.0


def _spellings(first: Reading, only_a: list[str], second: Reading, only_b: list[str]) -> list[tuple[str, str]]:
    """Pairs of left-over terms that spell one word, each term used once."""
    pairs = []
    taken: set[str] = set()
    for x in only_a:
        if not _spellable(x, first):
            continue
        for y in only_b:
            if y not in taken and _spellable(y, second) and same_word(x, y):
                pairs.append((x, y))
                taken.add(y)
                break
    return pairs


def _times(only_a: list[str], only_b: list[str]) -> list[tuple[str, str]]:
    """Pairs of left-over numbers that are one time of day: "11 pm" / "eleven", "9:15" / "9.15"."""
    pairs = []
    taken: set[str] = set()
    for x in only_a:
        for y in only_b:
            clock = ":" in x or ":" in y  # a clock time and a bare hour; two bare numbers are two numbers
            if y not in taken and clock and x[:1].isdigit() and y[:1].isdigit() and (_hours(x) & _hours(y)):
                pairs.append((x, y))
                taken.add(y)
                break
    return pairs


def _hours(term: str) -> set[str]:
    """The times of day a number may stand for: a clock time itself ("23:00", and "11:00" for its hour on a
    twelve-hour clock), a bare hour ("11": 11:00 and 23:00), "9.15" as 09:15."""
    number = as_written(term)
    if ":" in number:
        hours, minutes = number.split(":", 1)
        if hours.isdigit() and minutes.isdigit():
            return {f"{int(hours):02d}:{minutes}", f"{int(hours) % 12:02d}:{minutes}"}
        return set()
    hours, _, minutes = number.partition(".")
    if hours.isdigit() and int(hours) <= 24 and (not minutes or minutes.isdigit() and len(minutes) == 2):
        return {f"{int(hours) % 12:02d}:{minutes or '00'}"}
    return set()


def _spellable(term: str, reading: Reading) -> bool:
    kind = value_class(term, reading)
    return kind is None or kind == "name"


def same_word(x: str, y: str) -> bool:
    """Two stems that spell one word: one a prefix of the other, or one stem with another ending."""
    shorter, longer = sorted((x, y), key=len)
    if longer == shorter + "s" or len(shorter) >= SHORTEST_PREFIX and longer.startswith(shorter):
        return True
    if len(shorter) >= SHORTEST_STEM and longer.endswith(shorter):  # "stage" / "onstage"
        return True
    common = len(os.path.commonprefix([x, y]))
    return common >= SHORTEST_STEM and common >= len(shorter) - 1


def _conflicts(first: Reading, only_a: list[str], second: Reading, only_b: list[str]) -> tuple[Conflict, ...]:
    """Values one text swaps for the other's of the same kind, a flipped negation, a relation's sides swapped."""
    found = []
    if first.negated != second.negated:
        found.append(Conflict("negation", "not" if first.negated else "-", "not" if second.negated else "-"))
    else:  # "ricotta, not béchamel" / "béchamel, not ricotta": each denies what the other states
        denied_a, denied_b = (first.denied - second.denied) & second.content, (second.denied - first.denied) & first.content
        if denied_a and denied_b:
            found.append(Conflict("negation", "not " + min(denied_a), "not " + min(denied_b)))
    # Names and days swap one for the other only where the texts are otherwise alike ("flies to Lisbon" /
    # "flies to Porto"); in two reworded sentences ("U.S. troops" / "American troops", "said Tuesday" / "said
    # yesterday") they are as likely wording as a second value.
    alike = max(len(only_a), len(only_b)) <= ALIKE_WITHIN
    kinds_b: dict[str, str] = {}
    for term in only_b:
        kind = value_class(term, second)
        if kind is not None and (alike or kind not in LOOSE_KINDS):
            kinds_b.setdefault(kind, term)
    for term in only_a:
        kind = value_class(term, first)
        if kind is not None and kind in kinds_b:
            found.append(Conflict(kind, term, kinds_b.pop(kind)))
    found += _flipped_sides(first, second)
    return tuple(found)


def _flipped_sides(first: Reading, second: Reading) -> list[Conflict]:
    """A term on one side of a relation in one text and elsewhere in the other ("tabs over spaces" / "spaces
    over tabs"); a text that names no relation ("prefers tabs") adds nothing to flip."""
    if not first.sides or not second.sides:
        return []
    found = []
    for tagged in sorted(first.sides - second.sides):
        term = tagged.split(":", 1)[1]
        # A flip: the other text has this term off the relation, and on it a term this one has off it.
        theirs = [t for t in sorted(second.sides - first.sides) if t.split(":", 1)[1] in first.content]
        if term in second.content and theirs:
            found.append(Conflict("relation side", tagged, theirs[0]))
    return found
