"""Memory hygiene rules (pure): which memories state one fact, which one they merge into, and which newer memory
supersedes or contradicts an older one. The dedup task feeds them memories and similar pairs and writes the result.

Two memories state the same fact when they are of one type, their vectors are similar, and their facts' keys
(facts.read_fact) are equal: a look-alike differing in one entity, number, negation or relation side has another
key, however close its vector. A memory announcing a change ("moved from X to Y", "no longer X", "now ...")
supersedes an older memory that states the old value about the same subject; when the order is not clear
(the announcement is not newer than the statement it changes), the two contradict each other instead.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from .facts import NOT, PREFER, Change, Fact, is_value, read_fact
from .similarity import INDEX, Pairs

# Two memories less than this apart have no clear order.
ORDER_TOLERANCE_SECONDS = 60.0
# At most this many words of an older statement may lie outside a change's subject and values (a qualifier
# such as "staging"), and only when no other statement matches better.
MAX_EXTRA_WORDS = 1
# A change that names the old value is anchored by it: the older statement may be worded more freely.
MAX_EXTRA_WORDS_NAMED = 3
PAIR_CHUNK = 200_000
# Memories with one fact key are compared directly only in groups this small (a larger group of
# word-for-word restatements is left to the neighbour graph: its pairs are close anyway).
SAME_FACT_GROUP_LIMIT = 50
# The version of the terms dedup stores on each memory (stored_terms): raise it whenever a change to facts.py or
# to stored_terms changes any text's terms; the next dedup run is then a full pass that stores them anew.
TERMS_VERSION = 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the rules know of an active memory."""

    id: str
    type: str
    fact: Fact
    created: float  # epoch seconds, NaN when unknown
    connections: int
    access_count: int
    protected: bool = False
    distinct_from: frozenset[str] = field(default_factory=frozenset)
    superseded: bool = False
    content: str = ""
    merged_texts: tuple[str, ...] = ()  # what earlier runs merged into it: it stands for those texts too
    scope: str = ""  # memories of different scopes are never merged, superseded or contradicted

    @property
    def variants(self) -> tuple[tuple[Fact, str], ...]:
        """Its own fact and text, then those of what was merged into it."""
        own = ((self.fact, self.content),)
        return own + tuple((read_fact(text), text) for text in self.merged_texts) if self.merged_texts else own


@dataclass(frozen=True, slots=True)
class Merge:
    into: str
    duplicates: tuple[str, ...]
    similarity: float  # the lowest similarity of the pairs that joined the group
    reason: str


@dataclass(frozen=True, slots=True)
class Supersession:
    newer: str
    older: str
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class Contradiction:
    a: str
    b: str
    confidence: float
    reason: str


# --- duplicates -----------------------------------------------------------------------------------------------

