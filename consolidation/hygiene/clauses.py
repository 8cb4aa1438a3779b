"""A memory's sentence read as a clause (pure): what it is about (its subject), what it says of it (the verb and
the words after it), when (the years it states), and whether it says that something changed, ended or is
denied. Which words are the subject is read from the sentence itself: the words before its main verb, the verb
found from English word forms (lemminflect's lexicon: "moved" can only be a verb, "address" after "the" is a
noun), never from a list of the subjects memories happen to have.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import lemminflect

from .lexicon import CHANGE_VERBS, ENDING_VERBS, MOVING_VERBS, NEGATIVE_VERBS

# Tokens: identifiers whole ("li@north.example.org", "10.2.0.15", "emp-789-1234"), words, a possessive or negated
# ending, punctuation.
TOKEN = re.compile(r"[^\W_](?:[\w@.:/#+&'’-]*[^\W_])?%?|[,;:.!?()\"“”]")
CLITIC = re.compile(r"^(.+?)(['’]s|n['’]t)$", re.IGNORECASE)
PUNCTUATION = frozenset(",;:.!?()\"“”")
QUOTES = frozenset("\"“”")

# Grammar's closed classes (not the vocabulary of any set of memories).
DETERMINERS = frozenset("the a an this that these those my our your his her its their some any each every "
                        "another either".split())
INDEFINITE = frozenset("a an some any another one two three four five six seven eight nine ten several many few "
                       "most all both someone somebody something people no none nobody every each".split())
EXISTENTIAL = frozenset("there here it this that what who".split())
AUXILIARIES = frozenset("is are was were be been being am 's has have had having does do did will would shall "
                        "should can could may might must".split())
BE = frozenset("is are was were be been being am".split())
NEGATORS = frozenset("not n't never no none nobody nothing neither nor".split())
PREPOSITIONS = frozenset("in on at to from for of by with as into onto about via per during within until till "
                         "since through across after before over under between among toward towards than "
                         "because due despite".split())
CONJUNCTIONS = frozenset("and or but so yet while whereas although though".split())
PRONOUNS = frozenset("i me you he him she her it we us they them myself yourself himself herself itself "
                     "ourselves themselves their theirs our ours his hers its my mine your yours".split())
# Words that date or hedge a statement rather than give its value.
MONTHS = frozenset("january february march april may june july august september october november december jan "
                   "feb mar apr jun jul aug sep sept oct nov dec".split())
SEASONS = frozenset("spring summer autumn fall winter".split())
PERIODS = frozenset("day week weekend month year quarter season semester decade century morning afternoon "
                    "evening night".split()) | SEASONS
RELATIVE_TIMES = frozenset("last next this past previous coming recent".split())
TIME_WORDS = frozenset("now currently recently lately today yesterday tomorrow tonight ago earlier later "
                       "nowadays presently formerly previously originally initially since until till "
                       "anymore again still already once childhood adulthood".split())
HEDGES = frozenset("also just really actually usually mostly mainly primarily strictly exclusively only even "
                   "very quite fully finally officially currently".split())
# Adjectives that say which of a thing's values is meant, not which thing: "the new coach" is the coach.
WHICH_VALUE = frozenset("current new former previous old present latest actual".split())
CHANGE_ADVERBS = frozenset("now nowadays anymore back".split())
DESTINATIONS = frozenset("to into back".split())
POSSESSIVES = frozenset("my our your his her its their".split())
REPORTING_VERBS = frozenset("say tell mention claim think believe report joke announce hear ask suggest "
                            "wonder guess suppose imagine propose argue rumor rumour".split())
YEAR = re.compile(r"^(?:19|20)\d\d(?:-\d\d){0,2}s?$|^(?:19|20)\d\d-(?:19|20)\d\d$")
TITLE = re.compile(r"\b(Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|Mt|vs|etc|approx|No)\.", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Clause:
    """A sentence read as one statement about one thing."""

    words: tuple[str, ...]  # every token, lowercased and lemmatised (identifiers and names as written, lowered)
    subject: tuple[str, ...]  # the subject's words, determiners and which-value adjectives left out
    definite: bool  # the subject names one thing ("the build server", "Alice"), not any ("a man", "some people")
    verb: str  # the main verb's lemma ("" when none was found)
    verb_at: int  # where the main verb is in `words` (-1: none)
    predicate: tuple[str, ...]  # the content words after the verb, times and hedges left out
    years: tuple[int, ...]  # the years the text states, in order
    negated: bool  # the statement denies its predicate ("does not own a car")
    denied: tuple[str, ...]  # what a negation denies: its content words after the negated verb
    change: str  # a change it announces without naming the old value ("move", "now", ...), or ""
    value: tuple[str, ...]  # what the change makes true: the object of its verb ("moved to | Oslo |")
    ending: str  # a verb saying a value ended ("quit", "sell", "no longer"), or ""
    ended: tuple[str, ...]  # what ended: the object of that verb ("sold | the car |")
    progressive: bool  # an action going on ("is slicing"), not a state
    past: bool  # it reports what happened: its main verb in a past form ("joined", "was admitted", "has recovered")
    reported: bool  # someone's words (quoted, or after "said that"), not the memory's own statement
    listing: bool  # the predicate gives several values at once ("Java and Python")
    verbs: tuple[str, ...] = ()  # the main verb and those joined to it ("left ... and joined"), as lemmas
    written: tuple[str, ...] = ()  # the tokens as the text writes them, one for each of `words`

    def spelled(self, lemmas) -> str:
        """Words of this clause as the text writes them ("Porto" for "porto", "lives" for "live")."""
        as_written = dict(zip(reversed(self.words), reversed(self.written)))  # the first spelling wins
        return " ".join(as_written.get(word, word) for word in lemmas)

    @property
    def subject_written(self) -> str:
        """The subject as the text writes it ("The build server's address")."""
        return _joined(self.written[:self.verb_at] if self.verb_at > 0 else self.written[:len(self.subject)])

    @property
    def predicate_written(self) -> str:
        """What the text says of its subject, as written from the main verb on ("lives in Vienna")."""
        return _joined(self.written[self.verb_at:] if self.verb_at >= 0 else ())

    @property
    def about(self) -> str:
        """The subject as one key: two statements about one thing have the same."""
        return " ".join(self.subject)


@lru_cache(maxsize=1 << 18)
def read_clause(text: str) -> Clause:
    """Read a memory's text as a clause (cached: a text meets many others)."""
    raw = _raw_tokens(text)
    lowered = [w.lower() for w in raw]
    years = _years(lowered)
    if lowered and lowered[0] in PREPOSITIONS and "," in lowered:
        # "In 2001, the number of ...": the subject starts after the opening phrase
        raw = raw[lowered.index(",") + 1:]
        lowered = [w.lower() for w in raw]
    words = [_lemma(word, before) for word, before in zip(raw, [""] + raw[:-1])]
    verb_at, subject_end = _main_verb(raw, lowered)
    if verb_at >= 0:
        words[verb_at] = _verb_lemma(lowered[verb_at])
    verbs = _verbs(lowered, verb_at)
    for index in verbs:
        words[index] = _verb_lemma(lowered[index])
    words = tuple(words)
    subject = tuple(w for w in words[:subject_end] if w not in DETERMINERS and w not in WHICH_VALUE
                    and w not in PUNCTUATION and w not in HEDGES and w not in TIME_WORDS)
    definite = bool(subject) and lowered[0] not in INDEFINITE and lowered[0] not in EXISTENTIAL and \
        words[0] not in PRONOUNS
    clause_end = _clause_end(lowered, verb_at)
    negators = _negators(lowered, words, subject_end, verb_at)
    ending, ended = _ending(lowered, words, verbs)
    change, value = _change(lowered, words, verbs)
    negated = (len(negators) % 2 == 1 or verb_at >= 0 and words[verb_at] in NEGATIVE_VERBS) and \
        not (ending == "no longer")
    if negated and not negators:
        negators = [verb_at]
    after = words[verb_at + 1:] if verb_at >= 0 else words
    predicate = tuple(w for w in _untimed(after) if content_word(w))
    if verb_at >= 0 and words[verb_at] == "be" and "'s" in subject:
        # "User's current employer is Microsoft": a value of the user's, stated of the user
        owner = subject.index("'s")
        subject, predicate = subject[:owner], subject[owner + 1:] + predicate
    return Clause(words, subject, definite, words[verb_at] if verb_at >= 0 else "", verb_at, predicate,
                  years, negated, _denied(lowered, words, negators[0], clause_end) if negated else (),
                  change, value, ending, ended, _progressive(lowered, verb_at), _past(lowered, verb_at),
                  _reported(text, lowered, words), _listing(after), tuple(words[i] for i in verbs), tuple(raw))


