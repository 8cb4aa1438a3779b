"""Updates stated in plain words (pure): which newer memory gives a new value to what an older one states.

Two memories of one scope are about one attribute of one thing when their sentences have the same subject (the
words before the main verb, clauses.py) and
- **a change that does not name the old value** ("moved to Porto", "switched to Helix", "joined Globex"), or an
  ending ("quit the league", "sold the flat"): it supersedes the statement of the same subject whose attribute it
  changes: the one holding what it says ended, or else the one its vectors single out among the subject's
  statements by a margin, unless that statement already holds the new value (a restatement, or a return to an
  earlier value in a chain); or
- **a denial turned around**: "does not speak French", then "completed a French immersion program"; or
- **the same frame with one value swapped** and no change word ("The build server's address is 10.2.0.15" /
  "... is 10.2.0.99"): only for identifiers, or statements dated in order, since a measure, a day or a name
  swapped in the same words is as often another fact beside the first (a look-alike) as its update.
Without a change word only the order says which value is current, so the order must be clean: the older fact
not stated again after the newer one, the denial not preceded by what it denies.
Statements are taken in time order, each change superseding the current statement of its attribute, so chains
form: A, then B replacing A, then A again leaves A and B superseded and the last one current.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .candidate import Candidate
from .changes import ORDER_TOLERANCE_SECONDS, Supersession
from .clauses import NEGATORS, Clause, content_word, read_clause
from .lexicon import NEGATIVE_VERBS
from .model_judge import GreyPair
from .facts import CHANGE, NOT, PREFER, read_fact
from .reading import LABEL_WORDS, UNITS
from .replacement import CLOSEST, ENDING, FLIP, SWAP, proposed, shortfall, unrelated


@dataclass(frozen=True, slots=True)
class Margins:
    """How clearly the vectors must single out the statement a change replaces, in one vector space: at least
    `least` similar, and `margin` more similar than the next statement of the same subject."""

    least: float
    margin: float


# Calibrated on the development update cases and memory sets (docs/quality.md): a client model such as
# all-MiniLM-L6-v2 places a change near what it changes; the hashing embedder sees shared words only.
CLIENT_MARGINS = Margins(0.35, 0.05)
BUILT_IN_MARGINS = Margins(0.2, 0.05)
LABELS = frozenset(LABEL_WORDS)
# Values of one frame stated less than this apart are as likely items of one list as successive values.
SEQUENCE_GAP_SECONDS = 86400.0
IDENTIFIER_SEPARATORS = re.compile(r"[.\-/@_]")
YEAR_TERM = re.compile(r"^(?:19|20)\d\d$")
MEASURE = re.compile(r"^\d+(?:[.,]\d+)?[a-z%]*$")  # a price or a measure ("15.49", "0.26pc"), not an identifier
MEASURE_WORDS = UNITS | frozenset("inch kg lb ghz mhz".split())  # clause words are lemmas: "miles" is "mile"


@dataclass(frozen=True, slots=True)
class Statement:
    """A candidate read as a clause."""

    candidate: Candidate
    clause: Clause

    @property
    def created(self) -> float:
        return self.candidate.created

    @property
    def id(self) -> str:
        return self.candidate.id


@dataclass(frozen=True)
class Settled:
    """What the model judge said of grey pairs (the same frame, one value swapped, exclusivity unclear): by
    `key(older text, newer text)`, True when the newer replaces the older."""

    verdicts: Mapping[str, bool]
    key: Callable[[str, str], str]

    def get(self, older: str, newer: str) -> bool | None:
        return self.verdicts.get(self.key(older, newer))


NOTHING_SETTLED = Settled({}, lambda older, newer: "")


@dataclass
class PlainUpdates:
    """What the plain-word rules found: the supersessions whose evidence carries them (replacement.py), those
    proposed for review instead, and the grey pairs a model may settle."""

    supersessions: list[Supersession]
    grey: list[GreyPair]
    proposals: list[Supersession] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class History:
    """What else was said of the subject, before the statement being judged (`members[place]`), and when each
    fact was last stated: by key or by frame (verb, predicate, negation) among the subject's statements, and by
    the duplicates merged into a canonical (`restated`)."""

    members: Sequence[Statement]
    place: int
    restated: Mapping[str, float]
    last_by_key: Mapping[frozenset[str], float]
    last_by_frame: Mapping[tuple, float]

    @property
    def before(self) -> Sequence[Statement]:
        return self.members[:self.place]


def _last_stated(members: Sequence[Statement]) -> tuple[dict, dict]:
    """When each fact key and each frame was last stated among these statements."""
    by_key: dict[frozenset[str], float] = {}
    by_frame: dict[tuple, float] = {}
    for member in members:  # in time order: the last one wins
        by_key[member.candidate.fact.key] = member.created
        by_frame[_whole_frame(member.clause)] = member.created
    return by_key, by_frame


def _whole_frame(clause: Clause) -> tuple:
    return clause.verb, clause.predicate, clause.negated


class Vectors:
    """The unit vectors of the memories, by id: what similarities are worked out from."""

    def __init__(self, unit: np.ndarray, row_of: Mapping[str, int]):
        self.unit, self.row_of = unit, row_of

    def __call__(self, a: Candidate, b: Candidate) -> float:
        return float(self.unit[self.row_of[a.id]] @ self.unit[self.row_of[b.id]])



def plain_updates(groups: Mapping[tuple[str, str], list[Statement]], vectors: Vectors,
                  decided: Iterable[tuple[str, str]] = (), restated: Mapping[str, float] | None = None,
                  settled: Settled = NOTHING_SETTLED, client: Margins = CLIENT_MARGINS,
                  built_in: Margins = BUILT_IN_MARGINS) -> PlainUpdates:
    """The supersessions stated in plain words among the statements of each subject (statement_groups).
    `decided`: (newer, older) supersessions made otherwise: by changes.py's rules in this run, or written before
    (a change with one is judged by those alone, and what it supersedes is no longer current from its time on);
    `restated`: when a canonical's fact was last stated, by it or by a duplicate merged into it; `settled`: the
    model judge's verdicts on grey pairs. Every verdict follows from the statements and those, so a second run
    on the same memories finds the same."""
    by_newer: dict[str, set[str]] = defaultdict(set)
    for newer, older in decided:
        by_newer[newer].add(older)
    found = PlainUpdates([], [])
    sweep = Sweep(vectors, by_newer, restated or {}, settled, client, built_in)
    for members in groups.values():
        _sweep(sorted(members, key=lambda s: (s.created, s.id)), sweep, found)
    return found


def subjects_concerned(candidates: Iterable[Candidate]) -> set[tuple[str, str]]:
    """(scope, subject) of every memory whose words may make or undergo an update (Fact.updatable: only those
    are read as clauses here)."""
    found = set()
    for candidate in candidates:
        if candidate.fact.updatable:
            clause = read_clause(candidate.content)
            if _usable(clause, candidate):
                found.add((candidate.scope, clause.about))
    return found


def statement_groups(candidates: Sequence[Candidate],
                     subjects: Collection[tuple[str, str]]) -> dict[tuple[str, str], list[Statement]]:
    """The statements about each of these subjects (of two memories or more): found by their fact terms (every
    term of the subject held; a subject of function words alone, "the team", by its words in the text), then
    read as clauses and kept where the subject is the same. Each subject is looked up by its most distinctive
    term (a number, else its longest word), so a common word of many subjects ("note") reads no memory that
    lacks the rest."""
    wanted = {(scope, about): subject_terms(about) for scope, about in subjects}
    by_term: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # (scope, term) -> subjects
    by_words: dict[str, list[tuple[str, str]]] = defaultdict(list)  # scope -> subjects with no fact terms
    for (scope, about), terms in wanted.items():
        if terms:
            by_term[scope, distinctive(terms)].append((scope, about))
        else:
            by_words[scope].append((scope, about))
    drivers = frozenset(term for _, term in by_term)
    groups: dict[tuple[str, str], list[Statement]] = defaultdict(list)
    for candidate in candidates:
        terms = candidate.fact.terms  # a change's key holds its statement too
        reached = [s for s in by_words.get(candidate.scope, ()) if _words_in(s[1], candidate.content)]
        for term in drivers.intersection(terms):  # most memories: none, and no set of their key is made
            reached += [s for s in by_term.get((candidate.scope, term), ()) if wanted[s].issubset(terms)]
        if not reached:
            continue
        clause = read_clause(candidate.content)
        key = (candidate.scope, clause.about)
        if key in reached and _usable(clause, candidate):
            groups[key].append(Statement(candidate, clause))
    return {key: members for key, members in groups.items() if len(members) > 1}


def _words_in(about: str, text: str) -> bool:
    lowered = text.lower()
    return all(word in lowered for word in about.split() if word != "'s")


def distinctive(terms: Collection[str]) -> str:
    """The term of a subject few other memories hold: a number, else its longest word."""
    return max(terms, key=lambda t: (t[:1].isdigit(), len(t), t))


@lru_cache(maxsize=1 << 16)
def subject_terms(about: str) -> frozenset[str]:
    """The fact terms (facts.py) a memory about this subject holds."""
    return read_fact(about.replace("'s", " ")).key - {NOT, CHANGE, PREFER}


def subject_of(candidate: Candidate) -> tuple[str, str] | None:
    """(scope, subject) of a memory whose statement could take part in an update, else None."""
    clause = read_clause(candidate.content)
    return (candidate.scope, clause.about) if _usable(clause, candidate) else None


def _usable(clause: Clause, candidate: Candidate) -> bool:
    return clause.definite and not clause.reported and bool(clause.verb) and not math.isnan(candidate.created)


@dataclass(frozen=True)
class Sweep:
    """What every verdict of a sweep reads besides the statements."""

    vectors: Vectors
    decided: Mapping[str, set[str]]
    restated: Mapping[str, float]
    settled: Settled
    client: Margins
    built_in: Margins


class Current:
    """The statements of a subject still current, in time order, with those of each frame (verb and predicate
    with one word open), those holding each word, and the denials and endings (by the words they deny) at hand:
    what a newer statement is compared with, without going over every earlier one in Python (a subject may have
    thousands). The similarities a change needs (to every statement before it) are worked out for a block of
    changes at once, one matrix product."""

    BLOCK = 256  # changes whose similarities one product works out

    def __init__(self, vectors: Vectors, members: Sequence[Statement]):
        self.members = members
        self.place = {m.id: place for place, m in enumerate(members)}
        self.unit = vectors.unit[np.fromiter((vectors.row_of[m.id] for m in members), np.int64, len(members))]
        self.times = np.fromiter((m.created for m in members), np.float64, len(members))
        self.live = np.zeros(len(members), dtype=bool)
        self.changes = [place for place, m in enumerate(members) if m.clause.change or m.clause.ending]
        self.block: dict[int, np.ndarray] = {}  # a change's place -> its similarity to every member before it
        self.by_frame: dict[tuple, dict[str, Statement]] = defaultdict(dict)
        self.by_word: dict[str, dict[str, Statement]] = defaultdict(dict)
        self.denials: dict[str, dict[str, Statement]] = defaultdict(dict)

    def add(self, statement: Statement) -> None:
        self.live[self.place[statement.id]] = True
        self._index(statement, lambda index, key: index[key].__setitem__(statement.id, statement))

    def remove(self, memory_id: str) -> None:
        at = self.place.get(memory_id)
        if at is not None and self.live[at]:
            self.live[at] = False
            self._index(self.members[at], lambda index, key: index[key].pop(memory_id, None))

    def _index(self, statement: Statement, apply) -> None:
        for frame in _frames(statement.clause):
            apply(self.by_frame, frame[:2])
        for word in statement.clause.predicate:
            apply(self.by_word, _spelling(word))
        for word in _denied_words(statement.clause):
            apply(self.denials, _spelling(word))

    def _before(self, newer: Statement, found: dict[str, Statement]) -> list[Statement]:
        return sorted((s for s in found.values() if newer.created - s.created > ORDER_TOLERANCE_SECONDS),
                      key=lambda s: (s.created, s.id))

    def same_frame(self, newer: Statement) -> list[Statement]:
        """Those stating newer's verb and predicate but for one word; a frame holding more than LIST_VALUES
        current values is a list or a series of notes, whose values no statement replaces."""
        found: dict[str, Statement] = {}
        for frame in _frames(newer.clause):
            holding = self.by_frame.get(frame[:2], {})
            if len(holding) <= LIST_VALUES:
                found.update(holding)
        return self._before(newer, found)

    def holding(self, newer: Statement, words: Sequence[str]) -> list[Statement]:
        """Those whose predicate holds one of these words (or a spelling of it), in time order."""
        found: dict[str, Statement] = {}
        for word in words:
            found.update(self.by_word.get(_spelling(word), {}))
        return self._before(newer, found)

    def concurrent(self, newer: Statement) -> int:
        """How many current statements before `newer` have its verb, when some of them were stated together
        (within SEQUENCE_GAP_SECONDS: values of its frame held at once); values stated one after another are
        successive values of one attribute, and count as one."""
        place = self.place[newer.id]
        times = sorted(self.times[at] for at in np.flatnonzero(self.live[:place]).tolist()
                       if self.members[at].clause.verb == newer.clause.verb)
        together = any(b - a < SEQUENCE_GAP_SECONDS for a, b in zip(times, times[1:]))
        return len(times) if together else min(len(times), 1)

    def denying(self, newer: Statement) -> list[Statement]:
        """The denials and endings that deny one of newer's words, in time order."""
        found: dict[str, Statement] = {}
        for word in newer.clause.predicate:
            found.update(self.denials.get(_spelling(word), {}))
        return self._before(newer, found)

    def scored(self, newer: Statement) -> tuple[list[int], np.ndarray]:
        """The places (in `members`) of every current statement recorded clearly before the change `newer`,
        and the similarity of each to it."""
        place = self.place[newer.id]
        if place not in self.block:
            start = self.changes.index(place)
            block = self.changes[start:start + self.BLOCK]
            products = self.unit[:block[-1]] @ self.unit[block].T
            self.block = {p: products[:p, column] for column, p in enumerate(block)}
        similarities = self.block[place]
        at = np.flatnonzero(self.live[:place] & (newer.created - self.times[:place] > ORDER_TOLERANCE_SECONDS))
        return at, similarities[at]


