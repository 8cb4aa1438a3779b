"""Reading memories as facts (pure): restatements share a key, look-alikes never do, changes are parsed."""

import math
import uuid

import pytest

from consolidation.hygiene.facts import read_fact
from consolidation.hygiene.candidate import Candidate
from consolidation.hygiene.changes import changes_over_time, match_change, simultaneous_conflicts
from consolidation.hygiene.merges import merged_fields


def key(text: str) -> frozenset[str]:
    return read_fact(text).key


@pytest.mark.parametrize("first, second", [
    ("Decided to use PostgreSQL as the database for the billing service",
     "postgresql was chosen as the database for the billing service."),
    ("We chose PostgreSQL as the billing service database", "The billing service database will be PostgreSQL"),
    ("User prefers dark mode in the code editor", "Dark mode in the code editor is what the user prefers"),
    ("Production deploys happen on Tuesday", "production deploys happen on tuesdays!"),
    ("The cache TTL is 5 minutes", "the cache ttl is set to five mins"),
    ("Standup is at 3 PM", "standup: 15:00"),
    ("Uploads are capped at twenty-five MB", "uploads are capped at 25 mb"),
    ("The main k8s cluster runs on v1.29", "The main Kubernetes cluster runs on 1.29"),
    ("User dislikes tabs", "The user doesn't like tabs"),
    ("The team agreed on Sentry for error tracking", "We decided to use Sentry for error tracking"),
    ("Deploys moved from Tuesday to Thursday", "Deploys were switched from Tuesday to Thursday."),
])
def test_restatements_share_a_key(first, second):
    assert key(first) == key(second)


@pytest.mark.parametrize("first, second", [
    ("Staging deploys happen on Tuesday", "Production deploys happen on Tuesday"),  # one entity
    ("The cache TTL is 5 minutes", "The cache TTL is 15 minutes"),  # one number
    ("The cache TTL is 5 minutes", "The cache TTL is 5 hours"),  # one unit
    ("User likes dark mode", "User does not like dark mode"),  # negation
    ("Prefer tabs over spaces", "Prefer spaces over tabs"),  # the sides of a relation
    ("Flights from Boston to Denver", "Flights from Denver to Boston"),
    ("Caching reduced latency", "Caching increased latency"),  # a change's direction
    ("Deploys moved from Tuesday to Thursday", "Deploys moved from Thursday to Tuesday"),
    ("Deploys moved from Tuesday to Thursday", "Deploys happen on Thursday"),  # a change is not a statement
    ("Opt in to the newsletter", "Opt out of the newsletter"),
])
def test_look_alikes_never_share_a_key(first, second):
    assert key(first) != key(second)


@pytest.mark.parametrize("text, subject, old, new", [
    ("Deploys moved from Tuesday to Thursday", {"deploy"}, {"tuesday"}, {"thursday"}),
    ("The standup moved from Monday to Friday", {"standup"}, {"monday"}, {"friday"}),  # not "Mon-Fri"
    ("We replaced MySQL with PostgreSQL for billing", {"bill"}, {"mysql"}, {"postgresql"}),
    ("Billing now runs on PostgreSQL instead of MySQL", {"bill", "run"}, {"mysql"}, {"postgresql"}),
    ("Standup moved to 10am from 9am", {"standup"}, {"09:00"}, {"10:00"}),
    ("Deploys no longer happen on Tuesday", {"deploy"}, {"tuesday"}, set()),
    ("Deploys don't happen on Tuesday anymore", {"deploy"}, {"tuesday"}, set()),
    ("We no longer use React for the admin frontend; Vue instead", set(), {"react", "admin", "frontend"}, {"vue"}),
    ("As of March we use Linear rather than Jira for tickets", set(), {"jira", "ticket"}, {"linear"}),
    ("The cache TTL is now 15 minutes", {"cach", "ttl", "15", "minute"}, set(), set()),
])
def test_change_announcements_are_read_as_subject_old_and_new(text, subject, old, new):
    change = read_fact(text).change
    assert change is not None
    assert (set(change.subject), set(change.old), set(change.new)) == (subject, old, new)


def test_plain_statements_announce_no_change():
    for text in ("Production deploys happen on Tuesday", "Use tabs instead of spaces", "User asked about pricing"):
        assert read_fact(text).change is None