def _joined(tokens) -> str:
    """Tokens back into text: no space before punctuation or a clitic, no full stop at the end."""
    text = ""
    for token in tokens:
        text += token if token in PUNCTUATION or token.startswith(("'", "’")) or token == "n't" or not text \
            else " " + token
    return text.rstrip(".!?;, ")


def _raw_tokens(text: str) -> list[str]:
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = TITLE.sub(r"\1", text)  # "Mr. Johnson": a title, not a sentence's end
    tokens: list[str] = []
    for token in TOKEN.findall(text):
        clitic = CLITIC.match(token)
        if clitic and not any(c.isdigit() for c in token):
            head, ending = clitic.groups()
            tokens += [head, "'s" if ending[-1] in "sS" else "n't"]
        else:
            tokens.append(token)
    return tokens


def _lemma(word: str, before: str) -> str:
    """A word's dictionary form, lowercased (a noun's singular, where the word can be a noun); identifiers,
    numbers and names (capitalised inside a sentence) as written."""
    lowered = word.lower()
    if lowered in ("'s", "n't") or not lowered.isalpha():
        return lowered
    if word[0].isupper() and before and before not in ".!?:;\"“" and lowered not in AUXILIARIES:
        return word if len(word) == 1 else lowered  # a name inside a sentence ("Team A": not the article)
    return _word_lemma(lowered)