# More current values than this in one frame make it a list (or numbered notes), not one attribute's value.
LIST_VALUES = 8


def _denied_words(clause: Clause) -> tuple[str, ...]:
    return clause.denied if clause.negated else clause.ended if clause.ending == "no longer" else ()


def _spelling(word: str) -> str:
    """What two spellings of one word share, as _shared matches them: the word, or its first five letters."""
    return word[:5]


def _sweep(members: list[Statement], sweep: Sweep, found: PlainUpdates) -> None:
    """The statements about one thing in time order, each one's changes found among those still current."""
    listed = _listed_frames(members)
    last_by_key, last_by_frame = _last_stated(members)
    in_group = {s.id for s in members}
    # Superseded by a memory about something else (an agent's word, another wording): never current here.
    elsewhere = {older for newer, olders in sweep.decided.items() if newer not in in_group for older in olders}
    current = Current(sweep.vectors, members)
    for place, newer in enumerate(members):
        if newer.id in sweep.decided:  # its supersessions are made: what they supersede is no longer current
            for older in sweep.decided[newer.id]:
                current.remove(older)
        else:
            history = History(members, place, sweep.restated, last_by_key, last_by_frame)
            applied, short = _weighed(newer, _replaced(newer, current, history, listed, sweep, found.grey),
                                      current, sweep.vectors)
            found.supersessions += applied
            found.proposals += short
            for supersession in applied:
                current.remove(supersession.older)
        if newer.id not in elsewhere:
            current.add(newer)


