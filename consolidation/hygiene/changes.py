"""Changes over time (pure): which newer memory supersedes an older one, and which two contradict each other.

A memory announcing a change ("moved from X to Y", "no longer X", "now ...") supersedes an older memory that
states the old value about the same subject; when the order is not clear (the announcement is not newer than
the statement it changes), the two contradict each other instead. Two plain statements recorded together that
give one subject exclusive values contradict each other too.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

import numpy as np

from ..slices import array_of, joined, slices
from .candidate import Candidate
from .facts import NOT, PREFER, Change, _stem, _tokens, is_value
from .evidence import weigh
from .reading import read, spelled, value_class

# A change and the statement it changes must be at least this close to be about one thing at all.
RELATED_SIMILARITY = 0.5
# Two memories less than this apart have no clear order.
ORDER_TOLERANCE_SECONDS = 60.0
# At most this many words of an older statement may lie outside a change's subject and values (a qualifier
# such as "staging"), and only when no other statement matches better.
MAX_EXTRA_WORDS = 1
# A change that names the old value is anchored by it: the older statement may be worded more freely.
MAX_EXTRA_WORDS_NAMED = 3
ANY_LENGTH = 1 << 20  # a pool query's slack that leaves a statement's length free
# Simultaneous statements are filed (_sharing) in this many parts of the hash range, to sort each apart.
FILING_PARTS = 8
# Words saying a thing has one value at a time, so two statements giving it two values conflict.
EXCLUSIVE_CUES = frozenset(_stem(w) for w in "favorite favourite default preferred primary main usual current "
                                              "only official".split())


@dataclass(frozen=True, slots=True)
class Supersession:
    newer: str
    older: str
    confidence: float
    reason: str
    # Which rule found it (replacement.py weighs its evidence by it): a change naming the old value (changes.py),
    # or updates.py's value swapped in one frame, denial turned around, ending of what the older holds, or the
    # closest statement of the subject a change singles out.
    rule: str = "named"


@dataclass(frozen=True, slots=True)
class Contradiction:
    a: str
    b: str
    confidence: float
    reason: str


class PoolQuery(NamedTuple):
    """What a statement's stored terms must hold for match_change to match it with a change: every `required`
    term, at least `need` of the `counted` ones, and no more than `slack` other words (the fewest words of its
    texts' statements, `least`, at most the counted terms held plus `slack`)."""

    required: frozenset[str]
    counted: frozenset[str]
    need: int
    slack: int


def pool_query(change: Change) -> PoolQuery:
    """PoolQuery of a change, from match_change's conditions: a change naming its old value matches statements
    holding that value and the numbers of its subject, and a word of its subject besides, however else worded;
    one that does not substitutes one value (two at most when it names the new one, all of whose subject it
    holds besides), with at most MAX_EXTRA_WORDS + 1 words dropped."""
    after = change.subject | change.new
    if change.old:
        return PoolQuery(change.old | _numbers(change.subject), change.subject, 1 if change.subject else 0,
                         ANY_LENGTH)
    if change.new:
        return PoolQuery(change.subject - change.new, after, max(1, len(after) - 2), MAX_EXTRA_WORDS + 1)
    return PoolQuery(frozenset(), after, max(1, len(after) - 1), MAX_EXTRA_WORDS + 1)


def in_matches(announcer: Candidate, change: Change, statement: Candidate) -> bool:
    """Whether a statement is among the memories a change of this announcer matches (_changed_statements), its
    relatedness aside: whether its arrival or departure can move the announcer's verdict."""
    if not change.old and not _before(statement, announcer):
        return False
    said = next(text for fact, text in announcer.variants if fact.change == change)
    return _best_match(change, said, statement) is not None


def may_change(change: Change, terms: frozenset[str], least: int = 0) -> bool:
    """Whether a memory with these stored terms (and fewest statement words `least`) can be matched by the change."""
    query = pool_query(change)
    held = len(query.counted & terms)
    return query.required <= terms and held >= query.need and least <= held + query.slack


@lru_cache(maxsize=1 << 16)
def _numbers(terms: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if t[:1].isdigit())


def _within_scope(similarity: Callable[[Candidate, Candidate], float]) -> Callable[[Candidate, Candidate], bool]:
    """Whether two memories are about one thing at all: close enough vectors, and never of different scopes."""
    return lambda a, b: a.scope == b.scope and similarity(a, b) >= RELATED_SIMILARITY


def changes_over_time(candidates: Sequence[Candidate], similarity: Callable[[Candidate, Candidate], float],
                      only: Collection[str] | None = None) -> tuple[list[Supersession], list[Contradiction]]:
    """Each memory announcing a change, matched with the older statements it changes; `similarity(a, b)`: the
    cosine of two memories' vectors (at least RELATED_SIMILARITY to be about one thing at all). A memory stands for the texts
    merged into it as well: any of them may announce, or state, what is matched. `only`: the ids of the
    announcers to judge (an incremental run's), the others serving as statements and rivals."""
    related = _within_scope(similarity)
    announcing_ones = [i for i, c in enumerate(candidates) if _announces(c.fact) or c.merged_texts]
    announcers = [i for i in announcing_ones if only is None or candidates[i].id in only]
    # Only the terms a change looks statements up by are indexed (its old value, subject and new value).
    wanted = {t for i in announcers for fact, _ in candidates[i].variants if fact.change is not None
              for t in fact.change.old | fact.change.subject | fact.change.new}
    by_term: dict[str, set[int]] = defaultdict(set)
    for index, candidate in enumerate(candidates):
        if candidate.merged_texts:
            statements = [f.statement for f, _ in candidate.variants]
        elif wanted.isdisjoint(candidate.fact.statement_terms):  # most memories: no set built for them (1M of them)
            continue
        else:
            statements = [candidate.fact.statement]
        for statement in statements:
            for term in statement & wanted:
                by_term[term].add(index)
    # Who announces a change of which value of which subject: rival changes are looked up here, not among
    # every memory naming the subject (in a large store that is most of them).
    announcing: dict[tuple[frozenset[str], frozenset[str]], set[int]] = defaultdict(set)
    for index in announcing_ones:
        for fact, _ in candidates[index].variants:
            if fact.change is not None:
                announcing[fact.change.subject, fact.change.old].add(index)
    supersessions: dict[tuple[str, str], Supersession] = {}
    contradictions: dict[tuple[str, str], Contradiction] = {}
    for index in announcers:
        announcer = candidates[index]
        for change, said in {fact.change: text for fact, text in announcer.variants if _announces(fact)}.items():
            found_s, found_c = [], []
            for older, extra, reason in _changed_statements(index, change, said, candidates, by_term, related,
                                                            similarity):
                _order(announcer, candidates[older], extra, reason, found_s, found_c)
            for older in _rival_changes(index, change, candidates, announcing, related):
                _order(announcer, candidates[older], 0, "a later change of the same value", found_s, found_c)
            for found in found_s:
                supersessions.setdefault((found.newer, found.older), found)
            for found in found_c:
                contradictions.setdefault((found.a, found.b), found)
    return list(supersessions.values()), list(contradictions.values())


def _announces(fact) -> bool:
    """A change says what changed, or that something holds now or no longer; a verb alone ("cuts") does not."""
    return fact.change is not None and fact.change.definite


def _changed_statements(index: int, change: Change, said: str, candidates: Sequence[Candidate], by_term, related,
                        similarity):
    """The statements this change replaces.

    A change that names the old value ("from PostgreSQL") replaces every older statement holding that value
    and its whole subject, however else it is worded, unless the statements disagree on a qualifier
    ("staging" vs "production" deploys): then only the unqualified ones. A change that does not name it ("now
    on Friday") replaces one value of something older: the statements that differ from it in one substituted
    value, and none if they differ in different values (which one it means is unknown)."""
    announcer = candidates[index]
    # Only statements holding every term match_change requires can match (a value and a subject often found in
    # thousands of memories each are found together in few); with none required, any term it counts.
    query = pool_query(change)
    pool = _all_of(by_term, query.required) if query.required else \
        set().union(*(by_term.get(t, set()) for t in query.counted))
    if query.required and query.need:  # and a term it counts (a word of its subject), looked up in the few
        pool = {o for o in pool if any(query.counted & fact.statement for fact, _ in candidates[o].variants)}
    matches = []
    for other in pool - {index}:
        if not change.old and not _before(candidates[other], announcer):
            continue
        extra = _best_match(change, said, candidates[other], query)
        if extra is not None and related(announcer, candidates[other]):
            matches.append((extra, other))
    chosen = _named_value_matches(matches, change, said, candidates) if change.old else \
        _substitution_matches(matches, change, candidates)
    return [(other, len(extra), _reason(change, said, candidates[other].content, similarity(announcer, candidates[other])))
            for extra, other in chosen]


def _all_of(by_term: dict[str, set[int]], terms) -> set[int]:
    """The memories holding every one of these terms (intersected smallest first)."""
    postings = sorted((by_term.get(t, set()) for t in terms), key=len)
    return postings[0].intersection(*postings[1:]) if postings else set()


def _best_match(change: Change, said: str, candidate: Candidate, query: PoolQuery | None = None) -> frozenset[str] | None:
    """The closest match of the change (announced by the text `said`) among the texts a memory stands for; a
    change of the same value (a rival, or the same change said again) is not one."""
    found = []
    for fact, text in candidate.variants:
        if fact.change is not None and (fact.change.old == change.old or change.old and fact.change.definite and (
                (fact.change.old | fact.change.new | fact.change.subject) & (change.old | change.new))):
            continue  # a change of the same values: the same change said again, or a rival (_rival_changes)
        extra = match_change(change, fact.statement, text, said, query)
        if extra is not None:
            found.append(extra)
    return min(found, key=len) if found else None


def _named_value_matches(matches, change: Change, said: str, candidates):
    """Of the statements holding the old value, those sharing the most of the change's subject: "the main
    cluster moved from 1.29" changes "the main cluster runs 1.29", not "the analytics cluster runs 1.29" beside
    it (a statement whose shared subject words another's include, and more, is left out)."""
    newer = read(said)
    subjects = {other: frozenset(weigh(newer, read(candidates[other].content)).shared) - change.old - change.new
                for _, other in matches}
    matches = [(extra, other) for extra, other in matches
               if not any(subjects[other] < subjects[rival] for _, rival in matches)]
    # Statements that disagree on a qualifier the change does not name ("staging" / "production" deploys):
    # which one it means is unknown, so only those with no qualifier.
    qualifiers = {frozenset(t for t in extra if is_value(t, candidates[other].content)) for extra, other in matches}
    if len(qualifiers - {frozenset()}) > 1:
        return [(extra, other) for extra, other in matches
                if not any(is_value(t, candidates[other].content) for t in extra)]
    return matches


def _substitution_matches(matches, change: Change, candidates):
    if not matches:
        return []
    fewest = min(len(extra) for extra, _ in matches)
    best = [(extra, other) for extra, other in matches if len(extra) == fewest]
    replaced = {candidates[o].fact.statement - (change.subject | change.new) for _, o in best}
    return best if (fewest == 0 or len(best) == 1) and len(replaced) == 1 else []


def _before(older: Candidate, newer: Candidate) -> bool:
    gap = newer.created - older.created
    return not math.isnan(gap) and gap > ORDER_TOLERANCE_SECONDS


def match_change(change: Change, statement: frozenset[str], text: str, announcer: str,
                 query: PoolQuery | None = None) -> frozenset[str] | None:
    """The words of an older statement (`text`, whose fact's statement is `statement`) beyond what the change
    (announced by `announcer`; `query`: its pool_query, when the caller has it) says it replaces (empty: exactly
    the statement changed), or None if the change is not about that statement."""
    after = change.subject | change.new
    if change.old:
        return _named_match(change, statement, text, announcer, query or pool_query(change))
    # "Deploys now happen on Friday": the change substitutes one value of the older statement, and a value it
    # is (a number, a name, a day...): "a person cuts ginger" replaces no "onion" of "a person slices an onion".
    dropped, added = statement - after, after - statement
    if not dropped or not added or len(added) > 2 or not statement & after or NOT in dropped | added:
        return None
    if change.new and not added <= change.new or not change.new and len(added) != 1:
        return None
    if _holds_new_value(change, read(announcer), statement):
        return None
    replaced = sorted(t for t in dropped - {PREFER} if is_value(t, text))
    if not replaced:
        return None
    extra = frozenset(dropped - {PREFER, replaced[0]})
    return extra if len(extra) <= MAX_EXTRA_WORDS else None


def _named_match(change: Change, statement: frozenset[str], text: str, announcer: str,
                 query: PoolQuery) -> frozenset[str] | None:
    """A change that names what it replaces ("from 100 to 300 requests", "replaced Loki with Elasticsearch")
    is about an older statement holding those old values (every number, and one of its words at least) and
    sharing a word of its subject besides, however else each is worded ("Public API rate limit changed from
    100 to 300" / "The public API allows 100 requests"), unless the statement negates where the change does not.
    What is returned: the statement's words the change's text lacks (the more, the less sure)."""
    if not change.old <= statement or not _numbers(change.subject) <= statement:
        return None  # "prices dropped after the user booked" names no value a flight booking holds; "note 517's
        # detail changed from 417" is not about note 518
    older, newer = read(text), read(announcer)
    found = weigh(newer, older)
    if change.subject and not set(found.shared) - change.old - change.new:
        return None  # the old value alone, about something else
    if _describes_a_change(change, text):
        return None  # "its yield went to 4.48 from 4.42", "he said he \"no longer believes\" it": not a value held
    if not _replaces_in_kind(change, newer) or _holds_new_value(change, newer, statement):
        return None  # "climbed from the 10th floor to his death" changes no value; a statement that already
        # holds the new value ("earnings of $73.1M, against $20.8M" / "climbed to $73.1M from $20.8M") is current
    changed = change.old | change.new
    if any(c.first not in changed and c.second not in changed for c in found.conflicts if c.kind != "negation"):
        return None  # another value apart: "backend CI ... instead of Jenkins" / "the frontend CI runs Jenkins"
    if older.negated and not newer.denied & change.old:
        return None  # "deploys do not happen on Tuesday" is not what "moved from Tuesday" changes
    return frozenset(found.only_second) - change.old - {PREFER}


def _describes_a_change(change: Change, text: str) -> bool:
    """Whether an older text itself tells of a change of the old value (it names it after "from"), or of an end
    (a change that names no new value meets "no longer" / "stopped" there too)."""
    tokens = _tokens(text)
    if not change.new and any(kind in ("stop_verb", "no_more") for kind, _, _ in tokens):
        return True
    return any(kind == "from" and any(value in change.old for _, value, _ in tokens[index + 1:index + 3])
               for index, (kind, _, _) in enumerate(tokens))


def _values(terms: frozenset[str], reading) -> frozenset[str]:
    """The terms that are values (numbers, names, days, words of a closed class), units aside (a unit goes with
    its number)."""
    return frozenset(t for t in terms if value_class(t, reading) not in (None, "unit"))


def _replaces_in_kind(change: Change, newer) -> bool:
    """Whether the new value may stand where the old one stood: of one class where both have one (a day for a
    day, not an environment for a day); a change that names no new value ("no longer X") does."""
    old = {value_class(t, newer) for t in change.old} - {None, "unit", "number"}
    new = {value_class(t, newer) for t in change.new} - {None, "unit", "number"}
    return not old or not new or bool(old & new)


def _holds_new_value(change: Change, newer, statement: frozenset[str]) -> bool:
    """Whether an older statement already holds every value the change brings ("earnings of $73.1M, against
    $20.8M" / "climbed to $73.1M from $20.8M"): it is current, not changed."""
    brought = _values(change.new - change.old, newer)
    return bool(brought) and brought <= statement


def _rival_changes(index: int, change: Change, candidates: Sequence[Candidate], announcing, related) -> list[int]:
    """Older changes of the same value of the same subject to something else ("to Thursday", then "to
    Friday"); each pair is judged once, from its newer side."""
    announcer = candidates[index]
    if not change.old or not change.new or not change.subject:
        return []
    pool = announcing[change.subject, change.old] - {index}
    rivals = []
    for other in pool:
        theirs = [fact.change for fact, _ in candidates[other].variants]
        if not any(c is not None and c.old == change.old and c.subject == change.subject and c.new and
                   not c.new & change.new for c in theirs):  # another new value, not the same one reworded
            continue
        if (_when(candidates[other]), candidates[other].id) < (_when(announcer), announcer.id) and \
                related(announcer, candidates[other]):
            rivals.append(other)
    return rivals


def _when(candidate: Candidate) -> float:
    return -math.inf if math.isnan(candidate.created) else candidate.created


def _order(announcer: Candidate, older: Candidate, extra: int, reason: str,
           supersessions: list[Supersession], contradictions: list[Contradiction]) -> None:
    """A change newer than what it changes supersedes it; otherwise the order is unclear and they contradict."""
    gap = announcer.created - older.created
    if not math.isnan(gap) and gap > ORDER_TOLERANCE_SECONDS:
        if not older.superseded:
            confidence = 0.9 if extra == 0 else 0.75
            supersessions.append(Supersession(announcer.id, older.id, confidence, reason))
        return
    if extra > 1 or extra and any(is_value(t, older.content) for t in older.fact.statement - announcer.fact.key):
        return  # a qualifier apart and no order: too unsure to call it a conflict
    when = "at the same time as" if not math.isnan(gap) and abs(gap) <= ORDER_TOLERANCE_SECONDS else \
        "before" if not math.isnan(gap) else "with no known order relative to"
    a, b = sorted((announcer.id, older.id))
    contradictions.append(Contradiction(a, b, 0.6 if when == "before" else 0.5,
                                        f"{reason}, but it was recorded {when} the memory it changes"))


def simultaneous_conflicts(candidates: Sequence[Candidate],
                           similarity: Callable[[Candidate, Candidate], float]) -> list[Contradiction]:
    """Two plain statements of one type recorded at the same moment that differ in exactly one value ("closes
    at 2 pm" / "closes at 3 pm"): a conflict with no order to settle it.

    Only statements whose keys match but for one term are compared (an import writes thousands of memories in
    one minute, and a million memories over a few weeks are all a minute or less apart): each is filed under a
    hash of its type and key without each of its terms, and the pairs filed together within the tolerance are
    checked."""
    related = _within_scope(similarity)
    created = np.fromiter((c.created for c in candidates), dtype=np.float64, count=len(candidates))
    known = np.flatnonzero(~np.isnan(created))
    order = known[np.argsort(created[known], kind="stable")]  # by time, then by position: a place each
    found = []
    for first_place, second_place in sorted(_filed_together(candidates, order, created[order])):
        a, b = candidates[order[first_place]], candidates[order[second_place]]
        only_a, only_b = a.fact.key - b.fact.key, b.fact.key - a.fact.key
        if a.type == b.type and len(only_a) == len(only_b) == 1 and NOT not in only_a | only_b and \
                exclusive(next(iter(only_a)), a.content) and exclusive(next(iter(only_b)), b.content) and \
                related(a, b):
            first, second = sorted((a.id, b.id))
            value_a, value_b = spelled(read(a.content), only_a)[0], spelled(read(b.content), only_b)[0]
            found.append(Contradiction(first, second, 0.5, f"recorded at the same time, stating "
                                       f"{value_a} and {value_b} for the same thing"))
    return found


def exclusive(term: str, text: str) -> bool:
    """Whether a term is a value one thing has one of at a time: a number that measures (not one that names:
    "note 517"), a name, a day, a place in a closed class; or any word where the text says the thing has one
    ("favourite topping", "default editor"). A list's items ("packing list: passport") are not."""
    reading = read(text)
    if term in reading.labels:
        return False
    return is_value(term, text) or bool(EXCLUSIVE_CUES & reading.content)


def _filed_together(candidates, order: np.ndarray, times: np.ndarray) -> set[tuple[int, int]]:
    """Pairs of places (in time order) of plain statements within the tolerance filed under one hash of type and
    key without one term (a hash collision adds a few, checked after; terms are told apart by their 64-bit
    hashes). In numpy: the entries sorted by that hash, then each compared with the next ones of the same hash
    while they are within the tolerance, a step of distance at a time (8M entries at a million memories, which
    a dictionary of lists took 10 s to file)."""
    places, keys, type_names = _plain_statements(candidates, order)
    if not places:
        return set()
    counts = array_of([len(key) for key in keys], np.int64)
    terms = joined([np.fromiter(map(hash, chain.from_iterable(part)), dtype=np.int64) for part in slices(keys)],
                   np.int64)
    ends = np.cumsum(counts)
    types = array_of([hash(name) for name in type_names], np.int64)
    keyed = np.bitwise_xor.reduceat(terms, ends - counts) ^ types  # each statement's type and key, order-free
    filed = np.repeat(keyed, counts)
    filed ^= terms  # the type and key without this term
    del terms  # each column of 8M entries is 64 MB: a term is its statement's hash and its filed one, xored
    chosen = _sharing(filed)
    statement = np.searchsorted(ends, chosen, side="right")
    filed = filed[chosen]
    term_of = filed ^ keyed[statement]
    entry = term_of != hash(NOT)  # NOT is part of the key, never the one term that differs
    filed, term_of = filed[entry], term_of[entry]
    place_of = np.array(places, dtype=np.int64)[statement[entry]]
    when = times[place_of]
    firsts, seconds = [np.zeros(0, dtype=np.int32)], [np.zeros(0, dtype=np.int32)]
    active, step = np.arange(filed.size - 1, dtype=np.int32), 1
    while active.size:
        later = active + step
        close = (filed[later] == filed[active]) & (when[later] - when[active] <= ORDER_TOLERANCE_SECONDS)
        active, later = active[close], later[close]
        differ = (term_of[later] != term_of[active]) & (place_of[later] != place_of[active])
        firsts.append(place_of[active[differ]])
        seconds.append(place_of[later[differ]])
        step += 1
        active = active[active + step < filed.size]
    return set(zip(np.concatenate(firsts).tolist(), np.concatenate(seconds).tolist()))


def _sharing(filed: np.ndarray) -> np.ndarray:
    """The entries whose hash another entry has too, by hash and then in order (most have it alone: a key
    without one of its terms is rarely another statement's). Sorted a part of the hash range at a time: sorting
    8M entries at once took ~0.3 GB beside them."""
    found = []
    for part in range(FILING_PARTS):
        at = np.flatnonzero((filed & (FILING_PARTS - 1)) == part)
        at = at[np.argsort(filed[at], kind="stable")]
        hashes = filed[at]
        same_as_before = hashes[1:] == hashes[:-1]
        shared = np.zeros(at.size, dtype=bool)
        shared[1:] = same_as_before
        shared[:-1] |= same_as_before
        found.append(at[shared])
    return np.concatenate(found)


def _plain_statements(candidates, order: np.ndarray) -> tuple[list[int], list[tuple[str, ...]], list[str]]:
    """The places (in time order) of the plain statements with a key, their keys and their types: one pass."""
    places, keys, types = [], [], []
    for place, index in enumerate(order.tolist()):
        candidate = candidates[index]
        fact = candidate.fact
        if fact.change is None and fact.terms:
            places.append(place)
            keys.append(fact.terms)
            types.append(candidate.type)
    return places, keys, types


def _reason(change: Change, said: str, older: str, similarity: float) -> str:
    """What decided, in the memories' words: the change and its values, what the two share, their similarity."""
    newer = read(said)
    values = ""
    if change.old or change.new:
        values = f" ({', '.join(spelled(newer, sorted(change.old))) or '?'} -> " \
                 f"{', '.join(spelled(newer, sorted(change.new))) or '?'})"
    shared = weigh(newer, read(older)).shared
    return (f"announces a change ({change.wording}){values} of what the older memory states; shared: "
            f"{', '.join(spelled(newer, shared)) or '-'}; similarity {similarity:.3f}")