@lru_cache(maxsize=1 << 16)
def _word_lemma(lowered: str) -> str:
    forms = lemminflect.getAllLemmas(lowered)
    if not forms:
        return lowered
    if "VERB" in forms and (lowered.endswith(("ed", "ing")) or set(forms) <= {"VERB", "AUX"}):
        return forms["VERB"][0].lower()
    for tag in ("NOUN", "VERB", "AUX", "ADJ", "ADV"):
        if tag in forms:
            return forms[tag][0].lower()
    return lowered


@lru_cache(maxsize=1 << 16)
def _verb_lemma(lowered: str) -> str:
    if lowered in ("'s",):
        return "be"
    if not lowered.isalpha():
        return lowered
    return lemminflect.getLemma(lowered, upos="VERB")[0].lower()


@lru_cache(maxsize=1 << 16)
def _forms(low: str) -> frozenset[str]:
    """The word classes a lowercased word can be (NOUN, VERB, ADJ, ADV, AUX)."""
    return frozenset(lemminflect.getAllLemmas(low)) if low.isalpha() else frozenset()


@lru_cache(maxsize=1 << 16)
def _verb_tags(low: str) -> frozenset[str]:
    """The inflection tags (Penn: VBD, VBZ, VBN...) under which a word is a form of its verb, if it can be one."""
    if "VERB" not in _forms(low):
        return frozenset()
    inflections = lemminflect.getAllInflections(_verb_lemma(low), upos="VERB")
    return frozenset(tag for tag, forms in inflections.items() if low in forms)


