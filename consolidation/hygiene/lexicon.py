"""The verbs by which a statement says a value changed, ended or is denied (pure data), and every form of them
(lemminflect's English inflections): what facts.py and clauses.py read changes by."""

from __future__ import annotations

import lemminflect

# Verbs that, in the past tense, say the subject took a new value: the value after a preposition for verbs of
# moving ("moved to Oslo"; "moved her desk" moves something else), their object for verbs of taking up
# ("joined Globex", "became dean", "bought a Tesla"); verbs that end a value, whose object is the old one ("quit
# the league", "sold the flat"); verbs that deny what follows them ("declined the offer").
MOVING_VERBS = frozenset("move relocate switch transfer return shift transition migrate upgrade downgrade convert "
                         "go come".split())
TAKING_VERBS = frozenset("join become start begin adopt resume rejoin accept marry enroll register subscribe buy "
                         "purchase lease rent acquire found launch".split())
CHANGE_VERBS = MOVING_VERBS | TAKING_VERBS
# ("lost" is left out: what is lost is mostly an amount, "lost 75 percent of its value", not a value that ended.)
ENDING_VERBS = frozenset("quit leave sell stop drop cancel retire abandon divorce resign forget ditch".split())
NEGATIVE_VERBS = frozenset("decline refuse fail deny reject avoid lack".split())


def verb_forms(lemmas) -> frozenset[str]:
    """Every form of these verbs ("move": moves, moved, moving)."""
    forms = set(lemmas)
    for lemma in lemmas:
        for inflected in lemminflect.getAllInflections(lemma, upos="VERB").values():
            forms.update(inflected)
    return frozenset(forms)


UPDATE_VERB_FORMS = verb_forms(CHANGE_VERBS | ENDING_VERBS | NEGATIVE_VERBS)