def _weighed(newer: Statement, replaced: list[tuple[Statement, str, str]], current: Current,
             similarity: Vectors) -> tuple[list[Supersession], list[Supersession]]:
    """The replacements found for `newer`, split by their evidence (replacement.py): those applied, and those
    proposed for review (an older statement proposed stays current); a newer replacing several unrelated
    statements replaces none of them."""
    applied, short = [], []
    for older, reason, rule in replaced:
        found = Supersession(newer.id, older.id, 0.75, reason, rule)
        why = shortfall(rule, newer.candidate.content, older.candidate.content, current.concurrent(newer))
        if why is None:
            applied.append((older, found))
        elif why:
            short.append(proposed(found, why))
    if len(applied) > 1 and unrelated([o.candidate for o, _ in applied], similarity):
        short += [proposed(s, f"one memory would replace {len(applied)} unrelated ones") for _, s in applied]
        applied = []
    return [s for _, s in applied], short


def _replaced(newer: Statement, current: Current, history: History, listed: set, sweep: Sweep,
              grey: list[GreyPair]) -> list[tuple[Statement, str, str]]:
    """The earlier statements this one replaces, with the reason and the rule that found each."""
    clause = newer.clause
    similarity = sweep.vectors
    margins = sweep.built_in if newer.candidate.built_in else sweep.client
    plain = not (clause.change or clause.ending)
    if plain:
        swapped = []
        for older in current.same_frame(newer):
            found = _swapped_value(newer, older, listed)
            if found is None or _stated_again(older, newer, history):
                continue
            old, new, sure = found
            said = sure or sweep.settled.get(older.candidate.content, newer.candidate.content)
            if said:
                judged = "" if sure else "; the model judge said it replaces it"
                swapped.append((older, f"states another value of what the older memory states of "
                                       f"{clause.subject_written} ({older.clause.spelled([old])} -> "
                                       f"{clause.spelled([new])}){judged}; similarity "
                                       f"{similarity(newer.candidate, older.candidate):.3f}", SWAP))
            elif said is None:
                grey.append(GreyPair(older.candidate.content, newer.candidate.content,
                                     similarity(newer.candidate, older.candidate), False))
        if swapped:
            return swapped
    flipped = [o for o in (current.denying(newer) if _may_affirm(clause) else []) if _affirms_denied(clause, o.clause)
               and similarity(newer.candidate, o.candidate) >= margins.least and not _stated_again(o, newer, history)
               and not any(_affirms_denied(e.clause, o.clause) for e in history.before
                           if o.created - e.created > ORDER_TOLERANCE_SECONDS)]
    if flipped:
        return [(o, f"affirms what the older memory denied of {clause.subject_written} "
                    f"({o.clause.spelled(_shared(clause, o.clause.denied or o.clause.ended))}); "
                    f"similarity {similarity(newer.candidate, o.candidate):.3f}", FLIP) for o in flipped]
    if plain:
        return []
    return _changed(newer, current, history, similarity, margins, sweep.client)


