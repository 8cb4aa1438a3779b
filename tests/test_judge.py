"""The dedup judge's parts, each alone (pure): what reads a text, what scores a pair, what decides, and the
calibration that picks thresholds from labelled pairs."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from consolidation.cli import main
from consolidation.hygiene.calibration import LabelledPair, PairSet, fit
from consolidation.hygiene.evidence import weigh
from consolidation.hygiene.judge import CLIENT_THRESHOLDS, MIN_SHARED_TERMS, Thresholds, judge
from consolidation.hygiene.reading import read

THRESHOLDS = Thresholds(same_fact=0.8, per_added_term=0.05, per_added_share=0.1, swapped=0.95)


def evidence(first: str, second: str):
    return weigh(read(first), read(second))


# --- reading ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, terms", [
    ("Tax return for 2025 went in on March 12th.", ("tax", "return", "2025", "march", "12")),  # an ordinal
    ("Every 6h a backup runs", ("6", "hour", "backup", "run")),  # a unit written onto its number
    ("Max upload is 25MB", ("max", "upload", "25", "mb")),
    ("Priority-1 tickets get a response within 1 hour", ("prioriti", "1", "ticket", "respons", "1#2", "hour")),
    ("He wore No. 11 for the club", ("wore", "number", "11", "club")),  # "No." is not a negation
])
def test_a_text_is_read_as_terms_in_order(text, terms):
    assert read(text).terms == terms


def test_what_a_reading_knows_beyond_its_terms():
    assert read("Old note 517 about topic 32").labels == {"517", "32"}  # numbers that name, not measure
    assert read("The cache TTL is 5 minutes").measures == {"minute"}
    assert read("Deploys are done every day").measures == frozenset()  # a unit only after a number
    assert "lisbon" in read("User is flying to Lisbon on May 14.").names
    # In a headline every word is capitalised, so capitals mark no names there.
    assert "tyrant" not in read("Clinton: US, Europe Must Work To Defeat Tyrants").names
    assert read("The recipe does not use béchamel").denied == {"béchamel"}
    assert read("The user does not like dark mode").negated and not read("The user likes dark mode").negated


# --- evidence ---------------------------------------------------------------------------------------------------

def test_what_two_texts_share_and_what_each_adds():
    found = evidence("A light-colored dog runs through the grass", "A dog runs through the grass")
    assert set(found.shared) == {"dog", "run", "through", "grass"}
    assert set(found.only_first) == {"light", "color"} and found.only_second == ()
    assert found.conflicts == () and found.swapped == 0
    assert math.isclose(found.added_share, 2 / 6)


@pytest.mark.parametrize("first, second", [
    ("A woman is putting on sun glasses.", "A woman puts on sunglasses."),  # a compound
    ("Two blasts hit the Syria capital", "Two blasts hit the Syrian capital"),  # one stem, another ending
    ("PRs need 2 approvals", "Each PR needs 2 approvals"),  # a plural of a name
    ("The senate divided three-to-one", "The senate divided 3-1"),  # a number written out
])
def test_spellings_of_one_word_are_matched(first, second):
    found = evidence(first, second)
    assert found.conflicts == () and found.swapped == 0, found


@pytest.mark.parametrize("first, second, kind", [
    ("The cache TTL is 5 minutes", "The cache TTL is 15 minutes", "number"),
    ("The cache TTL is 5 minutes", "The cache TTL is 5 hours", "unit"),
    ("Priority-1 tickets get a response within 1 hour", "Priority-2 tickets get a response within 1 hour", "number"),
    ("User is flying to Lisbon on May 14.", "User is flying to Porto on May 14.", "name"),
    ("Staging deploys happen on Tuesday", "Production deploys happen on Tuesday", "environment"),
    ("Deploys happen on Tuesday", "Deploys happen on Friday", "day"),
    ("The user schedules deep work before lunch", "The user schedules deep work after lunch", "order"),
    ("User likes dark mode", "User does not like dark mode", "negation"),
    ("The recipe uses ricotta, not béchamel", "The recipe uses béchamel, not ricotta", "relation side"),
    ("The recipe uses ricotta and does not use béchamel", "The recipe uses béchamel and does not use ricotta",
     "negation"),
    ("Prefer tabs over spaces", "Prefer spaces over tabs", "relation side"),
    ("Caching the pricing table cut billing latency in half", "Caching the pricing table doubled billing latency",
     "direction of change"),
])
def test_values_one_text_swaps_for_the_others_conflict(first, second, kind):
    assert kind in [c.kind for c in evidence(first, second).conflicts]


@pytest.mark.parametrize("first, second", [
    ("User dislikes dark mode", "The user does not like dark mode"),  # the same denial, worded otherwise
    ("No deploys on Friday", "Deploys are not allowed on Friday"),
    ("Staff accounts need MFA", "Every employee account needs MFA"),  # synonyms are no conflict
    ("Thursday is the production deploy day", "Production deploys happen on Thursday each week"),
])
def test_rewording_is_no_conflict(first, second):
    assert evidence(first, second).conflicts == ()


# --- the decision -----------------------------------------------------------------------------------------------

def test_a_conflict_keeps_two_texts_apart_whatever_their_similarity():
    verdict = judge("The cache TTL is 5 minutes", "The cache TTL is 15 minutes", 1.0, THRESHOLDS)
    assert not verdict.same and verdict.reason == "kept apart: conflicting number (5 / 15)"


@pytest.mark.parametrize("first, second", [
    ("You can use it, too.", "You can do it, too."),  # nothing in common but function words
    ("It works.", "It failed."),
])
def test_too_little_in_common_is_never_merged(first, second):
    assert len(evidence(first, second).shared) < MIN_SHARED_TERMS
    verdict = judge(first, second, 1.0, THRESHOLDS)
    assert not verdict.same and "too little in common" in verdict.reason


def test_the_similarity_needed_rises_with_what_one_text_adds():
    first, second = "A light-colored dog runs through the grass", "A dog runs through the grass"
    needed = 0.8 + 0.05 * 2 + 0.1 * (2 / 6)  # two terms added, a third of the fuller text's terms
    assert math.isclose(judge(first, second, 0.95, THRESHOLDS).needed, needed)
    assert judge(first, second, needed + 0.001, THRESHOLDS).same
    assert not judge(first, second, needed - 0.001, THRESHOLDS).same


def test_a_term_swapped_one_for_one_needs_the_swapped_similarity():
    first, second = "A man is playing a guitar", "A man is playing a flute"
    assert evidence(first, second).swapped == 1
    assert not judge(first, second, 0.94, THRESHOLDS).same  # what the words alone allow is not enough
    assert judge(first, second, 0.96, THRESHOLDS).same  # the vectors vouch for a synonym


def test_a_change_announcement_is_not_merged_with_a_statement():
    verdict = judge("The mobile app beta launches on May 5", "The beta launch was pushed from May 5 to May 19",
                    0.99, THRESHOLDS)
    assert not verdict.same and "announces a change" in verdict.reason
    # A verb alone announces nothing definite: "cuts" here is no change of a value.
    assert judge("A person cuts the ginger root", "A person cuts the ginger", 0.99, THRESHOLDS).same


def test_the_reasons_use_the_words_as_the_memories_write_them():
    verdict = judge("Decided to use PostgreSQL for the billing database", "We chose Postgres for the billing DB",
                    0.93, THRESHOLDS)
    assert verdict.same
    assert "PostgreSQL" in verdict.reason and "billing" in verdict.reason and "database" in verdict.reason
    assert "0.930 >= 0.800" in verdict.reason


def test_the_grey_zone_is_the_margin_around_the_line():
    first, second = "Use Redis for session caching", "we use redis for session caching!"
    assert judge(first, second, 0.81, THRESHOLDS).grey and judge(first, second, 0.79, THRESHOLDS).grey
    assert not judge(first, second, 0.9, THRESHOLDS).grey


# --- calibration ------------------------------------------------------------------------------------------------

def labelled(similarity: float, same: bool, first="Use Redis for session caching",
             second="we use redis for session caching") -> LabelledPair:
    return LabelledPair(first, second, similarity, same)


def test_the_cosine_rule_is_scored_at_an_even_mix_and_at_its_best_threshold():
    # 2 same pairs, 4 different: each different pair weighs 2/4.
    pairs = PairSet("toy", [labelled(0.95, True), labelled(0.9, False), labelled(0.85, True), labelled(0.8, False),
                            labelled(0.7, False), labelled(0.6, False)])
    score = pairs.cosine(0.85)
    assert (score.merged_same, score.merged_different) == (2, 1)
    assert math.isclose(score.precision, 2 / (2 + 1 * 0.5)) and score.recall == 1.0
    threshold, best = pairs.cosine_at(0.99)
    assert threshold == 0.95 and best.recall == 0.5  # only the top pair keeps precision 1


def test_fit_finds_the_most_recall_at_the_wanted_precision():
    # Equal texts: the similarity alone decides; same pairs from 0.84 up, different ones below 0.83.
    pairs = PairSet("toy", [labelled(s, True) for s in (0.84, 0.9, 0.97)] +
                    [labelled(s, False) for s in (0.76, 0.8, 0.82)])
    thresholds, scores = fit([pairs], {"toy": 1.0}, grid=[(f, 0.0, 0.0, 0.0) for f in (0.75, 0.81, 0.83, 0.85)])
    assert thresholds.same_fact == 0.83 and scores["toy"].recall == 1.0 and scores["toy"].precision == 1.0
    with pytest.raises(ValueError):
        fit([pairs], {"toy": 1.0}, grid=[(0.75, 0.0, 0.0, 0.0)])


def calibration_line(similarity: float, same: bool, text="Use Redis for session caching", label=None) -> str:
    """A labelled pair whose two 2-d vectors are `similarity` apart."""
    angle = math.acos(similarity)
    row = {"a": text, "b": text.lower(), "a_embedding": [1.0, 0.0], "b_embedding": [math.cos(angle), math.sin(angle)]}
    row.update({"label": label} if label else {"same": same})
    return json.dumps(row)


def test_calibrate_prints_the_settings_that_reach_the_precision(tmp_path):
    """`consolidation calibrate`: same pairs at 0.86 and above, different ones at 0.84 and below, in another
    model's space: the same-fact similarity it finds separates them (0.85 or 0.86), and the cosine rule too."""
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join([calibration_line(s, True) for s in (0.86, 0.9, 0.95)] +
                              [calibration_line(s, False) for s in (0.6, 0.8, 0.84)] +
                              [calibration_line(0.97, True, label="pos")]) + "\n")
    result = CliRunner().invoke(main, ["calibrate", str(path), "--precision", "1.0"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    same_fact = found["settings"]["CONSOLIDATION_DEDUP_SAME_FACT_SIMILARITY"]
    assert 0.84 < same_fact <= 0.86 and found["settings"]["CONSOLIDATION_DEDUP_SIMILARITY"] <= same_fact
    assert found["sets"]["pairs"]["judge"] == {"precision": 1.0, "recall": 1.0}
    assert found["sets"]["pairs"]["cosine_rule"]["recall"] == 1.0


def test_calibrate_names_the_line_that_is_wrong(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(calibration_line(0.9, True) + "\n" + json.dumps({"a": "x", "b": "y", "same": True}) + "\n")
    result = CliRunner().invoke(main, ["calibrate", str(path)])
    assert result.exit_code == 1 and "line 2" in result.output and "a_embedding" in result.output


@pytest.mark.parametrize("first, second, same_time", [
    ("The user goes to bed around 11 pm.", "The user is asleep by eleven at night.", True),
    ("The weekly sync is Mon 9:15.", "The weekly sync is on Monday at 9.15.", True),
    ("The minimum password length is 12 characters", "The minimum password length is 24 characters", False),
    ("The gym closes at 9 pm", "The gym closes at 10 pm", False),
])
def test_a_clock_time_and_a_bare_hour_are_one_time(first, second, same_time):
    assert (evidence(first, second).conflicts == ()) is same_time


# The pairs the issue found judged wrongly, with their all-MiniLM-L6-v2 cosines, on the shipped client thresholds.
@pytest.mark.parametrize("first, second, cosine, same", [
    ("A light-colored dog runs through the grass.", "A dog runs through the grass.", 0.935, True),  # a word added
    ("The court divided three-to-one on the ruling.", "The court divided 3-1 on the ruling.", 0.952, True),
    ("You can use it, too.", "You can do it, too.", 0.685, False),  # nothing in common but function words
    ("A skunk is looking here and there.", "A skunk looks at the camera.", 0.806, False),  # one word is no fact
    ("KL shares lower at mid-morning", "KL shares higher at mid-afternoon", 0.905, False),
])
def test_real_pairs_the_old_rules_got_wrong(first, second, cosine, same):
    assert judge(first, second, cosine, CLIENT_THRESHOLDS).same is same


def test_two_memories_the_built_in_embedder_embedded_are_judged_on_its_thresholds():
    from consolidation.hygiene.candidate import Candidate
    from consolidation.hygiene.facts import read_fact
    from consolidation.hygiene.merges import PairJudge

    built_in = Thresholds(0.9, 0.0, 0.0, 0.0)
    judge_ = PairJudge(THRESHOLDS, built_in)

    def memory(text, embedded):
        return Candidate(text, "Decision", read_fact(text), 0.0, 0, 0, content=text, built_in=embedded)

    a, b = memory("Use Redis for session caching", True), memory("we use redis for session caching", True)
    assert judge_.thresholds(a, b) is built_in and not judge_.verdict(a, b, 0.85).same
    client = memory("we use redis for session caching", False)  # one vector from another model: not its space
    assert judge_.thresholds(a, client) is THRESHOLDS and judge_.verdict(a, client, 0.85).same


NARROWED = ["Use Redis for session caching", "we use redis for session caching again!", "Redis caches sessions",
            "Old note 517 about topic 32", "Old note 518 about topic 32", "old note 517 about topic 32!",
            "The cache TTL is 5 minutes", "The cache TTL is five minutes", "The cache TTL is 15 minutes",
            "Deploys moved from Tuesday to Thursday", "Deploys happen on Tuesday", "Deploys do not happen on Tuesday",
            "Priority-1 tickets get a response within 1 hour", "Priority 1 tickets get a response in 1 hour",
            "A light-colored dog runs through the grass", "A dog runs through the grass",
            "The user prefers tea over coffee", "Afternoon drink preference: tea, not coffee"]


def test_what_the_keys_rule_out_the_judge_never_merges():
    """merges._may_merge narrows millions of pairs in numpy: only a necessary condition, so every pair it rules
    out is one the judge keeps apart at that similarity."""
    import itertools

    import numpy as np

    from consolidation.hygiene.candidate import Candidate
    from consolidation.hygiene.facts import read_fact
    from consolidation.hygiene.merges import KeyColumns, PairJudge, _may_merge

    judge_ = PairJudge(THRESHOLDS, THRESHOLDS)
    candidates = [Candidate(f"m{k}", "Decision", read_fact(t), 0.0, 0, 0, content=t) for k, t in enumerate(NARROWED)]
    pairs = [(i, j, s) for i, j in itertools.combinations(range(len(NARROWED)), 2) for s in (0.8, 0.9, 0.97, 1.0)]
    rows, cols, similarities = (np.array(column) for column in zip(*pairs))
    kept = _may_merge(KeyColumns.of(candidates), rows, cols, similarities.astype(np.float32), judge_)
    ruled_out = [(i, j, s) for (i, j, s), keep in zip(pairs, kept) if not keep]
    assert len(ruled_out) >= len(pairs) // 8  # it does narrow
    for i, j, s in ruled_out:
        assert not judge_.verdict(candidates[i], candidates[j], s).same, (NARROWED[i], NARROWED[j], s)


def test_the_sift_a_slice_of_pairs_at_a_time_finds_what_it_finds_over_all_of_them_at_once(monkeypatch):
    """merges._sifted bounds the sift's temporaries by slicing the pairs: slices that split the pairs anywhere
    give the same kinds and the same pairs worth judging as one pass over all of them."""
    import itertools

    import numpy as np

    import consolidation.hygiene.merges as merges
    from consolidation.hygiene.candidate import Candidate
    from consolidation.hygiene.facts import read_fact

    judge_ = merges.PairJudge(THRESHOLDS, THRESHOLDS)
    candidates = [Candidate(f"m{k}", ("Decision", "Fact")[k % 2], read_fact(t), 0.0, 0, 0, content=t)
                  for k, t in enumerate(NARROWED)]
    pairs = [(i, j, s) for i, j in itertools.combinations(range(len(NARROWED)), 2) for s in (0.8, 0.9, 0.97, 1.0)]
    rows, cols, similarities = (np.array(column) for column in zip(*pairs))
    similarities = similarities.astype(np.float32)
    columns = merges.KeyColumns.of(candidates)
    whole_kind = columns.kind[rows] == columns.kind[cols]
    whole = merges._may_merge(columns, rows, cols, similarities, judge_)
    assert whole_kind.any() and not whole_kind.all() and whole.any()  # both answers vary, so a slip would show
    for size in (1, 7, len(pairs) - 1, len(pairs) + 1):
        monkeypatch.setattr(merges, "SIFT_SLICE", size)
        same_kind, may_merge = merges._sifted(columns, rows, cols, similarities, judge_)
        assert same_kind.tolist() == whole_kind.tolist() and may_merge.tolist() == whole.tolist()


def test_key_columns_made_a_slice_of_candidates_at_a_time_are_what_each_candidate_shows(monkeypatch):
    """KeyColumns.of makes its rows a slice of candidates at a time; slices of any size give, for each candidate,
    one code per type and scope (the same code across slices) and what its own fact shows."""
    import numpy as np

    import consolidation.hygiene.merges as merges
    from consolidation.hygiene.candidate import Candidate
    from consolidation.hygiene.facts import NOT, read_fact
    from consolidation.slices import slices

    candidates = [Candidate(f"m{k}", ("Decision", "Fact")[k % 2], read_fact(t), 0.0, 0, 0, content=t,
                            scope=("", "u1")[k % 3 == 0]) for k, t in enumerate(NARROWED)]
    for size in (1, 4, len(candidates)):
        monkeypatch.setattr(merges, "slices", lambda values, size=size: slices(values, size))
        columns = merges.KeyColumns.of(candidates)
        kinds = [(c.type, c.scope) for c in candidates]
        assert all((columns.kind[i] == columns.kind[j]) == (kinds[i] == kinds[j])
                   for i in range(len(candidates)) for j in range(len(candidates)))
        assert columns.size.tolist() == [len(c.fact.key) for c in candidates]
        assert columns.negated.tolist() == [NOT in c.fact.key for c in candidates]
        assert columns.plain.tolist() == [c.fact.change is None for c in candidates]
        assert columns.number_count.dtype == np.int64 and columns.number_count.tolist() == [
            sum(term[:1].isdigit() for term in c.fact.key) for c in candidates]
    assert merges.KeyColumns.of([]).kind.size == 0