def test_a_change_matches_the_statement_it_changes_and_not_a_look_alike():
    announcement = "Production deploys moved from Tuesday to Thursday"
    change = read_fact(announcement).change

    def matched(text):
        return match_change(change, read_fact(text).statement, text, announcement)

    assert matched("Production deploys happen on Tuesday") == frozenset()
    assert matched("Staging deploys happen on Tuesday") is None
    assert matched("Production deploys happen on Friday") is None
    assert matched("Production deploys do not happen on Tuesday") is None
    # Worded otherwise, it is still the statement changed: the old value and a word of the subject suffice.
    assert matched("Every Tuesday is production deploy day") is not None


DAY = 86400.0


def memory(memory_id: str, text: str, day: float, memory_type: str = "Context") -> Candidate:
    return Candidate(memory_id, memory_type, read_fact(text), day * DAY, 0, 0, content=text)


def test_a_newer_change_supersedes_an_older_one_contradicts():
    memories = [memory("old", "Production deploys happen on Tuesday", 0),
                memory("new", "Production deploys moved from Tuesday to Thursday", 5),
                memory("early", "Design reviews moved from Friday to Monday", 10),
                memory("late", "Design reviews are held on Friday", 12)]
    supersessions, contradictions = changes_over_time(memories, lambda a, b: True)
    assert [(s.newer, s.older) for s in supersessions] == [("new", "old")]
    assert supersessions[0].confidence == 0.9 and "Tuesday -> Thursday" in supersessions[0].reason
    assert [(c.a, c.b) for c in contradictions] == [("early", "late")]
    assert "before the memory it changes" in contradictions[0].reason


def test_an_unqualified_change_leaves_two_qualified_look_alikes_alone():
    memories = [memory("prod", "Production deploys happen on Tuesday", 0),
                memory("staging", "Staging deploys happen on Tuesday", 0),
                memory("change", "Deploys moved from Tuesday to Thursday", 5)]
    assert changes_over_time(memories, lambda a, b: True) == ([], [])
    alone = [m for m in memories if m.id != "staging"]
    assert [(s.newer, s.older) for s in changes_over_time(alone, lambda a, b: True)[0]] == [("change", "prod")]


def test_unrelated_vectors_stop_a_match():
    memories = [memory("old", "Production deploys happen on Tuesday", 0),
                memory("new", "Production deploys moved from Tuesday to Thursday", 5)]
    assert changes_over_time(memories, lambda a, b: False) == ([], [])


def test_merged_fields_sum_uses_and_keep_the_highest_values():
    canonical = {"access_count": 3, "importance": 0.4, "confidence": 0.9, "tags": ["a"],
                 "last_accessed": "2026-05-01T00:00:00+00:00"}
    duplicates = [{"access_count": 2, "importance": 0.8, "confidence": 0.1, "tags": ["b", "a"],
                   "last_accessed": "2026-05-03T00:00:00+00:00"}, {"tags": None}]
    merged = merged_fields(canonical, duplicates, most_uses=4)
    assert merged == {"access_count": 4, "importance": 0.8, "confidence": 0.9, "tags": ["a", "b"],
                      "last_accessed": "2026-05-03T00:00:00+00:00"}  # uses capped at most_uses
    assert math.isclose(merged_fields(canonical, [], 100)["importance"], 0.4)


def test_a_full_word_cache_reads_every_text_as_an_empty_one_would(monkeypatch):
    """Found at 1M memories: once the word cache was full, a word it had missed read as nothing the second
    time, so "Note 123 ..." and "Note 124 ..." could share a key (and a restatement could lose its source's)."""
    import consolidation.hygiene.facts as facts

    texts = ["Note 123 about billing. Detail 417 recorded for later.",
             "Note 124 about billing. Detail 417 recorded for later."]
    expected = [facts._tokens(text) for text in texts]  # with room in the cache
    monkeypatch.setattr(facts, "_CLASSIFIED", {})
    monkeypatch.setattr(facts, "CACHE_WORDS", 2)
    for _ in range(2):  # the second pass meets the words the full cache did not keep
        assert [facts._tokens(text) for text in texts] == expected
    assert len(facts._CLASSIFIED) == 2
    facts.forget_read_facts()
    assert read_fact(texts[0]).key != read_fact(texts[1]).key


