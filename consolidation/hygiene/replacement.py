"""Whether a supersession the rules found carries the evidence to be applied (pure).

Applied, a supersession hides the older memory from recall, so it needs more than a newer statement about the
same subject: evidence that the newer one states a new value of the attribute the older one states, and that
this attribute holds one value at a time. What carries it:
- a change naming the old value ("moved from Lyon to Porto"), an identifier or a dated value swapped in one
  frame, an ending of what the older memory holds ("sold the car"), a denial turned around (the older says
  "not", "never", "no");
- a change of the moving kind ("moved to", "switched to", "now ...") replacing a *state* of the subject (what
  is true until it changes: "lives in", "works at", "drives"), not an event (what happened stays true:
  "attended a parade", "got a puppy"), when the subject does not hold several values of that frame at once;
- a change of the taking kind ("joined", "started", "adopted", "bought") only where the older state was bounded
  in time before it ("worked at Microsoft from 2018 to 2020" / "joined Apple in 2021"): taking up one more
  thing is how a collection grows (another pet, a new hobby, one more group).
What falls short of that bar is proposed for review, not applied (a proposal hides nothing); a change of the
taking kind or any change against an event, with nothing more, is not even proposed: one more item of a
collection. One memory superseding several unrelated ones supersedes none of them: it is proposed for each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache

import lemminflect

from .candidate import Candidate
from .changes import Supersession
from .clauses import NEGATORS, Clause, read_clause
from .facts import STOPWORDS, read_fact
from .lexicon import MOVING_VERBS, TAKING_VERBS

SWAP, FLIP, ENDING, CLOSEST, NAMED = "swap", "flip", "ending", "closest", "named"
PROPOSED = "; proposed, not applied: "  # what a proposal's reason says before why its evidence fell short
# Verbs whose past form states what was so for a while (a state: "worked in the New York office", "owned a
# Prius"), not something that happened once ("attended a parade", "played a game").
STATIVE_PAST = frozenset("be have own possess live reside work use belong know".split())
# Words that bound a state in time, so that a later value may take its place without saying it ended.
BOUNDS = frozenset("until till before through since from during".split())
SPANS = frozenset("until till since during".split())  # words that give a past statement a span of time
PLANS = frozenset("will going plan plans planning intend hope hopes off".split())
PARTICLES = frozenset("off by in out over up".split())
WANTING = frozenset("want need wish hope gotta like love would".split())
PRESENT_BE = frozenset("is are am 's 're".split())
ADVERBS = frozenset("currently still now also already officially legally happily".split())
# Words whose dot ends no sentence ("Dr. Alvarez").
ABBREVIATIONS = frozenset("dr mr mrs ms prof st jr sr inc ltd co corp vs no etc approx dept univ gen col lt".split())
# Olders of one newer less similar than this to each other are unrelated: one statement replaces one attribute.
RELATED = 0.5
# Statements of the subject sharing the newer one's verb, before it and still current: this many make a frame
# that holds several values at once (an accumulation), whatever the vectors single out.
CONCURRENT = 2


def shortfall(rule: str, newer: str, older: str, concurrent: int) -> str | None:
    """Why a supersession of the text `older` by `newer`, found by `rule`, falls short of being applied: None
    when the evidence carries it, a reason when it is proposed instead, "" when it is not even a proposal.
    `concurrent`: how many current statements of the subject, before the newer one, have its verb."""
    if is_question(older) or is_question(newer):
        return ""  # a question states no value
    # A change of several sentences says several things: which of them replaces what is not clear. An older text
    # of several sentences is replaced only by a change that names the value it held.
    if several_sentences(newer) or several_sentences(older) and rule != NAMED:
        return "a text of several sentences says several things: which of them replaces what is not clear"
    new, old = read_clause(newer), read_clause(older)
    if new.change == "now" and not now_marks_change(new) and not _names_values(newer):
        return ""  # "want it now", "for four months now": when, not a new value
    if rule in (NAMED, SWAP):
        return None
    if rule == FLIP:
        return None if any(w in NEGATORS for w in old.words) else \
            "what the older memory denies is a verb's sense (failed, declined), not a plain denial"
    if rule == ENDING:
        if new.ended[:1] and new.ended[0] in PARTICLES:
            return ""  # "dropped off the cakes", "sold out": the verb with its particle ends nothing
        return None if is_state(old) else "the older memory states an event or a plan, which no ending replaces"
    if not is_state(old):
        return ""  # an event stays true: a new one is one more, not a replacement
    # A change ends the older value when it moves ("moved to", "switched to"), says the value is now another
    # ("now sleeps during the day"), or ends something as it goes ("quit ... and joined", "left ... to become").
    ends_old = new.change in MOVING_VERBS or now_marks_change(new) or bool(new.ending) or _names_old(newer) or \
        new.change == "become" and old.verb == "be"  # "is a registered Democrat" / "became an independent"
    if new.change in TAKING_VERBS and not ends_old:
        if bounded_before(old, new):
            return None
        return (f"taking up something new ({new.change}) adds to what the subject has or does, unless the older "
                "state was bounded in time before it") if set(new.predicate) & set(old.predicate) else ""
    if new.change in MOVING_VERBS and moves_away(new):
        return ""  # "came back from Paris": no new value of anything
    if not ends_old:
        return "the change word does not say the older value ended"
    if concurrent >= CONCURRENT:
        return f"the subject holds several values of this frame at once ({new.verb}): accumulating"
    return None


def _names_values(text: str) -> bool:
    """Whether a change names the value it replaces or the one it brings ("..., not Thursday")."""
    change = read_fact(text).change
    return change is not None and bool(change.old or change.new)


def _names_old(text: str) -> bool:
    """Whether a change names the value it replaces ("... instead of 11", "rather than ...")."""
    change = read_fact(text).change
    words = read_clause(text).words
    return change is not None and bool(change.old) or "instead" in words or \
        any(a == "rather" and b == "than" for a, b in zip(words, words[1:]))


def is_question(text: str) -> bool:
    return "?" in text


def several_sentences(text: str) -> bool:
    """Whether a text holds more than one sentence ("Thanks! I'm glad. See you."); the dot of an abbreviation
    or an initial ("Dr. Alvarez", "J. R. Smith") ends none."""
    tokens = text.split()
    for token, following in zip(tokens, tokens[1:]):
        if token[-1:] in "!?":
            return True
        if token.endswith(".") and not token.endswith("..") and following[:1].isupper():
            word = token.rstrip(".").lstrip("\"'(“").casefold()
            if word not in ABBREVIATIONS and not (len(word) == 1 and word.isalpha()):
                return True
    return False


def now_marks_change(clause: Clause) -> bool:
    """Whether "now" says the statement's value is new ("now eats", "is now", "and now lives"), not when or
    how long ("for four months now", "want it now", "right now")."""
    if "now" not in clause.words:
        return False
    at = clause.words.index("now")
    before = clause.words[at - 1] if at > 0 else ""
    after = clause.words[at + 1] if at + 1 < len(clause.words) else ""
    if before in ("right", "just", "until", "till", "by", "for", "from", "than"):
        return False
    if before in ("be", "have", "and", "but", "so", ",") or after in clause.verbs or after == clause.verb or \
            at == len(clause.subject) or "VERB" in lemminflect.getAllLemmas(after):
        return True
    # At the end of the clause ("keeps every password in Bitwarden now"), unless it says how long ("for a year
    # now") or what is wanted at once ("I want to eat this now").
    ends = not after or after in (".", ",", ";", "!")
    return ends and "for" not in clause.words[max(at - 5, 0):at] and not WANTING.intersection(clause.words[:at])


def moves_away(clause: Clause) -> bool:
    """Whether a verb of moving says where from but not where to ("came back from San Francisco")."""
    if clause.change not in clause.words:
        return False
    at = clause.words.index(clause.change)
    following = clause.words[at + 1:at + 3]
    return "from" in following and "to" not in following and "into" not in following


def unrelated(olders: Sequence[Candidate], similarity: Callable[[Candidate, Candidate], float]) -> bool:
    """Whether the olders one newer memory would replace are unrelated to each other (then it replaces none)."""
    return any(similarity(a, b) < RELATED for i, a in enumerate(olders) for b in olders[i + 1:])


def proposed(supersession: Supersession, why: str) -> Supersession:
    return replace(supersession, reason=f"{supersession.reason}{PROPOSED}{why}")


def is_state(clause: Clause) -> bool:
    """Whether a statement says what is so (until it changes), not what happened or is planned: the present
    (not a plan), or a past that is dated or of a verb of states ("was", "owned", "lived in 2017")."""
    if any(w in PLANS for w in clause.words[clause.verb_at - 1:clause.verb_at + 2] if clause.verb_at > 0):
        return False
    if not clause.past or clause.progressive or _present_passive(clause) or _base_form(clause):
        return True  # the present, an action going on ("has been looking into"), a present passive
    return bool(clause.years) or clause.verb in STATIVE_PAST or any(w in SPANS for w in clause.words)


def _base_form(clause: Clause) -> bool:
    """Whether the main verb is written in its base form ("Backups run on Monday"): a present, whatever a past
    that looks the same ("run", "put", "set") would say."""
    return 0 <= clause.verb_at < len(clause.written) and clause.written[clause.verb_at].lower() == clause.verb


def _present_passive(clause: Clause) -> bool:
    """Whether the main verb is a participle after a present "be" ("is located", "are married"): a state."""
    for word in reversed(clause.written[:max(clause.verb_at, 0)]):
        lowered = word.lower()
        if lowered in PRESENT_BE:
            return True
        if lowered not in ADVERBS:
            return False
    return False


def bounded_before(older: Clause, newer: Clause) -> bool:
    """Whether the older state was bounded in time before the newer statement: both dated, the older's years
    not after the newer's, or the older's own words bounding it ("until 2019", "from 2018 to 2020")."""
    if older.years and newer.years and max(older.years) <= min(newer.years):
        return True
    return bool(older.years) and any(w in BOUNDS for w in older.words)


FIRST_WORD = re.compile(r"\s*([A-Z][^\W\d_]*)")
# A dialogue turn as a memory: its speaker's name (one or two capitalised words) and a colon, then the words.
SPEAKER = re.compile(r"^\s*([A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?):\s")


def subjects_differ(first: str, second: str) -> bool:
    """Whether two statements are said by different people ("Maria: ..." / "John: ...") or say alike of two
    people with their parts swapped ("Melanie values her friendship with Caroline" / "Caroline values her
    friendship with Melanie"): each names its subject, the two names differ, and each text names the other's
    subject too. A merge never joins them. (Two names for one person in two texts, "Ms. Haque" / "Fatima",
    are not swapped parts: that is left to the judge.)"""
    speakers = _speaker(first), _speaker(second)
    if speakers[0] and speakers[1]:
        return speakers[0] != speakers[1]
    named = [_named_subject(text) for text in (first, second)]
    if not all(named) or named[0] & named[1]:
        return False
    if read_clause(first).reported or read_clause(second).reported:
        return False  # "IBM is pursuing ..., CELF said": who said it is not what it is about
    return _mentions(second, named[0]) and _mentions(first, named[1])


def _speaker(text: str) -> str | None:
    """The speaker of a dialogue turn ("Maria: ..."), by a name that is no English word ("Notes: ..." is not)."""
    match = SPEAKER.match(text)
    if match is None or any(english_word(word) for word in match.group(1).split()):
        return None
    return match.group(1).casefold()


def _mentions(text: str, names: frozenset[str]) -> bool:
    words = {w.casefold().rstrip("'’s") for w in re.findall(r"[\w'’]+", text)}
    return names <= words


@lru_cache(maxsize=1 << 14)
def english_word(word: str) -> bool:
    """Whether a word is one of English's (lemminflect's lexicon knows it), not a name ("Caroline")."""
    return bool(lemminflect.getAllLemmas(word.casefold()))


def same_named_subject(first: str, second: str) -> frozenset[str]:
    """The name two statements share as their subject or speaker ("Caroline is ..." / "Caroline has ..."), or
    empty when either names none or they differ."""
    speakers = _speaker(first), _speaker(second)
    if speakers[0] and speakers[1]:
        one, other = frozenset([speakers[0]]), frozenset([speakers[1]])
    else:
        one, other = _named_subject(first), _named_subject(second)
    return one if one and one == other else frozenset()


def subject_key(text: str) -> str | None:
    """Who a statement is about, as one key: its speaker ("Maria: ..."), else the name it opens with as its
    subject ("Caroline is ..."), else None (most stored memories name nobody). Two statements with one key
    are about one person; with two keys, about two."""
    speaker = _speaker(text)
    if speaker:
        return speaker
    named = _named_subject(text)
    return " ".join(sorted(named)) if named else None


def _named_subject(text: str) -> frozenset[str]:
    """The subject's name words when the sentence opens with its subject's name ("Caroline is ...", "Dr Lee
    Smith works ..."), else empty ("The main office ...", "Melanie's son ...")."""
    opening = FIRST_WORD.match(text)
    if opening is None or english_word(opening.group(1)):
        return frozenset()  # the usual case, told without reading the sentence: it opens with no name
    clause = read_clause(text)
    names = []
    for at, word in enumerate(clause.written):
        if not (word[:1].isupper() and word.isalpha()) or word.casefold() in STOPWORDS:
            break
        if at == 0 and english_word(word):
            break  # "Short answers ...", "User prefers ...": a word any sentence may start with, not a name
        names.append(word.casefold())
    following = clause.written[len(names)] if len(names) < len(clause.written) else ""
    if following in (",", "and", "&"):
        return frozenset()  # "Russia, along with France, ...": a list of subjects, not one
    return frozenset(names) if names and clause.subject and set(clause.subject) <= set(names) else frozenset()
