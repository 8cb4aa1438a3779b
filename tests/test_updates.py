"""Updates stated in plain words (hygiene/updates.py, hygiene/clauses.py): pure rules on hand-made memories, whose
vectors are built to known cosines, so every expected verdict follows from the rule's words."""

import math

import numpy as np
import pytest

from consolidation.hygiene.candidate import Candidate
from consolidation.hygiene.changes import Supersession
from consolidation.hygiene.clauses import read_clause
from consolidation.hygiene.facts import read_fact
from consolidation.hygiene.updates import BUILT_IN_MARGINS, CLIENT_MARGINS, SEQUENCE_GAP_SECONDS, Settled, Vectors, \
    plain_updates, statement_groups, subjects_concerned

DAY = 86400.0
DIM = 16


def unit_at(cosine: float, axis: int, other: int) -> np.ndarray:
    """A unit vector at `cosine` to the axis `axis` (the rest along `other`)."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[axis] = cosine
    vector[other] = math.sqrt(1 - cosine * cosine)
    return vector


class Memories:
    """Memories of one scope, one a day after the other unless told, each with its vector."""

    def __init__(self):
        self.candidates: list[Candidate] = []
        self.rows: list[np.ndarray] = []

    def add(self, text: str, vector: np.ndarray, day: float | None = None, built_in: bool = False) -> str:
        memory_id = f"m{len(self.candidates)}"
        created = (len(self.candidates) if day is None else day) * DAY
        self.candidates.append(Candidate(memory_id, "Memory", read_fact(text), created, 0, 0, content=text,
                                         scope="s", built_in=built_in))
        self.rows.append(vector)
        return memory_id

    def updates(self, decided=(), settled=None, restated=None):
        vectors = Vectors(np.array(self.rows), {c.id: i for i, c in enumerate(self.candidates)})
        groups = statement_groups(self.candidates, subjects_concerned(self.candidates))
        options = {"settled": settled} if settled is not None else {}
        return plain_updates(groups, vectors, decided, restated, **options)

    def superseded(self, **options) -> set[tuple[str, str]]:
        return {(s.newer, s.older) for s in self.updates(**options).supersessions}


# --- reading a sentence as a clause ----------------------------------------------------------------------------


@pytest.mark.parametrize("text, about, verb, predicate", [
    ("The build server's address is 10.2.0.15.", "build server", "be", ("address", "10.2.0.15")),
    ("User currently lives in Vienna.", "user", "live", ("vienna",)),
    ("Team A meets on Monday.", "team A", "meet", ("monday",)),
    ("Hallway plants were repotted last week.", "hallway plant", "be", ("repotted",)),
    ("In 2001, the number of inmates fell for the first time.", "number of inmate", "fall", ("first", "time")),
    ("User left Google and joined Meta in 2022.", "user", "leave", ("google", "join", "meta")),
])
def test_a_sentence_is_read_as_subject_verb_and_predicate(text, about, verb, predicate):
    clause = read_clause(text)
    assert (clause.about, clause.verb, clause.predicate) == (about, verb, predicate)


def test_a_clause_knows_changes_endings_denials_and_whose_words_they_are():
    moved = read_clause("User moved to Porto last spring.")
    assert (moved.change, moved.value, moved.past) == ("move", ("porto",), True)
    assert read_clause("Priya moved her desk to the third floor.").change == ""  # something else moved
    quit_ = read_clause("User quit the league after a knee injury.")
    assert (quit_.ending, quit_.ended) == ("quit", ("league",))
    assert read_clause("The user forgets to log hours when traveling.").ending == ""  # "forget to" ends nothing
    denied = read_clause("User does not drink coffee under any circumstances.")
    assert (denied.negated, denied.denied) == (True, ("coffee",))  # the object, not drinking in general
    assert not read_clause("United paid $34 million for not meeting the targets.").negated  # not the main verb
    assert not read_clause("The user prefers meetings no longer than 30 minutes.").negated  # a bound
    assert read_clause("He said that she moved to Berlin.").reported
    assert read_clause("The report said buyers can now choose a desktop, analysts said.").reported
    playing = read_clause("A man is playing a guitar.")
    assert not playing.definite and playing.progressive


def test_an_intention_or_an_advice_is_no_change_announced():
    assert read_fact("The MTA argued it needed to raise fares.").change is None
    assert read_fact("You should stop prefixing everything.").change is None
    assert read_fact("The MTA raised fares.").change is not None


def test_identifiers_are_one_term_and_never_spellings_of_each_other():
    shorter, longer = read_fact("Customer li@north.example bought plan A."), \
        read_fact("Customer li@north.example.org bought plan B.")
    assert len(shorter.key ^ longer.key) == 4  # the two addresses and the two one-letter plans
    from consolidation.hygiene.evidence import weigh
    from consolidation.hygiene.reading import read
    kinds = {c.kind for c in weigh(read("Customer li@north.example bought plan A."),
                                   read("Customer li@north.example.org bought plan B.")).conflicts}
    assert kinds == {"identifier"}


# --- the same frame, one value swapped --------------------------------------------------------------------------


def test_a_new_identifier_for_the_same_attribute_supersedes_with_no_change_word():
    m = Memories()
    old = m.add("The build server's address is 10.2.0.15.", unit_at(1.0, 0, 1))
    new = m.add("The build server's address is 10.2.0.99.", unit_at(0.8, 0, 1))
    found = m.updates()
    assert [(s.newer, s.older) for s in found.supersessions] == [(new, old)]
    assert found.supersessions[0].reason == ("states another value of what the older memory states of The build "
                                             "server's address (10.2.0.15 -> 10.2.0.99); similarity 0.800")


def test_a_measure_swapped_without_a_date_is_a_grey_pair_the_model_may_settle():
    m = Memories()
    old = m.add("The log retention is 14 days.", unit_at(1.0, 0, 1))
    new = m.add("The log retention is 28 days.", unit_at(0.9, 0, 1))
    found = m.updates()
    assert found.supersessions == []
    assert [(g.first, g.second) for g in found.grey] == [("The log retention is 14 days.", "The log retention is 28 days.")]
    settled = Settled({"14|28": True}, lambda older, newer: f"{older.split()[-2]}|{newer.split()[-2]}")
    said = m.updates(settled=settled).supersessions
    assert [(s.newer, s.older) for s in said] == [(new, old)] and "model judge" in said[0].reason
    assert m.updates(settled=Settled({"14|28": False}, settled.key)).grey == []  # settled: not asked again


def test_statements_dated_in_order_replace_any_one_value():
    m = Memories()
    first = m.add("User registered as Democrat in 2018.", unit_at(1.0, 0, 1))
    second = m.add("User registered as independent in 2022.", unit_at(0.7, 0, 1))
    assert m.superseded() == {(second, first)}


def test_values_given_at_one_moment_are_a_list_and_an_old_value_stated_again_stays_current():
    listed = Memories()
    listed.add("The build server's address is 10.2.0.15.", unit_at(1.0, 0, 1), day=0)
    listed.add("The build server's address is 10.2.0.16.", unit_at(0.9, 0, 1), day=0)
    listed.add("The build server's address is 10.2.0.99.", unit_at(0.9, 0, 1), day=3)
    assert listed.superseded() == set()
    again = Memories()
    again.add("The build server's address is 10.2.0.15.", unit_at(1.0, 0, 1))
    middle = again.add("The build server's address is 10.2.0.99.", unit_at(0.9, 0, 1))
    last = again.add("The build server's address is 10.2.0.15.", unit_at(1.0, 0, 1))
    # The first value, stated again after the second, was never replaced; the second is, by the third.
    assert again.superseded() == {(last, middle)}


def test_another_subject_in_the_same_frame_is_another_thing():
    m = Memories()
    m.add("The DNS cache TTL is 5 minutes.", unit_at(1.0, 0, 1))
    m.add("The session cache TTL is 5 minutes.", unit_at(0.95, 0, 1))
    m.add("Host web-01 runs the checkout API.", unit_at(1.0, 2, 3))
    m.add("Host web-011 runs the checkout API.", unit_at(0.95, 2, 3))
    assert m.superseded() == set()


# --- a change that names no old value -----------------------------------------------------------------------------


def test_a_change_supersedes_the_statement_its_vectors_single_out():
    m = Memories()
    lisbon = m.add("User lives in Lisbon.", unit_at(1.0, 0, 1))
    m.add("User plays the cello.", unit_at(1.0, 2, 1))
    porto = m.add("User moved to Porto last spring.", unit_at(0.5, 0, 3))  # 0.5 to Lisbon, 0 to the cello
    found = m.updates().supersessions
    assert [(s.newer, s.older) for s in found] == [(porto, lisbon)]
    assert found[0].reason == ("announces a change (moved to Porto last spring) of what the older memory states of "
                               "User (lives in Lisbon): the closest statement of its subject; similarity 0.500")


def test_a_change_the_vectors_cannot_place_by_its_margin_supersedes_nothing():
    m = Memories()
    m.add("User lives in Lisbon.", unit_at(1.0, 0, 1))
    m.add("User plays the cello.", unit_at(1.0, 2, 1))
    close = CLIENT_MARGINS.margin / 2  # both about as close as each other
    cosines = (0.6, 0.6 - close)
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0], vector[2] = cosines
    vector[3] = math.sqrt(1 - sum(c * c for c in cosines))
    m.add("User moved to Porto last spring.", vector)
    assert m.superseded() == set()
    below = Memories()
    below.add("User lives in Lisbon.", unit_at(1.0, 0, 1))
    below.add("User moved to Porto last spring.", unit_at(CLIENT_MARGINS.least - 0.05, 0, 2))
    assert below.superseded() == set()


def test_the_built_in_embedder_has_margins_of_its_own_and_needs_words_beyond_the_subject():
    m = Memories()
    office = m.add("Employee worked in the New York office.", unit_at(1.0, 0, 1), built_in=True)
    moved = m.add("Employee transferred to the London office for a promotion.", unit_at(BUILT_IN_MARGINS.least + 0.01, 0, 2),
                  built_in=True)
    assert BUILT_IN_MARGINS.least + 0.01 < CLIENT_MARGINS.least
    assert m.superseded() == {(moved, office)}  # "office" says it is the same attribute
    bare = Memories()
    bare.add("User lives in Lisbon.", unit_at(1.0, 0, 1), built_in=True)
    bare.add("User moved to Porto last spring.", unit_at(0.9, 0, 2), built_in=True)
    assert bare.superseded() == set()  # close in shared words, and the only word shared is the subject's


def test_an_ending_supersedes_what_holds_the_word_it_ends():
    m = Memories()
    league = m.add("User plays in a Sunday football league.", unit_at(1.0, 0, 1))
    m.add("User drinks oat milk.", unit_at(1.0, 2, 1))
    quit_ = m.add("User quit the league after a knee injury.", unit_at(0.5, 0, 2))
    assert m.superseded() == {(quit_, league)}


def test_a_change_already_holding_the_old_statement_or_said_earlier_than_it_replaces_nothing():
    m = Memories()
    m.add("User joined Google in 2020 as their first job.", unit_at(1.0, 0, 1))
    m.add("User joined Google in 2020.", unit_at(0.95, 0, 1))  # a restatement, not a change
    assert m.superseded() == set()
    later = Memories()
    later.add("User visited Google's campus in 2024 for a conference.", unit_at(1.0, 0, 1))
    later.add("User moved to Meta in 2022.", unit_at(0.6, 0, 2))  # the visit is after the change it would undergo
    assert later.superseded() == set()


def test_a_chain_and_its_return_leave_the_newest_current():
    m = Memories()
    firefox = m.add("User browses with Firefox.", unit_at(1.0, 0, 1))
    chrome = m.add("User switched to Chrome in 2023.", unit_at(0.6, 0, 2))
    back = m.add("User switched back to Firefox in 2024.", _toward(chrome_axis=2, cosine=0.6, firefox=0.5))
    found = m.superseded()
    assert found == {(chrome, firefox), (back, chrome)}
    # A second run follows what the first wrote: it finds nothing more.
    assert m.updates(decided=found).supersessions == []


def _toward(chrome_axis: int, cosine: float, firefox: float) -> np.ndarray:
    """A unit vector at `cosine` to the Chrome statement's own axis and `firefox` to the first statement's."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = firefox
    vector[chrome_axis] = cosine
    vector[5] = math.sqrt(1 - cosine * cosine - firefox * firefox)
    return vector