def test_texts_read_are_kept_for_two_turns_of_the_bound_and_read_the_same_after(monkeypatch):
    """read_fact keeps each text read (a full pass meets them all again). When FACTS_KEPT texts were met since
    the last turn, those become the earlier turn; one met again moves back unread, one not met for a whole turn
    is let go and read again when next met."""
    import consolidation.hygiene.facts as facts

    texts = ["Deploys happen on Tuesday", "The user prefers tea over coffee", "Standup moved to 10am"]
    fresh = [facts._read_fact(text) for text in texts]
    monkeypatch.setattr(facts, "_FACTS", {})
    monkeypatch.setattr(facts, "_EARLIER", {})
    monkeypatch.setattr(facts, "FACTS_KEPT", 2)
    first = [read_fact(text) for text in texts[:2]]
    assert first == fresh[:2] and read_fact(texts[0]) is first[0]  # kept: the same object comes back
    assert read_fact(texts[2]) == fresh[2] and list(facts._FACTS) == [texts[2]]  # full: a new turn
    assert read_fact(texts[0]) is first[0]  # met again: moved back from the earlier turn, not read again
    read_fact("A fourth text")  # full again: the turn before (the second text alone by now) goes
    assert sorted(facts._EARLIER) == sorted([texts[0], texts[2]]) and list(facts._FACTS) == ["A fourth text"]
    again = read_fact(texts[1])
    assert again == fresh[1] and again is not first[1]  # read again


def test_a_fact_key_is_held_as_sorted_terms_and_two_texts_of_one_key_are_one_fact():
    """The key is kept as a sorted tuple (a set per fact took 615 MB at a million); `key` is the same terms as a
    set, and the text read is kept beside it without making two restatements different facts."""
    plain, restated = read_fact("We decided to use PostgreSQL for billing."), read_fact("use postgres for billing")
    assert plain.terms == tuple(sorted(plain.key)) and set(plain.terms) == {"postgresql", "bill"}
    assert plain == restated and plain.text != restated.text
    change = read_fact("The standup moved from 9am to 10am")
    assert change.change is not None and set(change.statement_terms) == change.statement != change.key
    assert plain.statement_terms == plain.terms and set(plain.statement_terms) == plain.statement


def test_a_fact_keeps_the_very_string_it_was_read_from():
    words = ["Deploys happen on Friday, ticket", uuid.uuid4().hex]  # a text no other test reads
    text, again = " ".join(words), " ".join(words)  # equal strings made at run time, as a store's replies are
    assert read_fact(text).text is text and read_fact(again).text is text and again is not text


# --- changes from the pair, not from a word (issue 29) ----------------------------------------------------------

@pytest.mark.parametrize("older, newer", [
    ("A person is slicing an onion.", "A person cuts ginger."),  # "cuts" here changes no value
    ("KL shares higher at mid-afternoon", "KL shares lower at mid-morning"),  # a state, not a change
    ("The user is in Lisbon", 'He said "we are moving to Porto right now" at dinner'),  # someone's words
    ("Deploys happen on Tuesday", "Deploys right now happen on Tuesday and Friday"),
])
def test_a_change_word_elsewhere_in_a_sentence_supersedes_nothing(older, newer):
    memories = [memory("old", older, 0), memory("new", newer, 5)]
    assert changes_over_time(memories, lambda a, b: True) == ([], [])


def test_a_change_that_names_no_value_replaces_a_value_not_a_word():
    """"Now" substitutes one value of the older statement: a number, a name, a day; not any word."""
    replaced = [memory("old", "The cache TTL is 5 minutes", 0), memory("new", "The cache TTL is now 15 minutes", 5)]
    assert [(s.newer, s.older) for s in changes_over_time(replaced, lambda a, b: True)[0]] == [("new", "old")]
    reworded = [memory("old", "The team reviews code carefully", 0),
                memory("new", "The team now reviews code quickly", 5)]
    assert changes_over_time(reworded, lambda a, b: True) == ([], [])


def at_once(*texts: str) -> list[Candidate]:
    return [memory(f"m{k}", text, 0) for k, text in enumerate(texts)]


@pytest.mark.parametrize("texts", [
    ("Packing list: passport", "Packing list: charger", "Packing list: sunscreen"),  # items of a list
    ("Old note 517 about topic 32 and detail 10", "Old note 518 about topic 32 and detail 10",
     "Old note 517 about topic 33 and detail 10"),  # serial numbers
    ("Onboarding step 3: request VPN access", "Onboarding step 4: request VPN access"),
])
def test_items_of_a_list_and_numbered_notes_recorded_together_do_not_contradict(texts):
    assert simultaneous_conflicts(at_once(*texts), lambda a, b: True) == []


@pytest.mark.parametrize("first, second", [
    ("The gym closes at 9 pm", "The gym closes at 10 pm"),  # exclusive values of one thing
    ("User's favourite pizza topping is mushrooms", "User's favourite pizza topping is pineapple"),
])
def test_exclusive_values_recorded_together_contradict(first, second):
    (found,) = simultaneous_conflicts(at_once(first, second), lambda a, b: True)
    assert (found.a, found.b) == ("m0", "m1") and "recorded at the same time" in found.reason