def _past_verb(low: str) -> bool:
    """Whether a word is a verb's past form ("moved", "left", "sold", "quit")."""
    return not _verb_tags(low).isdisjoint(("VBD", "VBN"))


def _inflected_verb(low: str) -> bool:
    """Whether a word is a verb's past or third-person form ("moved", "lives", "left", "sold", "quit")."""
    return not _verb_tags(low).isdisjoint(("VBD", "VBZ", "VBN"))


def opening_verb(words: Sequence[str]) -> int | None:
    """Where the inflected verb a fragment opens with is, adverbs before it skipped ("often travels to Austin");
    None when it does not open with one."""
    at = 0
    while at < len(words) and _only_adverb(words[at].lower()):
        at += 1
    return at if at < len(words) and _inflected_verb(words[at].lower()) else None


def verb_lemma(word: str) -> str:
    return _verb_lemma(word.lower())


def _only_verb(low: str) -> bool:
    forms = _forms(low)
    return bool(forms) and forms <= {"VERB", "AUX"} and not low.endswith("ing")


def _only_adverb(low: str) -> bool:
    return _forms(low) == {"ADV"}


def _main_verb(raw: list[str], lowered: list[str]) -> tuple[int, int]:
    """Where the main verb is, and where the subject ends: the first word after the subject that can only be a
    verb, an auxiliary, or a verb form not standing where a noun would ("the address", "plants were"); the
    auxiliaries before a participle ("has been using") lead to it."""
    subject_end = None
    plural_before = False  # the word before was a plural noun with a verb after it ("releases go out")
    skip_to = -1
    for index in range(len(raw)):
        word, low = raw[index], lowered[index]
        if index <= skip_to:
            continue
        if low in PUNCTUATION:
            if low in ".;!?" and index:
                break
            if low == "," and subject_end is None:
                # "The blaze, started by lightning, is ...", "Alice, our CTO, moved ...": an aside before the verb
                skip_to = next((i for i in range(index + 1, len(raw)) if lowered[i] == ","), -1)
                subject_end = index
            continue
        if index == 0 and not _only_verb(low):
            continue
        if low in NEGATORS or _only_adverb(low) or low in TIME_WORDS:
            subject_end = index if subject_end is None else subject_end
            continue
        if low in AUXILIARIES and not (low == "'s" and _nominal(lowered[index - 1])):
            start = index if subject_end is None else subject_end
            return _after_auxiliaries(lowered, index), start
        if plural_before and "VERB" in _forms(low) and not word[0].isupper():
            return index, index if subject_end is None else subject_end
        verdict = _verb_here(raw, lowered, index)
        if verdict is True:
            return index, index if subject_end is None else subject_end
        plural_before = verdict is None
    return -1, len(raw) if subject_end is None else subject_end


def _nominal(previous: str) -> bool:
    """Whether a "'s" after this word is a possessive ("the user's"), not "is" ("it's")."""
    return previous not in PRONOUNS and previous not in EXISTENTIAL and previous not in ("what", "that")


MODALS = frozenset("do does did will would can could should may might must shall".split())


def _after_auxiliaries(lowered: list[str], index: int) -> int:
    """The main verb after auxiliaries ("has been using", "does not work", "got divorced"): a participle or bare
    verb that follows them, else the last auxiliary ("is a registered Democrat": be; "has no known allergy":
    have)."""
    main = index
    for later in range(index + 1, len(lowered)):
        low = lowered[later]
        if low in AUXILIARIES:
            main = later
            continue
        if low in ("not", "n't", "never") or _only_adverb(low) and low != "no":
            continue
        forms = _forms(low)
        if "VERB" in forms and (low.endswith(("ed", "ing", "en")) or _only_verb(low) or _inflected_verb(low)
                                or lowered[main] in MODALS):
            return later
        break
    return main