def _old_values(candidate: Candidate) -> frozenset[str]:
    """The values a change names as the ones it replaces ("from X to Y", "Y instead of X"), as fact terms; a
    span of years ("from 2017 to 2020") says when, not what."""
    change = candidate.fact.change
    named = set(change.old) if change is not None else set()
    named |= {t.split(":", 1)[1] for t in candidate.fact.key if t.startswith(("OVER:", "FROM:"))}
    return frozenset(t for t in named if not YEAR_TERM.match(t))


def _stated_again(older: Statement, newer: Statement, history: History) -> bool:
    """Whether the older statement's fact is stated again after the newer one (by a duplicate merged into it,
    or in the same words or frame): then the newer is not the latest word on it."""
    last = max(history.restated.get(older.id, -math.inf),
               history.last_by_key.get(older.candidate.fact.key, -math.inf),
               history.last_by_frame.get(_whole_frame(older.clause), -math.inf))
    return last - newer.created > ORDER_TOLERANCE_SECONDS


def _changed(newer: Statement, current: Current, history: History, similarity: Vectors, margins: Margins,
             client: Margins) -> list[tuple[Statement, str, str]]:
    """The statement a change or ending replaces: one holding what it says ended, else the one the vectors
    single out among the subject's statements, if it is one the change can replace (eligible: _may_change, and
    not stated again after it). A change naming its old value ("from X", "instead of X") looks only at the
    statements holding X. Eligibility is asked only of the few statements that can win."""
    clause = newer.clause

    def eligible(older: Statement) -> bool:
        return _may_change(clause, older.clause) and not _stated_again(older, newer, history)

    if clause.ended:
        anchored = [o for o in current.holding(newer, clause.ended) if _holds_ended(o.clause, clause.ended)
                    and eligible(o) and similarity(newer.candidate, o.candidate) >= margins.least]
        if anchored:
            return [(o, _reason(newer, o, similarity,
                                f"it holds what ends ({o.clause.spelled(_shared(o.clause, clause.ended))})"), ENDING)
                    for o in anchored]
    places, scores = current.scored(newer)
    named = frozenset() if clause.ending else _old_values(newer.candidate)
    if named:
        kept = [i for i, place in enumerate(places.tolist()) if named <= current.members[place].candidate.fact.key]
        places, scores = places[kept], scores[kept]
    if not places.size:
        return []

    def at(i: int) -> Statement:
        return current.members[int(places[i])]

    best_score = float(scores.max())
    best = min((at(i) for i in np.flatnonzero(scores == best_score).tolist()), key=lambda o: o.id)
    if not eligible(best):
        return []  # the statement the vectors single out is not one it can change: not a runner-up instead
    if best.candidate.built_in != newer.candidate.built_in:
        margins = client
    if best_score < margins.least:
        return []
    if newer.candidate.built_in and best.candidate.built_in and not _corroborated(newer.clause, best.clause):
        return []  # the hashing embedder's closeness is shared words: the subject's alone say nothing more
    close = sorted((at(i) for i in np.flatnonzero(best_score - scores < margins.margin).tolist()
                    if at(i) is best or eligible(at(i))), key=lambda o: o.created)
    if len(close) > 1:
        # Statements as close as the best are told apart only when they state one frame with other values and
        # the newest came clearly later (earlier values of one attribute, not items of one list): it is current.
        if not all(_one_frame(best.clause, o.clause) for o in close) or \
                close[-1].created - close[-2].created < SEQUENCE_GAP_SECONDS:
            return []
        best = close[-1]
    return [(best, _reason(newer, best, similarity, "the closest statement of its subject"), CLOSEST)]