def duplicate_groups(candidates: Sequence[Candidate], rows: np.ndarray, cols: np.ndarray,
                     similarities: np.ndarray, facts: np.ndarray | None = None,
                     similarity: Callable[[int, int], float] | None = None,
                     connections: Callable[[list[str]], dict[str, int]] | None = None) -> tuple[list[Merge], Pairs]:
    """Merges for the similar pairs (rows[k], cols[k]) that state one fact, and the similar pairs of one type
    kept apart because their facts differ (look-alikes). Groups are complete-link: every two members state one
    fact, so "deploys", "staging deploys" and "production deploys" never end up in one group. `facts`: the
    candidates' fact_ids, when the caller has them already. `similarity(i, j)`: the cosine of two candidates
    worked out one way, whatever search found the pair (a merge records it: a blocked matrix product and a
    search of a few vectors round float32 differently). `connections(ids)`: the edge counts of the memories that
    may merge, when the candidates were read without them (they rank a canonical)."""
    kinds: dict = {}
    facts = fact_ids(candidates) if facts is None else facts
    # Type and scope: a Decision never merges with a Preference, nor one user's memory with another's.
    kind_ids = np.fromiter((kinds.setdefault((c.type, c.scope), len(kinds)) for c in candidates), np.int64,
                           len(candidates))
    same_type = kind_ids[rows] == kind_ids[cols]
    joined = facts[rows] == facts[cols]
    for k in np.flatnonzero(_one_term_apart(candidates, rows, cols) & same_type & ~joined):
        joined[k] = compatible(candidates[rows[k]], candidates[cols[k]])
    apart = same_type & ~joined
    kept_apart = Pairs(rows[apart], cols[apart], similarities[apart])
    rows, cols, similarities = rows[joined], cols[joined], similarities[joined]
    if rows.size == 0:
        return [], kept_apart
    if similarity is not None:
        similarities = np.array([similarity(a, b) for a, b in zip(rows.tolist(), cols.tolist())])
    n = len(candidates)
    _, labels = connected_components(coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)), directed=False)
    lowest: dict[int, float] = defaultdict(lambda: 1.0)
    for label, similarity in zip(labels[rows].tolist(), similarities.tolist()):
        lowest[label] = min(lowest[label], similarity)
    positions = np.unique(np.concatenate([rows, cols])).tolist()
    merging = [candidates[index] for index in positions]
    if connections is not None:
        counts = connections([c.id for c in merging])
        merging = [replace(c, connections=counts.get(c.id, 0)) for c in merging]
    members: dict[int, list[Candidate]] = defaultdict(list)
    for index, candidate in zip(positions, merging):
        members[int(labels[index])].append(candidate)
    merges = []
    for label, component in sorted(members.items(), key=lambda item: min(c.id for c in item[1])):
        for group in _complete_link(canonical_order(component)):
            merges.extend(_merges_of(group, lowest[label]))
    return merges, kept_apart


def exact_cosine(unit: np.ndarray, a: int, b: int) -> float:
    """The cosine of two unit rows, summed in float64: the same number whatever the rows' places in memory."""
    return float(np.dot(unit[a].astype(np.float64), unit[b].astype(np.float64)))


def fact_ids(candidates: Sequence[Candidate]) -> np.ndarray:
    """A number per candidate, equal for candidates of one type and scope stating the same key."""
    seen: dict = {}
    return np.fromiter((seen.setdefault((c.scope, c.type, c.fact.key), len(seen)) for c in candidates), np.int64,
                       len(candidates))


def with_same_facts(pairs: Pairs, candidates: list[Candidate], facts: np.ndarray, unit: np.ndarray,
                     threshold: float) -> Pairs:
    """The neighbour graph's pairs plus every close pair stating the very same fact. The graph is approximate
    at scale and may miss a pair one run and find it the next; the texts are exact, so a restatement whose key
    matches is compared whatever the graph found (a second run then has nothing left to merge)."""
    groups = facts.copy()
    groups[[not c.fact.key for c in candidates]] = -1
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups[groups >= 0])
    starts = np.concatenate(([0], np.cumsum(sizes))) + int(np.count_nonzero(groups < 0))
    rows, cols = [], []
    for group in np.flatnonzero((sizes > 1) & (sizes <= SAME_FACT_GROUP_LIMIT)).tolist():
        members = order[starts[group]:starts[group + 1]]
        first, second = np.triu_indices(members.size, 1)
        rows.append(members[first])
        cols.append(members[second])
    if not rows:
        return pairs
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    rows, cols = np.minimum(rows, cols).astype(INDEX), np.maximum(rows, cols).astype(INDEX)
    similarities = np.einsum("ij,ij->i", unit[rows], unit[cols])
    close = similarities >= threshold
    return pairs.union(Pairs(rows[close], cols[close], similarities[close]), len(candidates))


def stated_together(a: Candidate, b: Candidate) -> bool:
    """Whether duplicate_groups joins a similar pair into one group: one type and scope, and equal keys, or keys
    one term apart whose texts state one fact. An incremental run follows these links to read a group whole."""
    if a.type != b.type or a.scope != b.scope:
        return False
    return a.fact.key == b.fact.key or (len(a.fact.key ^ b.fact.key) == 1 and compatible(a, b))