def _verb_here(raw: list[str], lowered: list[str], index: int) -> bool | None:
    """Whether an open-class word after the subject's first word is the main verb (None: a plural noun the
    next word can be the verb of, "releases | go out")."""
    word, low = raw[index], lowered[index]
    if not low.isalpha() or word[0].isupper():
        return False
    forms = _forms(low)
    if "VERB" not in forms:
        return False
    previous = lowered[index - 1]
    if previous == "'s" and _past_verb(low) and "NOUN" not in forms:
        return True  # "Lowe's opened 38 stores": a name ending in 's, then its verb
    if previous in DETERMINERS and raw[index - 1] != "A" or previous == "'s" or previous in PREPOSITIONS:
        return False
    if forms <= {"VERB", "AUX"}:
        return not low.endswith("ing") or previous in NEGATORS
    following = raw[index + 1] if index + 1 < len(raw) else ""
    if following.lower() in DETERMINERS or following.lower() in PRONOUNS:
        return True  # "quit the league", "left his job": a noun is not followed by a determiner
    if not _inflected_verb(low) or low.endswith("ss"):
        return False
    if following[:1].isupper():
        return True  # "left Google", "serves Vienna sausage"
    lowered_next = following.lower()
    if lowered_next in AUXILIARIES or _only_verb(lowered_next):
        return False  # "plants were repotted": a plural noun before its verb
    if low.endswith("s") and "NOUN" in forms and "VERB" in _forms(lowered_next) and lowered_next not in PREPOSITIONS:
        return None
    return True


def _verbs(lowered: list[str], verb_at: int) -> list[int]:
    """The main verb and the verbs joined to it ("sold the car and | now | rents a flat", "left Google and
    joined Meta"), in order; a "get" before a participle gives way to it ("got divorced")."""
    if verb_at < 0:
        return []
    found = [verb_at]
    for index in range(verb_at + 1, len(lowered)):
        if lowered[index] in ".;!?":
            break
        if lowered[index - 1] == "and" or lowered[index - 1] in CHANGE_ADVERBS and \
                lowered[index - 2:index - 1] == ["and"]:
            if _inflected_verb(lowered[index]) and lowered[index] not in AUXILIARIES:
                found.append(index)
    return [_past_get(lowered, i) for i in found]


def _past_get(lowered: list[str], index: int) -> int:
    if _verb_lemma(lowered[index]) == "get" and index + 1 < len(lowered) and \
            lowered[index + 1].endswith("ed") and "VERB" in _forms(lowered[index + 1]):
        return index + 1
    return index


def _clause_end(lowered: list[str], verb_at: int) -> int:
    """Where the main clause ends: the first "and", "but" or punctuation after its verb."""
    for index in range(max(verb_at, 0) + 1, len(lowered)):
        if lowered[index] in ("and", "but", ",", ";", ".", "!", "?", "despite", "because", "although"):
            return index
    return len(lowered)


def _object(lowered: list[str], words: tuple[str, ...], verb: int) -> tuple[str, ...]:
    """The object of a verb: its content words up to a preposition that starts a reason, a time or a place of
    its own ("moved to | Oslo | last month", "switched to | Brave | for privacy"), at most four."""
    found: list[str] = []
    for index in range(verb + 1, len(words)):
        low, word = lowered[index], words[index]
        if low in PUNCTUATION or low in CONJUNCTIONS or YEAR.match(low) or len(found) == 4 or \
                found and low in DETERMINERS or low == "to" and lowered[index + 1:index + 2] and \
                _only_verb(lowered[index + 1]):
            break  # "carries the cooking show | the user ...", "forgets | to log hours"
        if low in PREPOSITIONS or low in CHANGE_ADVERBS or low in RELATIVE_TIMES or low in TIME_WORDS:
            if found and low not in ("of",):
                break
            continue
        if content_word(word):
            found.append(word)
    return tuple(found)