def _corroborated(change: Clause, older: Clause) -> bool:
    """Whether the words say more than the subject: a word of the older statement's predicate in the change's
    (the office of "worked in the New York office" / "transferred to the London office"), the same frame but
    for its value ("the IP is 192.168.1.5" / "the IP is now 192.168.1.9"), or both dated."""
    return bool(_shared(change, older.predicate)) or _one_frame(change, older) or bool(change.years and older.years)


def _one_frame(a: Clause, b: Clause) -> bool:
    """Whether two clauses say the same of their subject but for at most one word."""
    return a.verb == b.verb and len(a.predicate) == len(b.predicate) and \
        sum(x != y for x, y in zip(a.predicate, b.predicate)) <= 1


def _holds_ended(older: Clause, ended: Sequence[str]) -> bool:
    """Whether an older statement holds what a change says ended: a word of it, and every number in it."""
    numbers = [w for w in ended if any(c.isdigit() for c in w)]
    return bool(_shared(older, ended)) and len(_shared(older, numbers)) == len(numbers)


def _may_change(change: Clause, older: Clause) -> bool:
    """Whether a change could replace this older statement of its subject: not one already holding the new
    value, not one dated after the change, not a denial or an ending it does not turn around."""
    if older.years and change.years and min(older.years) > max(change.years):
        return False  # the older statement speaks of a later time than the change
    if older.negated or older.ending:
        return False  # only what turns the denial or ending around replaces it (_affirms_denied)
    said = _content_of(older)
    if change.change and change.value and len(_shared(said, change.value)) == len(change.value):
        return False  # it already says so: a restatement, or the return of a chain to an earlier value
    brought = [w for w in change.predicate if w not in change.ended and w not in change.verbs]
    return len(_shared(said, brought)) < NEW_SHARE * len(brought) or not brought