def may_state_together(key: frozenset[str], terms: frozenset[str]) -> bool:
    """Whether a memory whose stored terms are `terms` can have a key equal to `key` or one term apart from it
    (it holds all of `key` but at most one term): a cheap test before its text is read."""
    return len(key & terms) >= len(key) - 1


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
    holding that value and its whole subject, with at most MAX_EXTRA_WORDS_NAMED words besides; one that does
    not substitutes one value (two at most when it names the new one, all of whose subject it holds besides),
    with at most MAX_EXTRA_WORDS + 1 words dropped."""
    after = change.subject | change.new
    if change.old:
        required = change.old | change.subject
        return PoolQuery(required, required | change.new, len(required), MAX_EXTRA_WORDS_NAMED)
    if change.new:
        return PoolQuery(change.subject - change.new, after, max(1, len(after) - 2), MAX_EXTRA_WORDS + 1)
    return PoolQuery(frozenset(), after, max(1, len(after) - 1), MAX_EXTRA_WORDS + 1)


def in_matches(announcer: Candidate, change: Change, statement: Candidate) -> bool:
    """Whether a statement is among the memories a change of this announcer matches (_changed_statements), its
    relatedness aside: whether its arrival or departure can move the announcer's verdict."""
    if not change.old and not _before(statement, announcer):
        return False
    return _best_match(change, statement) is not None


def may_change(change: Change, terms: frozenset[str], least: int = 0) -> bool:
    """Whether a memory with these stored terms (and fewest statement words `least`) can be matched by the change."""
    query = pool_query(change)
    held = len(query.counted & terms)
    return query.required <= terms and held >= query.need and least <= held + query.slack


def one_fact(first: tuple[frozenset[str], str], second: tuple[frozenset[str], str]) -> bool:
    """Two texts' keys state one fact: equal, or one adds a single word that is wording, not a value ("again",
    "in review"); a number, negation, relation side, name or value word added makes another fact."""
    (a, text_a), (b, text_b) = first, second
    if a == b:
        return True
    if len(a ^ b) != 1:
        return False
    term = next(iter(a ^ b))
    # A preference stated or implied ("prefers X" / "always picks X") is one fact; any other value is not.
    return term == PREFER or not is_value(term, text_a if term in a else text_b)


def compatible(x: Candidate, y: Candidate) -> bool:
    """Whether two memories (and everything merged into each) state one fact."""
    return x.type == y.type and all(one_fact((u.key, a), (v.key, b)) for u, a in x.variants for v, b in y.variants)