def _after_be(lowered: list[str], index: int) -> bool:
    """Whether a verb form stands after "be" (a state or a passive: "is married", "was located")."""
    for before in range(index - 1, -1, -1):
        if lowered[before] in BE:
            return True
        if not (_only_adverb(lowered[before]) or lowered[before] in NEGATORS):
            return False
    return False


def _ending(lowered: list[str], words: tuple[str, ...], verbs: list[int]) -> tuple[str, tuple[str, ...]]:
    """A verb saying a value ended ("quit", "sold", "left", "no longer") and what ended (not "forgets to log",
    not "no longer than 30 minutes")."""
    for index, low in enumerate(lowered):
        if low == "no" and lowered[index + 1:index + 2] == ["longer"] and lowered[index + 2:index + 3] != ["than"] \
                or low == "anymore":
            main = next((v for v in verbs if v > index), verbs[0] if verbs else index)
            return "no longer", _object(lowered, words, main)
    for index in verbs:
        if words[index] in ENDING_VERBS and _past_verb(lowered[index]) and \
                (not _after_be(lowered, index) or words[index] == "divorce"):
            ended = _object(lowered, words, index)
            following = lowered[index + 1] if index + 1 < len(lowered) else ""
            if ended and (following not in PREPOSITIONS or words[index] == "divorce") and \
                    not all(any(c.isdigit() for c in w) for w in ended):
                return words[index], ended  # not "forgets to log hours", "dropped for the first time", "lost 2/32"
    return "", ()


def _change(lowered: list[str], words: tuple[str, ...], verbs: list[int]) -> tuple[str, tuple[str, ...]]:
    """A change the statement announces and what it makes true: a change verb in the past tense (not after
    "be": "is married" is a state; a verb of moving with its value after a preposition: "moved her desk" moves
    something else), or an adverb saying the value holds now or again."""
    for index in verbs:
        word = words[index]
        if word in CHANGE_VERBS and _past_verb(lowered[index]) and not _after_be(lowered, index):
            following = lowered[index + 1] if index + 1 < len(lowered) else ""
            if word in MOVING_VERBS and following not in DESTINATIONS or word in ("go", "come") and following != "back":
                continue  # "moved her desk", "came in stifling heat": something else moves, or nothing changes
            return word, _object(lowered, words, index)
    for index, low in enumerate(lowered):
        if low in CHANGE_ADVERBS and not (low == "now" and lowered[index - 1:index] in (["right"], ["just"])):
            if low == "back" and not (index and words[index - 1] in MOVING_VERBS):
                continue  # "switched back", "came back"; not "was back in jail"
            verb = next((v for v in verbs if v > index), None)
            if verb is None:
                before = [v for v in verbs if v < index and words[v] not in ENDING_VERBS]
                verb = before[-1] if before else index  # "forgot French, now focusing on Mandarin": after it
            return low, _object(lowered, words, verb)
    return "", ()


def _negators(lowered: list[str], words: tuple[str, ...], subject_end: int, verb_at: int) -> list[int]:
    """The negations of the main verb: between the subject and the verb ("does not speak", "never eats"), or
    right after "be" or "have" as the main verb ("is not mandatory", "has no known allergy"); not one inside a
    phrase of its own ("for not meeting the targets") nor one of a complement ("pleads not guilty")."""
    if verb_at < 0:
        return []
    found = [i for i in range(subject_end, verb_at) if lowered[i] in NEGATORS and not _bound(lowered, i)]
    if words[verb_at] in ("be", "have") and verb_at + 1 < len(lowered) and lowered[verb_at + 1] in NEGATORS and \
            not _bound(lowered, verb_at + 1):
        found.append(verb_at + 1)
    return found


def _bound(lowered: list[str], index: int) -> bool:
    """Whether a "no" sets a bound rather than denying ("no longer than 30 minutes", "no more than two")."""
    return lowered[index] == "no" and lowered[index + 2:index + 3] == ["than"]