def test_what_another_rule_or_an_earlier_run_decided_is_followed():
    m = Memories()
    lisbon = m.add("User lives in Lisbon.", unit_at(1.0, 0, 1))
    porto = m.add("User moved to Porto last spring.", unit_at(0.6, 0, 2))
    decided = [(porto, "an agent's own word")]
    assert m.superseded(decided=decided) == set()  # its supersession is made: the rules leave it
    elsewhere = [("another memory", lisbon)]  # superseded by a memory about something else: never current
    assert m.superseded(decided=elsewhere) == set()


# --- denials turned around ------------------------------------------------------------------------------------


def test_something_that_happened_turns_a_denial_around_but_a_plain_opposite_does_not():
    m = Memories()
    never = m.add("User does not speak French.", unit_at(1.0, 0, 1))
    m.add("User is fluent in Spanish.", unit_at(1.0, 2, 1))
    done = m.add("User completed a French immersion program last summer.", unit_at(0.5, 0, 2))
    assert m.superseded() == {(done, never)}
    plain = Memories()
    plain.add("User does not like metric units in reports.", unit_at(1.0, 0, 1))
    plain.add("User prefers metric units in reports.", unit_at(0.9, 0, 1))
    assert plain.superseded() == set()  # which of the two holds needs more than their order
    other = Memories()
    other.add("User no longer plays the piano after injuring their hand.", unit_at(1.0, 0, 1))
    other.add("User recently started learning the guitar.", unit_at(0.6, 0, 2))
    assert other.superseded() == set()  # the guitar is not what ended