def _one_term_apart(candidates: Sequence[Candidate], rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Which pairs' keys differ by exactly one term on one side (vectorised: key sizes and shared-term counts)."""
    vocabulary: dict[str, int] = {}
    indptr, indices = [0], []
    for candidate in candidates:
        indices.extend(vocabulary.setdefault(term, len(vocabulary)) for term in candidate.fact.key)
        indptr.append(len(indices))
    incidence = csr_matrix((np.ones(len(indices), np.int32), indices, indptr),
                           shape=(len(candidates), max(1, len(vocabulary))))
    sizes = np.diff(incidence.indptr)
    result = np.zeros(rows.size, dtype=bool)
    close = np.flatnonzero(np.abs(sizes[rows] - sizes[cols]) == 1)
    for start in range(0, close.size, PAIR_CHUNK):
        part = close[start:start + PAIR_CHUNK]
        shared = np.asarray(incidence[rows[part]].multiply(incidence[cols[part]]).sum(axis=1)).ravel()
        result[part] = shared == np.minimum(sizes[rows[part]], sizes[cols[part]])
    return result


def _complete_link(ordered: list[Candidate]) -> list[list[Candidate]]:
    """Split a connected group so every two members state one fact; the best-ranked members come first."""
    groups: list[list[Candidate]] = []
    for member in ordered:
        home = next((g for g in groups if all(compatible(member, other) for other in g)), None)
        if home is None:
            groups.append([member])
        else:
            home.append(member)
    return groups


def canonical_order(group: Sequence[Candidate]) -> list[Candidate]:
    """Most connected, then most used, then oldest (then id, so the choice never depends on input order);
    protected memories first, since a merge never archives them."""
    def rank(c: Candidate):
        created = c.created if not math.isnan(c.created) else math.inf
        return (not c.protected, -c.connections, -c.access_count, created, c.id)

    return sorted(group, key=rank)


def _merges_of(group: Sequence[Candidate], similarity: float) -> list[Merge]:
    """The canonical takes every member it may; a member an administrator set apart from it (a restore), or a
    protected one, stays, and the members left form their own group."""
    merges = []
    remaining = canonical_order(group)
    while len(remaining) > 1:
        canonical, rest = remaining[0], remaining[1:]
        taken = [m for m in rest if not m.protected and m.id not in canonical.distinct_from
                 and canonical.id not in m.distinct_from]
        if taken:
            terms = ", ".join(sorted(canonical.fact.key))
            merges.append(Merge(canonical.id, tuple(m.id for m in taken), round(similarity, 6),
                                f"same type ({canonical.type}) and same entities, numbers and values: {terms}"))
        remaining = [m for m in rest if m not in taken and not m.protected]
    return merges


def merged_fields(canonical: dict, duplicates: Sequence[dict], most_uses: int) -> dict:
    """The canonical's fields after a merge: uses summed, the highest importance, confidence and last use, and
    every tag (the canonical's first)."""
    everyone = [canonical, *duplicates]
    tags = list(dict.fromkeys(t for m in everyone for t in (m.get("tags") or [])))
    last_uses = [m["last_accessed"] for m in everyone if isinstance(m.get("last_accessed"), str)]
    return {
        "access_count": min(most_uses, sum(int(m.get("access_count") or 0) for m in everyone)),
        "importance": max(_number(m.get("importance")) for m in everyone),
        "confidence": max(_number(m.get("confidence")) for m in everyone),
        "last_accessed": max(last_uses, key=_instant) if last_uses else canonical.get("last_accessed"),
        "tags": tags,
    }


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.5


def _instant(iso: str) -> float:
    from .timeutil import epoch_or_nan

    moment = epoch_or_nan(iso)
    return -math.inf if math.isnan(moment) else moment


# --- changes: supersessions and contradictions --------------------------------------------------------------

def _within_scope(related: callable) -> callable:
    """Memories of different scopes are never about the same subject, however close their vectors."""
    return lambda a, b: a.scope == b.scope and related(a, b)


def changes_over_time(candidates: Sequence[Candidate], related: callable,
                      only: Collection[str] | None = None) -> tuple[list[Supersession], list[Contradiction]]:
    """Each memory announcing a change, matched with the older statements it changes; `related(a, b)` says
    whether two memories' vectors are close enough to be about one thing at all. A memory stands for the texts
    merged into it as well: any of them may announce, or state, what is matched. `only`: the ids of the
    announcers to judge (an incremental run's), the others serving as statements and rivals."""
    related = _within_scope(related)
    announcing_ones = [i for i, c in enumerate(candidates) if c.fact.change is not None or c.merged_texts]
    announcers = [i for i in announcing_ones if only is None or candidates[i].id in only]
    # Only the terms a change looks statements up by are indexed (its old value, subject and new value).
    wanted = {t for i in announcers for fact, _ in candidates[i].variants if fact.change is not None
              for t in fact.change.old | fact.change.subject | fact.change.new}
    by_term: dict[str, set[int]] = defaultdict(set)
    for index, candidate in enumerate(candidates):
        statements = [f.statement for f, _ in candidate.variants] if candidate.merged_texts else \
            [candidate.fact.statement]
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
        for change in {fact.change for fact, _ in announcer.variants} - {None}:
            found_s, found_c = [], []
            for older, extra, reason in _changed_statements(index, change, candidates, by_term, related):
                _order(announcer, candidates[older], extra, reason, found_s, found_c)
            for older in _rival_changes(index, change, candidates, announcing, related):
                _order(announcer, candidates[older], 0, "a later change of the same value", found_s, found_c)
            for found in found_s:
                supersessions.setdefault((found.newer, found.older), found)
            for found in found_c:
                contradictions.setdefault((found.a, found.b), found)
    return list(supersessions.values()), list(contradictions.values())


def _changed_statements(index: int, change: Change, candidates: Sequence[Candidate], by_term, related):
    """The statements this change replaces.

    A change that names the old value ("from PostgreSQL") replaces every older statement holding that value
    and its whole subject, however else it is worded, unless the statements disagree on a qualifier
    ("staging" vs "production" deploys): then only the unqualified ones. A change that does not name it ("now
    on Friday") replaces one value of something older: the statements that differ from it in one substituted
    value, and none if they differ in different values (which one it means is unknown)."""
    announcer = candidates[index]
    # Only statements holding every term match_change requires can match (a value and a subject often found in
    # thousands of memories each are found together in few); with none required, any term of the change.
    required = pool_query(change).required
    pool = _all_of(by_term, required) if required else \
        set().union(*(by_term.get(t, set()) for t in change.subject | change.new))
    matches = []
    for other in pool - {index}:
        if not change.old and not _before(candidates[other], announcer):
            continue
        extra = _best_match(change, candidates[other])
        if extra is not None and related(announcer, candidates[other]):
            matches.append((extra, other))
    chosen = _named_value_matches(matches, candidates) if change.old else _substitution_matches(matches, change,
                                                                                             candidates)
    return [(other, len(extra), _reason(change, len(extra))) for extra, other in chosen]


def _all_of(by_term: dict[str, set[int]], terms) -> set[int]:
    """The memories holding every one of these terms (intersected smallest first)."""
    postings = sorted((by_term.get(t, set()) for t in terms), key=len)
    return postings[0].intersection(*postings[1:]) if postings else set()


def _best_match(change: Change, candidate: Candidate) -> frozenset[str] | None:
    """The closest match of the change among the texts a memory stands for (a rival change is not one)."""
    found = []
    for fact, text in candidate.variants:
        if fact.change is not None and fact.change.old == change.old:
            continue
        extra = match_change(change, fact.statement, text)
        if extra is not None:
            found.append(extra)
    return min(found, key=len) if found else None


def _named_value_matches(matches, candidates):
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


def match_change(change: Change, statement: frozenset[str], text: str = "") -> frozenset[str] | None:
    """The words of an older statement beyond what the change says it replaces (empty: exactly the statement
    changed), or None if the change is not about that statement."""
    after = change.subject | change.new
    if change.old:
        if not change.old <= statement:
            return None
        rest = statement - change.old
        # Every word of the change's subject must be there: "main cluster" vs "analytics cluster" is another
        # subject, and wording alone cannot tell it from a paraphrase ("primary cluster").
        if rest and not rest & after or NOT in rest - after or not change.subject <= statement:
            return None
        extra = frozenset(rest - after - {PREFER})  # "prefers X" -> "switched from X to Y": implied
        return extra if len(extra) <= MAX_EXTRA_WORDS_NAMED else None
    # "Deploys now happen on Friday": the change substitutes one value of the older statement.
    dropped, added = statement - after, after - statement
    if not dropped or not added or len(added) > 2 or not statement & after or NOT in dropped | added:
        return None
    if change.new and not added <= change.new or not change.new and len(added) != 1:
        return None
    extra = frozenset(sorted(dropped - {PREFER})[1:])
    return extra if len(extra) <= MAX_EXTRA_WORDS else None


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
                   c.new != change.new for c in theirs):
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