# A change brings something new: at most this share of its words may be the older statement's (more is a
# restatement in other words: "Couple marry in the UK's first ..." / "Couple get married in Britain's first ...").
NEW_SHARE = 0.5


def _affirms_denied(newer: Clause, older: Clause) -> bool:
    """Whether a statement reports what makes an older denial false: something that happened (a past tense or a
    change word) affirming a word of what was denied ("does not speak French" / "completed a French immersion
    program"), or, with a change word, of what an older ending ended ("no longer plays the piano" / "plays the
    piano again"). A plain statement of the opposite ("prefers X" after "does not like X") says nothing of a
    change: which of the two holds needs more than their order."""
    if not _may_affirm(newer):
        return False
    if older.negated:
        denied = older.denied
    elif older.ending == "no longer" and newer.change:
        denied = older.ended
    else:
        return False
    if not denied or newer.predicate == older.predicate:
        return False
    return bool(_shared(newer, denied))


def _may_affirm(newer: Clause) -> bool:
    """Whether a statement reports something happening, with no negation of its own (_affirms_denied)."""
    return not (newer.negated or newer.ending or newer.progressive) and (newer.past or bool(newer.change)) and \
        not any(w in NEGATORS or w in NEGATIVE_VERBS for w in newer.words)


def _content_of(clause: Clause) -> tuple[str, ...]:
    """Every content word of a clause, its subject's and asides' included."""
    return tuple(w for w in clause.words if content_word(w))


