"""Reading a memory's text as a fact (pure): its key — what two restatements of one fact share — and, when the
text announces a change ("moved from X to Y", "no longer X", "now Y instead of X"), its subject, old and new value.

The key keeps what decides whether two sentences state the same fact: entities, numbers with their units,
negation, and the side of a relation each word is on ("tabs over spaces" is not "spaces over tabs"). It drops
what restatements vary: casing, punctuation, word order, inflection, function words, the framing of a statement
("we decided to use", "note that", "it was chosen"), and common abbreviations.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache

import snowballstemmer

from .lexicon import UPDATE_VERB_FORMS

NOT, CHANGE, PREFER = "NOT", "CHANGE", "PREFER"

# Function words and the framing of a statement: restatements add, drop and vary these freely.
STOPWORDS = frozenset("""
a an the this that these those there here it its itself they them their theirs we us our ours i me my mine you
your yours he him his she her hers who whom whose which what where when why how is are was were be been being am
do does did done doing have has had having will would shall should can could may might must of for in on at by
with as into onto about via per and or but so if then also again still too just really definitely certainly
indeed basically actually simply very quite pretty please officially finally currently always each every any
some all both one ones thing things stuff way ok okay yes
""".split())
FRAME_WORDS = frozenset("""
decide decides decided deciding decision decisions choose chooses chose chosen choosing choice pick picks picked
select selects selected opt opts opted settle settles settled agree agrees agreed go goes going went gone use uses
used using note notes noted noting remember reminder fyi record recorded log logged mention mentioned say says
said state states stated confirm confirms confirmed keep keeps kept make makes made get gets got happen happens
happened happening occur occurs occurred take takes took place established establish set team teams hold
holds held holding issue issues issued
""".split())
PREFERENCE_WORDS = frozenset("""
prefer prefers preferred preferring preference preferences like likes liked liking love loves loved want wants
wanted wish wishes enjoy enjoys enjoyed favor favors favored favour favours favoured fond
""".split())
DISLIKE_WORDS = frozenset("dislike dislikes disliked hate hates hated".split())
NEGATORS = frozenset("not no never none nobody nothing neither nor cannot without".split())
CHANGE_VERBS = frozenset("""
move moves moved moving change changes changed changing switch switches switched switching migrate migrates
migrated migrating replace replaces replaced replacing swap swapped shift shifted upgrade upgraded downgrade
downgraded update updated rename renamed reschedule rescheduled rebooked convert converted transition transitioned
revert reverted become became pushed postpone postponed delay delayed scale scaled adjust adjusted
""".split())
# Changes with a direction keep it: "caching reduced latency" and "caching increased latency" are not one fact.
UP_VERBS = frozenset("increase increases increased raise raises raised bump bumps bumped extend extends extended "
                     "grow grows grew expand expands expanded double doubled rise rises rose risen climb climbed".split())
# "lower" and "higher" are left out: "shares close lower" states where a value is, not that it was changed.
DOWN_VERBS = frozenset("decrease decreases decreased lowered reduce reduces reduced shorten shortens shortened cut "
                       "cuts shrink shrinks shrank halve halved fell fallen".split())
STOP_VERBS = frozenset("stop stops stopped quit quits drops dropped ditched abandoned halts halted halting".split())
# Words before a verb that make it an intention, an advice or a possibility, not something that happened.
INTENDED = frozenset("to should would could might may must can will shall".split())
NOW_WORDS = frozenset("now nowadays henceforth".split())
OVER_WORDS = frozenset("over than versus vs".split())
UNITS = {
    "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute", "sec": "second", "secs": "second",
    "second": "second", "seconds": "second", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "day": "day", "days": "day", "week": "week", "weeks": "week", "wk": "week", "month": "month",
    "months": "month", "year": "year", "years": "year", "yr": "year", "yrs": "year", "ms": "millisecond",
    "millisecond": "millisecond", "milliseconds": "millisecond", "percent": "percent", "gb": "gb", "gib": "gb",
    "mb": "mb", "mib": "mb", "kb": "kb", "tb": "tb", "h": "hour", "megabyte": "mb", "megabytes": "mb",
    "gigabyte": "gb", "gigabytes": "gb", "kilobyte": "kb", "kilobytes": "kb", "terabyte": "tb", "terabytes": "tb",
    "mile": "mile", "miles": "mile", "mi": "mile", "km": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km",
}
# Letters written onto a number: an ordinal's ending, or a unit ("12th", "6h", "25MB").
NUMBER_SUFFIX = re.compile(r"(?<=\d)[a-z]+$")
ORDINAL_ENDINGS = frozenset(("st", "nd", "rd", "th"))
NUMBER_WORDS = {word: str(value) for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                     "ninety": "90", "hundred": "100", "thousand": "1000", "dozen": "12", "once": "1",
                     "twice": "2"})
NUMBER_WORDS.pop("one")  # "one" is far more often a pronoun ("the new one") than a count
# Abbreviations that mean the same thing in any team's notes.
SYNONYMS = {
    "db": "database", "dbs": "database", "postgres": "postgresql", "pg": "postgresql", "k8s": "kubernetes",
    "js": "javascript", "ts": "typescript", "py": "python", "repo": "repository", "repos": "repository",
    "prod": "production", "config": "configuration", "configs": "configuration", "env": "environment",
    "envs": "environment", "auth": "authentication", "docs": "documentation", "doc": "documentation",
    "app": "application", "apps": "application", "msg": "message", "msgs": "message", "info": "information",
    "email": "mail", "e-mail": "mail", "vm": "vm", "vms": "vm", "mon": "monday", "tue": "tuesday",
    "tues": "tuesday", "thu": "thursday", "thurs": "thursday", "fri": "friday", "jan": "january",
    "feb": "february", "apr": "april", "jun": "june", "jul": "july", "aug": "august", "sep": "september",
    "sept": "september", "oct": "october", "nov": "november", "dec": "december", "women": "woman", "men": "man",
    "children": "child", "dept": "department", "approx": "approximately", "w": "with",
    # British and American spellings of one word
    "favourite": "favorite", "favourites": "favorite", "colour": "color", "colours": "color",
    "behaviour": "behavior", "organisation": "organization", "organise": "organize", "centre": "center",
    "licence": "license", "analyse": "analyze", "optimise": "optimize", "prioritise": "prioritize",
    "cancelled": "canceled", "cancelling": "canceling", "catalogue": "catalog", "grey": "gray",
    "programme": "program", "travelling": "traveling", "labelled": "labeled", "modelling": "modeling",
}
CONTRACTIONS = [(re.compile(p), r) for p, r in (
    (r"\bcan['’]t\b", "can not"), (r"\bwon['’]t\b", "will not"), (r"\bshan['’]t\b", "shall not"),
    (r"n['’]t\b", " not"), (r"['’](s|re|ve|ll|d|m)\b", ""), (r"['’]", ""),
)]
TOKEN = re.compile(r"[^\W_]+(?:[.:,]\d+)*%?|[,;:.!?()]")
BOUNDARY = frozenset(",;:.!?()")
NAME = re.compile(r"[^\W_]+")
GOES_OUT = re.compile(r"\b(go|goes|going|went|gone) out\b")
GOES_UP_OR_DOWN = re.compile(r"\b(?:go|goes|going|went|gone) (up|down)\b")
GOES_FROM = re.compile(r"\b(?:went|gone|up|down|increased|decreased) from\b")  # "goes from A to B" is a route
USED_TO_BE = re.compile(r"\b(?:it |that |which )?used to be\b")
# "right now" and "just now" say when, not that something changed.
NOT_A_CHANGE = re.compile(r"\b(?:right|just) now\b")
NUMBER_SIGN = re.compile(r"\bno\.\s*(?=\d)")
CONTRAST = re.compile(r",\s*not\b")
WORKWEEK = re.compile(r"\bmon(?:day)?\s*(?:-|–|through)\s*fri(?:day)?\b")
QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
QUOTE_MARKS = frozenset('"“”')
# Phrasal verbs and their one-word nouns are one term: "roll back" / "rollback", "log in" / "login".
PHRASAL_VERBS = frozenset("roll log sign set back check clean look shut start spin warm scale".split())
PARTICLES = frozenset("back in up out on down off".split())
# Prepositions end a value: "replaced MySQL with PostgreSQL | for billing".
PREPOSITIONS = frozenset("for in on at of as into onto about via per during within until across".split())
CUES = ("change", "stop_verb", "now", "no_more", "dated")
CUE_KINDS = frozenset(CUES)
CONTENT_KINDS = frozenset(("word", "num", "prefer"))
# Words whose meaning depends on the word before or after them ("no longer", "as of", "one approval").
CONTEXT_WORDS = frozenset("no longer anymore more one as starting effective forward instead rather than am pm ask "
                          "asks asked asking".split())
DATE_WORDS = frozenset("""
january february march april may june july august september october november december jan feb mar apr jun jul aug
sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday next this
last week month year quarter q1 q2 q3 q4
""".split())
MAX_SPAN = 4
# Identifiers are one term each, never two spellings of one word: "li@north.example" is not
# "li@north.example.org". Their parts are joined by a letter no word holds; a capital letter standing alone
# inside a sentence ("plan A") is marked the same way, as a value rather than the article.
JOINER = "ˍ"
IDENTIFIER_TEXT = re.compile(r"[a-z0-9][a-z0-9._%+-]*@[a-z0-9-]+(?:\.[a-z0-9-]+)*"  # an address
                             r"|(?<![\w.])[a-z][a-z0-9-]*(?:\.[a-z0-9-]+){2,}")  # a host name
IDENTIFIER_PARTS = re.compile(r"[@._%+-]")
LONE_CAPITAL = re.compile(r" [A-HJ-Z]\b")  # the quick look before SINGLE_CAPITAL
SINGLE_CAPITAL = re.compile(r"(?<=[a-z,] )([A-HJ-Z])\b(?!\.\w)")
UPDATE_KINDS = frozenset(("not", "change", "stop_verb", "no_more", "now", "dated"))
IDENTIFIER = re.compile(r"\d[\-/@_]\w|@\w")
UNIT_NAMES = frozenset(UNITS.values())
UPDATE_VERB_STEMS = frozenset(snowballstemmer.stemmer("english").stemWords(sorted(UPDATE_VERB_FORMS)))
_stemmer = snowballstemmer.stemmer("english")
# Words whose alternatives make different facts however close the rest: "staging" is not "production".
VALUE_WORDS = """
production staging stage development dev test testing qa sandbox preview local remote ios android web mobile
desktop mac macos windows linux monday tuesday wednesday thursday friday saturday sunday weekday weekend january
february march april may june july august september october november december morning afternoon evening night
daily weekly monthly yearly hourly nightly annually quarterly before after early late earlier later first last
old new more less most least higher lower faster slower bigger smaller larger always often rarely sometimes
usually only on off in out up down open closed public private internal external manual automatic enabled
disabled required optional mandatory minimum maximum same different free paid all some none admin customer
employee staff contractor guest owner frontend backend client server primary secondary read write left right
""".split()
VALUE_STEMS = frozenset(_stemmer.stemWords(VALUE_WORDS))


@dataclass(frozen=True, slots=True)
class Change:
    """What a change announcement says: about what (subject), away from what (old), to what (new)."""

    subject: frozenset[str]
    old: frozenset[str]  # empty when the text does not say
    new: frozenset[str]  # empty when the text does not say
    wording: str  # the words that announced it, for reasons
    direction: frozenset[str] = frozenset()  # UP / DOWN for "raised", "reduced"
    definite: bool = True  # it says what changed (an old or new value) or that something holds now / no longer

    @property
    def named(self) -> bool:
        """Whether it names a value it changes from or to."""
        return bool(self.old or self.new)


@dataclass(frozen=True, slots=True)
class Fact:
    # The key's terms, sorted: a tuple is about a sixth of a set's size (a million facts are kept, see _FACTS), and
    # two keys are equal exactly when their sorted terms are. `key` is the set, made when asked for.
    terms: tuple[str, ...]
    change: Change | None
    # The numbers the key holds, as dedup's first sift over millions of pairs compares them (merges.py): how
    # many, and a hash of which (0 for none); kept here so that no set of them is made again for each run.
    number_count: int = 0
    number_hash: int = 0
    # Whether it holds anything that can make or undergo an update stated in plain words (updates.py): a verb
    # of change, ending or denial, a change word, a negation, an identifier or a year. Only such memories, and
    # those about their subjects, are read as clauses.
    updatable: bool = False
    # The text it was read from, the very string the cache keeps: a candidate holds this one rather than the
    # equal string each read of the store returns, so a million texts are held once (~110 MB).
    text: str = field(default="", compare=False, repr=False)

    @property
    def key(self) -> frozenset[str]:
        """What two restatements of this fact share (see the module's docstring)."""
        return frozenset(self.terms)

    @property
    def statement(self) -> frozenset[str]:
        """What the memory holds true now: for a change, its subject and new value."""
        return frozenset(self.statement_terms)

    @property
    def statement_terms(self) -> Collection[str]:
        """The statement's terms, without making a set of a plain statement's key (looked through for a million)."""
        return self.terms if self.change is None else self.change.subject | self.change.new


# Every text read as a fact, kept between runs: a full pass reads every memory's text, and reading one costs ~14 µs
# (14 s at a million). Room for the texts of a million memories, in two turns: when the texts met since the last
# turn fill the room, they become the earlier turn and the texts of the turn before go (those not met for a whole
# turn: edited, deleted, old summaries). A text of the earlier turn met again moves to the current one, unread.
# Emptying the cache when full instead had every text read again after it filled with such texts (at a million
# memories there was room for 40,000 more). Plain dictionaries: an lru_cache keeps a link object beside each
# entry (83 MB at a million), and over more texts than it holds a pass in the same order evicts each one before
# its reuse anyway.
_FACTS: dict[str, Fact] = {}
_EARLIER: dict[str, Fact] = {}
FACTS_KEPT = 1 << 20


def read_fact(text: str) -> Fact:
    """The text read as a fact (kept: see _FACTS)."""
    fact = _FACTS.get(text)
    if fact is None:
        fact = _EARLIER.pop(text, None) or _read_fact(text)
        if len(_FACTS) >= FACTS_KEPT:
            _turn_over()
        _FACTS[text] = fact
    return fact


def _turn_over() -> None:
    global _FACTS, _EARLIER
    _FACTS, _EARLIER = {}, _FACTS


def forget_read_facts() -> None:
    """Let go of every text kept as read (tests that change how texts read)."""
    _FACTS.clear()
    _EARLIER.clear()


def _read_fact(text: str) -> Fact:
    tokens = _tokens(text)
    kinds = {kind for kind, _, _ in tokens}
    if kinds & CUE_KINDS and QUOTE_MARKS & set(text):  # words inside quotes are someone's, not a change
        unquoted = _tokens(QUOTED.sub(" ", text))
        change = _change(unquoted) if {kind for kind, _, _ in unquoted} & CUE_KINDS else None
    else:
        change = _change(tokens) if kinds & CUE_KINDS else None
    key = _key(tokens, change, kinds)
    numbers = [term for term in key if term[:1].isdigit()]
    return Fact(tuple(sorted(key)), change, len(numbers), hash(frozenset(numbers)) if numbers else 0,
                _updatable(tokens, kinds, change, text, key, numbers), text)


def _updatable(tokens: list[tuple[str, str, str]], kinds: set[str], change: Change | None, text: str,
               key: frozenset[str], numbers: list[str]) -> bool:
    """Fact.updatable, read off the key where it can be (a stem of a verb of change is then checked against the
    words as written: "migration" shares a stem with "migrated"). A change naming the value it replaces ("from X
    to Y") is changes.py's to match: it takes part in a plain-word update only beside a memory that may make
    one. A year, a number with a point (an identifier, a version) or a number with a unit (a measure) is a
    value another statement may replace."""
    if change is not None:
        return not change.old or "stop_verb" in kinds or "no_more" in kinds  # an ending's old value is its own
    if kinds & UPDATE_KINDS or ("@" in text or "-" in text) and IDENTIFIER.search(text):
        return True
    if numbers and (not key.isdisjoint(UNIT_NAMES) or any("." in n or len(n) == 4 and n[:2] in ("19", "20")
                                                            for n in numbers)):
        return True
    return not key.isdisjoint(UPDATE_VERB_STEMS) and not UPDATE_VERB_FORMS.isdisjoint(
        [original for kind, _, original in tokens if kind == "word"])


def is_value(term: str, text: str) -> bool:
    """Whether a key term carries a value rather than wording: a number, a negation, a relation side, a change
    marker, a name as written in `text` (capitalised inside a sentence, or mixing letters and digits), or a
    word of a closed class of alternatives (environments, platforms, days, frequencies, opposites)."""
    return (term[0].isdigit() or term.isupper() or ":" in term or JOINER in term or term in VALUE_STEMS
            or term in names_in(text))


@lru_cache(maxsize=65536)
def names_in(text: str) -> frozenset[str]:
    """The terms a text writes as names: "PostgreSQL", "iOS", "k8s" (not a capital that only starts a sentence)."""
    names = set()
    for match in NAME.finditer(text):
        word = match.group()
        start = match.start()
        sentence_start = start == 0 or text[:start].rstrip()[-1:] in ".!?:;"
        capital_inside = any(c.isupper() for c in word[1:]) or (word[0].isupper() and not sentence_start)
        if capital_inside or any(c.isdigit() for c in word):
            lowered = word.lower()
            names.add(_stem(SYNONYMS.get(lowered, lowered)))
    return frozenset(names)


def content_words(text: str) -> list[tuple[str, str]]:
    """The content of a text in order, as (normalised value, word as written): what an embedding should see."""
    return [(value, original) for kind, value, original in _tokens(text) if kind in ("word", "num", "prefer", "not")]


def stem(word: str) -> str:
    return _stem(word)


# --- tokens: (kind, value, original word) -------------------------------------------------------------------

def _tokens(text: str) -> list[tuple[str, str, str]]:
    """The text as classified tokens: word (a stem), num, not, prefer, change, stop_verb, no_more, now, dated,
    over, from, to, with, by, prep, boundary."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if LONE_CAPITAL.search(text):
        text = SINGLE_CAPITAL.sub(rf"\1{JOINER}", text)  # "plan A", "Team B": a value, not the article
    text = text.lower()
    if "@" in text or text.count(".") > 2:
        text = IDENTIFIER_TEXT.sub(lambda m: IDENTIFIER_PARTS.sub(JOINER, m.group()), text)
    if ".m" in text:
        text = re.sub(r"\b([ap])\.m\b\.?", r"\1m", text)  # 3 p.m. is 3 pm
    if " out" in text:
        text = GOES_OUT.sub("go", text)  # "the newsletter goes out on Monday": it is sent, it happens
    if " up" in text or " down" in text:
        text = GOES_UP_OR_DOWN.sub(lambda m: "increased" if m.group(1) == "up" else "decreased", text)
    if " from " in text:
        text = GOES_FROM.sub("changed from", text)  # "the price went from $29 to $35", "$1,950, up from $1,850"
    if "used to be" in text:
        text = USED_TO_BE.sub("instead of", text)  # "now us-west-2 (it used to be us-east-1)"
    if "now" in text:
        text = NOT_A_CHANGE.sub("", text)
    if "no." in text:
        text = NUMBER_SIGN.sub("number ", text)  # "No. 11" is a number, not a negation
    if ", not " in text:
        text = CONTRAST.sub(" instead of ", text)  # "tea, not coffee" is "tea instead of coffee"
    if "mon" in text:
        text = WORKWEEK.sub("weekdays", text)
    if "'" in text or "’" in text:
        for pattern, replacement in CONTRACTIONS:
            text = pattern.sub(replacement, text)
    if "-" in text or "/" in text or "+" in text or "&" in text:
        text = re.sub(r"(?<=[^\W_])[-/+&](?=[^\W_])", " ", text)
    raw = TOKEN.findall(text)
    tokens: list[tuple[str, str, str]] = []
    cache = _CLASSIFIED
    adjacent_numbers = False
    for index, word in enumerate(raw):
        if word in PARTICLES and index and raw[index - 1] in PHRASAL_VERBS:
            continue  # joined to the verb before it
        if word in PHRASAL_VERBS and index + 1 < len(raw) and raw[index + 1] in PARTICLES:
            word += raw[index + 1]  # "roll back" is "rollback", "log in" is "login"
        if word in CONTEXT_WORDS:
            previous = raw[index - 1] if index else ""
            if word in ("am", "pm") and previous[:1].isdigit() and tokens and tokens[-1][0] == "num":
                tokens[-1] = ("num", _clock(previous, word), previous + word)  # "10 am" is one time
                continue
            following = raw[index + 1] if index + 1 < len(raw) else ""
            tokens.extend(_classify(word, following, previous))
            continue
        classified = cache.get(word)
        if classified is None:
            classified = tuple(_classify(word, "", ""))
            if len(cache) < CACHE_WORDS:  # a full cache stops growing; what it misses is classified each time
                cache[word] = classified
        if classified and classified[0][0] == "num" and tokens and tokens[-1][0] == "num":
            adjacent_numbers = True
        if classified and classified[0][0] in ("change", "stop_verb") and index and raw[index - 1] in INTENDED:
            classified = (("word", _stem(word), word),)  # "needed to raise", "you should stop": not done
        tokens.extend(classified)
    return _compound_numbers(tokens) if adjacent_numbers else tokens


def _compound_numbers(tokens: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Number words that make one number: "twenty five" is 25, "one hundred" 100, "3 thousand" 3000."""
    joined: list[tuple[str, str, str]] = []
    for kind, value, original in tokens:
        if kind == "num" and joined and joined[-1][0] == "num" and _is_count(joined[-1][1]) and _is_count(value):
            before, now = int(joined[-1][1]), int(value)
            if now in (100, 1000) and before < now:
                joined[-1] = ("num", str(before * now), f"{joined[-1][2]} {original}")
                continue
            if before >= 20 and before % 10 == 0 and before < 100 and 0 < now < 10 and not original[0].isdigit():
                joined[-1] = ("num", str(before + now), f"{joined[-1][2]} {original}")
                continue
        joined.append((kind, value, original))
    return joined


def _is_count(value: str) -> bool:
    return value.isdigit()


# Words whose classification does not depend on their neighbours, classified once (a bounded cache).
_CLASSIFIED: dict[str, tuple[tuple[str, str, str], ...]] = {}
CACHE_WORDS = 200_000


def _classify(word: str, following: str, previous: str) -> list[tuple[str, str, str]]:
    if word in BOUNDARY:
        return [("boundary", word, word)]
    if word[0].isdigit():
        return _number(word)
    if word == "one":  # a count before a noun ("one approval"), a pronoun otherwise ("the new one")
        return [("num", "1", word)] if following and following[0].isalpha() and following not in STOPWORDS \
            and following not in PREPOSITIONS else []
    if word in NUMBER_WORDS:
        return [("num", NUMBER_WORDS[word], word)]
    if word in UNITS:
        return [("word", UNITS[word], word)]
    if word == "no" and following == "longer":
        return []
    if word == "longer" and previous == "no":
        return [("stop_verb", CHANGE, "no longer")]
    if word == "anymore" or word == "more" and previous == "any":
        return [("no_more", CHANGE, word)]
    if word in NEGATORS:
        return [("not", NOT, word)]
    if word in DISLIKE_WORDS:
        return [("not", NOT, word), ("prefer", PREFER, word)]
    if word in PREFERENCE_WORDS or word.startswith("ask") and following in ("for", "again"):
        return [("prefer", PREFER, word)]  # "asked (again) for X" is wanting X; "asked about X" is not
    return _classify_verbs_and_relations(word, following, previous)


def _classify_verbs_and_relations(word: str, following: str, previous: str) -> list[tuple[str, str, str]]:
    if word in CHANGE_VERBS:
        return [("change", CHANGE, word)]
    if word in UP_VERBS:
        return [("change", "UP", word)]
    if word in DOWN_VERBS:
        return [("change", "DOWN", word)]
    if word in STOP_VERBS:
        return [("stop_verb", CHANGE, word)]
    if word in NOW_WORDS:
        return [("now", CHANGE, word)]
    if word == "as" and following == "of" or word in ("starting", "effective") and following in DATE_WORDS:
        return [("dated", CHANGE, "as of" if word == "as" else word)]
    if word == "forward" and previous == "going":
        return [("now", CHANGE, "going forward")]
    if word in OVER_WORDS or word == "rather" and following == "than":
        if word == "rather":
            return []
        return [("over", "", "rather than" if word == "than" and previous == "rather" else word)]
    if word == "instead":
        return [("over", "", word)] if following == "of" else [("now", CHANGE, word)]
    if word in ("from", "to", "with", "by"):
        return [(word, "", word)]
    if word in PREPOSITIONS:
        return [("prep", "", word)]
    if word in STOPWORDS or word in FRAME_WORDS:
        return []
    if word[0] == "v" and len(word) > 1 and word[1].isdigit() and word[1:].replace(".", "").isdigit():
        return [("num", word[1:], word)]  # v1.29 is version 1.29
    return [("word", _stem(SYNONYMS.get(word, word)), word)]


def _number(word: str) -> list[tuple[str, str, str]]:
    if word.endswith(("am", "pm")) and word[:-2].replace(":", "").isdigit():
        return [("num", _clock(word[:-2], word[-2:]), word)]
    if ":" in word:
        return [("num", _clock(word, ""), word)]
    suffix = NUMBER_SUFFIX.search(word)
    if suffix is not None:  # "12th" is 12; "6h" is 6 hours, "25MB" 25 mb, "5K" 5 k
        ending = suffix.group()
        number = _number(word[:suffix.start()])
        if ending in ORDINAL_ENDINGS:
            return number
        return number + [("word", UNITS.get(ending, _stem(ending)), ending)]
    percent = word.endswith("%")
    digits = word.rstrip("%").replace(",", "")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    tokens = [("num", digits or "0", word)]
    return tokens + [("word", "percent", "%")] if percent else tokens


def _clock(time: str, half: str) -> str:
    """A time of day in one spelling, 24-hour HH:MM: 3pm, 3 PM, 15:00 and 3:00 p.m. are all 15:00."""
    hours, _, minutes = time.partition(":")
    if not hours.isdigit() or minutes and not minutes.isdigit():
        return time + half
    hour = int(hours) % 12 + (12 if half == "pm" else 0) if half else int(hours)
    return f"{hour:02d}:{int(minutes or 0):02d}"


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


# --- the key ---------------------------------------------------------------------------------------------------

def _key(tokens: list[tuple[str, str, str]], change: Change | None, kinds: set[str]) -> frozenset[str]:
    """Content stems and numbers; NOT if the statement is negated; relation sides tagged (OVER:x, FROM:x, TO:x).
    A change's key is what it makes true (its subject and new value), however it was announced ("moved from
    Tuesday to Thursday", "now on Thursday"), and never equals a plain statement's; a change that names no new
    value keeps its direction ("reduced" is not "increased")."""
    if change is not None:
        direction = () if change.new else change.direction
        return frozenset({CHANGE, *change.subject, *change.new, *direction})
    if "over" not in kinds and "from" not in kinds:  # no relation sides to tag: the common case, made fast
        key = {value for kind, value, _ in tokens if kind in CONTENT_KINDS}
        if "not" in kinds and sum(1 for kind, _, _ in tokens if kind == "not") % 2:
            key.add(NOT)
        return frozenset(key)
    key: set[str] = set()
    negations = 0
    role, tagged = None, 0
    clause_has_from = False
    for index, (kind, value, _) in enumerate(tokens):
        if kind == "boundary":
            role, clause_has_from = None, False
        elif kind == "not":
            negations += 1
        elif kind == "over":
            role, tagged = "OVER", 0
        elif kind == "from" and _to_ahead(tokens, index):
            role, tagged, clause_has_from = "FROM", 0, True
        elif kind == "to" and clause_has_from:
            role, tagged = "TO", 0
        elif kind in ("word", "num", "prefer"):
            key.add(f"{role}:{value}" if role else value)
            tagged += 1
            if role == "OVER":  # "tabs over spaces is what the user prefers": only "spaces" is the other side
                role = None
        elif kind in ("prep", "with", "by") and role in ("OVER", "TO") and tagged:
            role = None  # "to Denver | on Friday"
    if negations % 2:
        key.add(NOT)
    return frozenset(key)


def _to_ahead(tokens, index: int) -> bool:
    """Whether a "to" follows in the same clause ("from X to Y" is a relation; "data from Stripe" is not)."""
    for kind, _, _ in tokens[index + 1:]:
        if kind == "boundary":
            return False
        if kind == "to":
            return True
    return False


# --- change announcements --------------------------------------------------------------------------------------

def _change(tokens: list[tuple[str, str, str]]) -> Change | None:
    """The change a text announces, if it announces one; values are read from the words around the cue."""
    kinds = [kind for kind, _, _ in tokens]
    old: list[str] = []
    new: list[str] = []
    used: set[int] = set()
    cue_words = [original for kind, _, original in tokens if kind in CUES]
    directions = {value for kind, value, _ in tokens if kind == "change" and value != CHANGE}
    for index, (kind, _, _) in enumerate(tokens):
        if kind == "dated":
            _skip_date(tokens, index + 1, used)
        elif kind == "from" and (_to_ahead(tokens, index) or _cue_before(kinds, index)):
            old += _span(tokens, index + 1, used, stop_at=("to",), whole_clause=True)
        elif kind == "to" and "from" in kinds[:index]:  # "from X to Y": Y runs to the end of its clause
            new += _span(tokens, index + 1, used, whole_clause=True)
        elif kind == "to" and _cue_before(kinds, index):
            new += _span(tokens, index + 1, used)
        elif kind == "over" and (tokens[index][2] in ("instead", "rather than") or _preferred_before(tokens, index)):
            # "instead of", "rather than", and "over" after a preference ("prefers tabs over spaces"); "climbed
            # over the ledge" replaces nothing
            replaced = _span(tokens, index + 1, used, whole_clause=True)
            old += replaced
            if replaced and replaced[0][:1].isdigit():  # "after 24 hours instead of 48": the number before
                new += _number_before(tokens, index, used)
            else:
                new += _span_before(tokens, index, used, len(replaced))
        elif kind in ("with", "by") and _replace_before(tokens, index):
            new += _span(tokens, index + 1, used)
        elif kind == "stop_verb":
            old += _span(tokens, index + 1, used, stop_at=("now",), whole_clause=True)
            new += _later_clauses(tokens, index, used)
        elif kind == "no_more":
            old += _negated_before(tokens, index, used)
            new += _later_clauses(tokens, index, used)
    # After "now" / "as of" nothing says which words are the new value: such a change is matched by the one
    # value it substitutes (see hygiene.supersedes).
    replaced = _replaced_object(tokens, used)
    old += replaced
    subject = frozenset(value for index, (kind, value, _) in enumerate(tokens)
                        if index not in used and kind in ("word", "num", "prefer"))
    negated = sum(1 for index, (kind, _, _) in enumerate(tokens) if kind == "not" and index not in used) % 2
    if negated:
        subject = subject | {NOT}
    definite = bool(old or new) or any(kind in ("stop_verb", "no_more", "now", "dated") for kind in kinds)
    return Change(subject, frozenset(old), frozenset(new), " ".join(dict.fromkeys(cue_words)), frozenset(directions),
                  definite)


def _span(tokens, start: int, used: set[int], stop_at: tuple[str, ...] = (), whole_clause: bool = False) -> list[str]:
    """Up to MAX_SPAN content values from `start`, to the end of the clause, a word of `stop_at`, or (unless
    `whole_clause`) a preposition after the first value."""
    values = []
    for index in range(start, len(tokens)):
        kind, value, _ = tokens[index]
        if index in used:
            continue
        if kind == "boundary" or kind in stop_at or kind in ("over", "from", "change", "stop_verb", "no_more") or \
                len(values) == MAX_SPAN or kind in ("prep", "with", "by", "to") and values and not whole_clause:
            break
        if kind in ("word", "num", "prefer"):
            values.append(value)
            used.add(index)
        elif kind == "not":
            used.add(index)
    return values


def _skip_date(tokens, start: int, used: set[int]) -> None:
    """The date after "as of" / "starting" says when, not what: it is neither subject nor value."""
    for index in range(start, min(start + 3, len(tokens))):
        kind, value, original = tokens[index]
        if kind == "prep" or kind == "num" or original in DATE_WORDS:
            used.add(index)
        else:
            return


def _negated_before(tokens, end: int, used: set[int]) -> list[str]:
    """"not X anymore": X is what stands between the negation and "anymore" (the negation is part of the cue)."""
    for index in range(end - 1, -1, -1):
        kind = tokens[index][0]
        if kind == "boundary":
            return []
        if kind == "not":
            used.add(index)
            return _span(tokens, index + 1, used, stop_at=("no_more",))
    return []


def _span_before(tokens, end: int, used: set[int], count: int) -> list[str]:
    """The value right before "instead of" / "over": as many content words as the value after it has
    ("imperial units in reports | instead of | metric units in reports"), prepositions skipped."""
    values: list[str] = []
    for index in range(end - 1, -1, -1):
        kind, value, _ = tokens[index]
        if kind == "prep":
            continue
        if kind not in ("word", "num") or index in used or len(values) == max(1, count):
            break
        values.append(value)
        used.add(index)
    return values


def _preferred_before(tokens, index: int) -> bool:
    """Whether a preference word comes before this point of its clause."""
    for kind, _, _ in reversed(tokens[:index]):
        if kind == "boundary":
            return False
        if kind == "prefer":
            return True
    return False


def _number_before(tokens, end: int, used: set[int]) -> list[str]:
    """The nearest number before `end` in its clause (the value "instead of 48" replaces)."""
    for index in range(end - 1, -1, -1):
        kind, value, _ = tokens[index]
        if kind == "boundary":
            return []
        if kind == "num" and index not in used:
            used.add(index)
            return [value]
    return []


def _later_clauses(tokens, cue: int, used: set[int]) -> list[str]:
    """"No longer X; Y instead": what a later clause states is the new value (when no "now ..." says it)."""
    boundary = next((i for i in range(cue, len(tokens)) if tokens[i][0] == "boundary"), None)
    if boundary is None:
        return []
    values = []
    for index in range(boundary + 1, len(tokens)):
        kind, value, _ = tokens[index]
        if kind in ("word", "num") and index not in used:
            values.append(value)
            used.add(index)
    return values


def _replaced_object(tokens, used: set[int]) -> list[str]:
    """"replaced X with Y": X is what stands between the verb and "with"."""
    for index, (kind, _, original) in enumerate(tokens):
        if kind == "change" and original.startswith("replac"):
            end = next((i for i in range(index + 1, len(tokens)) if tokens[i][0] in ("with", "boundary")), None)
            if end is not None and tokens[end][0] == "with":
                return _span(tokens, index + 1, used, stop_at=("with",))
    return []


def _replace_before(tokens, index: int) -> bool:
    return any(kind == "change" and original.startswith(("replac", "swap")) for kind, _, original in tokens[:index])


def _cue_before(kinds: list[str], index: int) -> bool:
    return any(kind == "change" for kind in kinds[:index])


def _is_unit(value: str) -> bool:
    return value in UNITS.values()