class StoredTerms(NamedTuple):
    terms: list[str]
    anchors: list[str]
    least: int


def stored_terms(candidate: Candidate) -> StoredTerms:
    """What dedup stores on a memory so that a later incremental run finds it by term without reading its text:
    every term of its key and statement, over the texts it stands for; the anchors of the changes it announces
    (the old value a change names, else its subject and new value), by which the changes a new or removed
    statement may concern are found; and the fewest words of its texts' statements (pool_query's slack)."""
    return _terms_of([fact for fact, _ in candidate.variants])


def text_terms(text: str) -> StoredTerms:
    """stored_terms of a memory that stands for its own text alone: what a new memory is written with."""
    return _terms_of([read_fact(text)])


def _terms_of(facts: Sequence[Fact]) -> StoredTerms:
    terms: set[str] = set()
    anchors: set[str] = set()
    for fact in facts:
        terms |= fact.key | fact.statement
        if fact.change is not None:
            anchors |= fact.change.old or (fact.change.subject | fact.change.new)
    least = min(len(fact.statement - {PREFER}) for fact in facts)
    return StoredTerms(sorted(terms), sorted(anchors), least)


def terms_stamp(change: float) -> str:
    """The stamp of terms read from a memory as of its change number (and the rules of TERMS_VERSION)."""
    return f"{TERMS_VERSION}:{int(change)}"