def _past(lowered: list[str], verb_at: int) -> bool:
    """Whether the main verb is in a past form, or follows a past or perfect auxiliary ("was", "has")."""
    if verb_at < 0:
        return False
    if lowered[verb_at] in ("was", "were", "had", "did") or _past_verb(lowered[verb_at]) and \
            lowered[verb_at] not in AUXILIARIES:
        return True
    return any(lowered[i] in ("was", "were", "had", "did", "has", "have") for i in range(max(0, verb_at - 3), verb_at))


def _progressive(lowered: list[str], verb_at: int) -> bool:
    return verb_at > 0 and lowered[verb_at].endswith("ing") and lowered[verb_at - 1] in BE - {"been"}


def _reported(text: str, lowered: list[str], words: tuple[str, ...]) -> bool:
    """Someone's words: a quotation, or a reporting verb with "that" or "about" after it ("said that",
    "joked about")."""
    if QUOTES & set(text) or "according" in lowered:
        return True
    after_comma = False
    for index, word in enumerate(words):
        if word in REPORTING_VERBS and (after_comma or lowered[index + 1:index + 2] in (["that"], ["about"])):
            return True  # "..., police said", "said that ...", "joked about ..."
        after_comma = after_comma or word == ","
    return False


def content_word(word: str) -> bool:
    """Whether a clause's word carries content (not a function word, a time or a hedge)."""
    return word not in PUNCTUATION and word not in DETERMINERS and word not in AUXILIARIES and \
        word not in PREPOSITIONS and word not in CONJUNCTIONS and word not in PRONOUNS and word not in NEGATORS \
        and word not in HEDGES and word not in TIME_WORDS and word not in ("'s", "n't", "that", "which", "who")


def _untimed(words) -> list[str]:
    """The words without the times they state ("in 2019", "last spring", "from 2018 to 2020", "March")."""
    kept: list[str] = []
    skip_period = False
    for word in words:
        if YEAR.match(word) or word in MONTHS or word in TIME_WORDS:
            while kept and kept[-1] in PREPOSITIONS:
                kept.pop()
            continue
        if word in RELATIVE_TIMES:
            skip_period = True
            while kept and kept[-1] in PREPOSITIONS:
                kept.pop()
            continue
        if skip_period and word in PERIODS or word in SEASONS:
            skip_period = False
            continue
        skip_period = False
        kept.append(word)
    return kept


def _years(lowered: list[str]) -> tuple[int, ...]:
    years = []
    for word in lowered:
        if YEAR.match(word):
            years += [int(part[:4]) for part in word.split("-") if part[:4].isdigit() and len(part) >= 4]
    return tuple(years)


def _denied(lowered: list[str], words: tuple[str, ...], negator: int, end: int) -> tuple[str, ...]:
    """What a negation denies: the object after the negated verb ("does not drink | coffee", "has no | known
    peanut allergy"), not the verb itself (drinking in general) nor what follows the object."""
    start = negator + 1
    if lowered[negator] in ("not", "n't", "never"):
        while start < end and (lowered[start] in AUXILIARIES or _only_adverb(lowered[start])):
            start += 1
        return _object(lowered[:end], words[:end], start)
    if words[negator] in NEGATIVE_VERBS and lowered[negator + 1:negator + 2] == ["to"]:
        return _object(lowered[:end], words[:end], negator + 2)  # "refuses to use | social media"
    return _object(lowered[:end], words[:end], negator)


def _listing(words) -> bool:
    """Whether a predicate names several values at once: "Java and Python", "cardiology, pediatrics"."""
    content_before = False
    for word in words:
        if word in PUNCTUATION and word != ",":
            return False
        if word in ("and", "or", ",") and content_before:
            return True
        content_before = content_before or content_word(word)
    return False