def _shared(clause: Clause | Sequence[str], values: Sequence[str]) -> list[str]:
    """The value words a clause's predicate (or these words) holds, as the values write them: the same word,
    or one spelling of it ("Democrat" / "Democratic": one starts the other, five letters at least)."""
    content = clause.predicate if isinstance(clause, Clause) else clause
    return [v for v in values if any(v == w or min(len(v), len(w)) >= 5 and (v.startswith(w) or w.startswith(v))
                                     for w in content)]


def _frames(clause: Clause) -> list[tuple[str, tuple[str, ...], int]]:
    """The clause's frames: its verb and predicate with one word left open, and where."""
    predicate = clause.predicate
    return [(clause.verb, predicate[:i] + predicate[i + 1:], i) for i in range(len(predicate))]


def _listed_frames(members: list[Statement]) -> set:
    """Frames given two values at one moment (a list, numbered notes): their values are not exclusive. Members
    come in time order, so each is compared only with the latest of its frames, back to the tolerance."""
    seen: dict[tuple, list[Statement]] = defaultdict(list)
    listed = set()
    for member in members:
        for frame in _frames(member.clause):
            slot = frame[2]
            for other in reversed(seen[frame]):
                if member.created - other.created > ORDER_TOLERANCE_SECONDS:
                    break
                if other.clause.predicate[slot] != member.clause.predicate[slot]:
                    listed.add(frame)
                    break
            seen[frame].append(member)
    return listed


def _swapped_value(newer: Statement, older: Statement, listed: set) -> tuple[str, str, bool] | None:
    """The value a plain newer statement puts in place of the older one's, when both say the same of the same
    subject but for one value: (old, new, sure). Sure when the value is one the thing has one of at a time by
    how it is written, an identifier (an address, a phone number, a version), or when the two are dated in
    order ("registered as Democrat in 2018" / "as independent in 2022"); a measure, a day or a name swapped
    with no date or change word is as often another fact beside the first (a look-alike) as its update: a grey
    pair, for the model judge if there is one."""
    a, b = older.clause, newer.clause
    if a.verb != b.verb or len(a.predicate) != len(b.predicate) or not a.predicate or a.negated != b.negated or \
            a.progressive or b.progressive or a.listing or b.listing or a.ending:
        return None
    differ = [i for i, (x, y) in enumerate(zip(a.predicate, b.predicate)) if x != y]
    if len(differ) != 1:
        return None
    slot = differ[0]
    if (b.verb, b.predicate[:slot] + b.predicate[slot + 1:], slot) in listed:
        return None
    old, new = a.predicate[slot], b.predicate[slot]
    dated = bool(a.years and b.years and max(b.years) > max(a.years))
    return old, new, dated or _identifier(old, a) and _identifier(new, b)


def _identifier(word: str, clause: Clause) -> bool:
    """Whether a value is written as an identifier: groups of digits and letters joined by dots, dashes,
    slashes or an at sign ("10.2.0.15", "555-1234", "v1.29", "li@north.example"), not a measure ("30-day",
    "2.5 GB"), a time of day ("9:45") or a label's serial number ("note 517")."""
    if not any(c.isdigit() for c in word) or ":" in word or MEASURE.match(word):
        return False
    parts = [p for p in IDENTIFIER_SEPARATORS.split(word) if p]
    if len(parts) < 2 and "@" not in word or parts[-1] in MEASURE_WORDS:
        return False
    at = clause.words.index(word) if word in clause.words else -1
    following = clause.words[at + 1] if 0 <= at < len(clause.words) - 1 else ""
    return following not in MEASURE_WORDS and (at <= 0 or clause.words[at - 1] not in LABELS)


def _reason(newer: Statement, older: Statement, similarity, how: str) -> str:
    """What decided, in the memories' words: the change and what it brings, the attribute it replaces (what the
    older memory says of the same subject), how that statement was singled out, and their similarity."""
    clause = newer.clause
    return (f"announces a change ({clause.predicate_written}) of what the older memory states of "
            f"{clause.subject_written} ({older.clause.predicate_written}): {how}; "
            f"similarity {similarity(newer.candidate, older.candidate):.3f}")