def simultaneous_conflicts(candidates: Sequence[Candidate], related: callable) -> list[Contradiction]:
    """Two plain statements of one type recorded at the same moment that differ in exactly one value ("closes
    at 2 pm" / "closes at 3 pm"): a conflict with no order to settle it.

    Only statements whose keys match but for one term are compared (an import writes thousands of memories in
    one minute, and a million memories over a few weeks are all a minute or less apart): each is filed under a
    hash of its type and key without each of its terms, and the pairs filed together within the tolerance are
    checked."""
    related = _within_scope(related)
    created = np.fromiter((c.created for c in candidates), dtype=np.float64, count=len(candidates))
    known = np.flatnonzero(~np.isnan(created))
    order = known[np.argsort(created[known], kind="stable")]  # by time, then by position: a place each
    found = []
    for first_place, second_place in sorted(_filed_together(candidates, order, created[order])):
        a, b = candidates[order[first_place]], candidates[order[second_place]]
        only_a, only_b = a.fact.key - b.fact.key, b.fact.key - a.fact.key
        if a.type == b.type and len(only_a) == len(only_b) == 1 and NOT not in only_a | only_b and related(a, b):
            first, second = sorted((a.id, b.id))
            found.append(Contradiction(first, second, 0.5, f"recorded at the same time, stating "
                                       f"{next(iter(only_a))} and {next(iter(only_b))} for the same thing"))
    return found


def _filed_together(candidates, order: np.ndarray, times: np.ndarray) -> set[tuple[int, int]]:
    """Pairs of places (in time order) of plain statements within the tolerance filed under one hash of type and
    key without one term (a hash collision adds a few, checked after; terms are told apart by their 64-bit
    hashes). In numpy: the entries sorted by that hash, then each compared with the next ones of the same hash
    while they are within the tolerance, a step of distance at a time (8M entries at a million memories, which
    a dictionary of lists took 10 s to file)."""
    places = [place for place, i in enumerate(order.tolist())
              if candidates[i].fact.change is None and candidates[i].fact.key]
    if not places:
        return set()
    keys = [candidates[order[place]].fact.key for place in places]
    counts = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    terms = np.fromiter(map(hash, chain.from_iterable(keys)), dtype=np.int64, count=int(counts.sum()))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    types = np.fromiter((hash(candidates[order[place]].type) for place in places), dtype=np.int64,
                        count=len(places))
    whole = np.repeat(np.bitwise_xor.reduceat(terms, starts) ^ types, counts)  # type and key, order-free
    entry = terms != hash(NOT)  # NOT is part of the key, never the one term that differs
    filed = (whole ^ terms)[entry]  # the type and key without this term
    place_of = np.repeat(np.array(places, dtype=np.int64), counts)[entry]
    term_of = terms[entry]
    by_hash = np.argsort(filed, kind="stable")  # by hash, then in time order (the order they were filed in)
    filed, place_of, term_of = filed[by_hash], place_of[by_hash], term_of[by_hash]
    when = times[place_of]
    firsts, seconds = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    active, step = np.arange(filed.size - 1), 1
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


def _reason(change: Change, extra: int) -> str:
    values = ""
    if change.old or change.new:
        values = f" ({', '.join(sorted(change.old)) or '?'} -> {', '.join(sorted(change.new)) or '?'})"
    qualifier = "" if extra == 0 else f"; the older one has {extra} more qualifying word"
    return f"announces a change ({change.wording}){values} of what the older memory states{qualifier}"