def test_only_what_may_make_or_undergo_an_update_is_read_as_a_clause():
    assert not read_fact("Note 41 about billing and queue. Detail 17 recorded for later.").updatable
    assert read_fact("User moved to Porto.").updatable and read_fact("User does not drink coffee.").updatable
    assert read_fact("The build server's address is 10.2.0.15.").updatable
    assert read_fact("Detail changed from 5 to 6.").updatable is False  # changes.py matches what it names
    assert read_fact("User quit the league.").updatable  # an ending's old value is its own


def test_sequence_gap_keeps_values_recorded_close_together_apart():
    assert SEQUENCE_GAP_SECONDS == DAY
    m = Memories()
    monday = m.add("Backups run on Monday.", unit_at(1.0, 0, 1), day=0)
    m.add("Backups run on Tuesday.", unit_at(1.0, 0, 1), day=0.01)
    m.add("Backups now run on Friday.", unit_at(0.9, 0, 2), day=3)
    assert m.superseded() == set()  # two values close together: which one "now" replaces is unknown
    apart = Memories()
    apart.add("Backups run on Tuesday.", unit_at(1.0, 0, 1), day=0)
    monday = apart.add("Backups run on Monday.", unit_at(1.0, 0, 1), day=2)
    friday = apart.add("Backups now run on Friday.", unit_at(0.9, 0, 2), day=5)
    assert apart.superseded() == {(friday, monday)}  # the newer of two successive values is the current one


def test_supersessions_carry_the_pair_newer_first():
    m = Memories()
    old = m.add("The support hotline number is 555-0100.", unit_at(1.0, 0, 1))
    new = m.add("The support hotline number is 555-0199.", unit_at(0.9, 0, 1))
    assert m.updates().supersessions == [Supersession(new, old, 0.75, m.updates().supersessions[0].reason, "swap")]
