"""Decisions that hold on natural memory: a supersession only where the evidence carries it (else proposed, or
nothing for one more item of a collection), merges never across people, restatements of one person merged, and
the review list an administrator decides."""

from __future__ import annotations

import pytest

from consolidation.hygiene.judge import CLIENT_THRESHOLDS
from consolidation.hygiene.merges import restates
from consolidation.hygiene.replacement import (CLOSEST, ENDING, FLIP, NAMED, is_state, same_named_subject,
                                               shortfall, subjects_differ)
from consolidation.hygiene.clauses import read_clause

from conftest import add_memory, axis, days_ago, vector_at

DAY = 86400.0


@pytest.mark.parametrize(("older", "newer"), [
    ("Maria got a puppy named Coco two weeks ago.", "Maria recently adopted a cute pup named Shadow from a shelter."),
    ("Caroline started transitioning three years ago.", "Caroline started playing acoustic guitar five years ago."),
    ("Caroline joined a mentorship program for LGBTQ youth.", "Caroline joined a new LGBTQ activist group."),
    ("Maria went camping with friends from church.", "Maria moved her book club to Tuesdays."),
])
def test_an_event_is_never_replaced_by_one_more(older, newer):
    # What happened stays true: a later event is one more, not even a proposal.
    assert not is_state(read_clause(older))
    assert shortfall(CLOSEST, newer, older, 0) == ""


@pytest.mark.parametrize(("older", "newer"), [
    ("User currently lives in Vienna.", "User moved to Oslo last month."),
    ("Main office is located in Phoenix, Arizona.", "Main office relocated to Denver, Colorado."),
    ("User is a morning person.", "User started working night shifts and now sleeps during the day."),
    ("User works at Stripe as a backend engineer.", "User quit the payments industry and joined an AI lab."),
    ("Alice worked at Microsoft from 2018 to 2020.", "Alice joined Apple in January 2021."),
    ("User is a registered Democrat.", "User became an independent voter."),
])
def test_a_state_is_replaced_by_a_change_that_ends_it(older, newer):
    assert shortfall(CLOSEST, newer, older, 0) is None


def test_taking_up_something_new_beside_a_state_is_at_most_proposed():
    # Starting a project beside what one organises: shared words make it worth a look, not a replacement.
    why = shortfall(CLOSEST, "Deborah started a project for community workshops.", "Deborah organizes workshops.", 0)
    assert why and "taking up something new" in why
    assert shortfall(CLOSEST, "Deborah started a running group.", "Deborah has a little amulet from her mom.", 0) == ""


def test_a_frame_the_subject_holds_several_values_of_is_accumulating():
    why = shortfall(CLOSEST, "Caroline moved to the choir on Fridays.", "Caroline sings in the choir.", 2)
    assert why and "accumulating" in why
    assert shortfall(CLOSEST, "Caroline moved to the choir on Fridays.", "Caroline sings in the choir.", 1) is None


@pytest.mark.parametrize(("rule", "older", "newer"), [
    (CLOSEST, "Tim: Thanks! We'll discuss the books. It's great.", "Tim: Wow! I love it. Don't ever quit."),
    (ENDING, "Maria: Is there anything you want?", "Maria: I quit that."),
    (NAMED, "Deborah: I'd love to learn more about how you do it.", "Deborah: I really want to eat this now."),
    (CLOSEST, "Tim: I've been reading her stuff.", "Tim: I've been playing for about four months now."),
    (ENDING, "Maria is off to bake some cakes.", "Maria dropped off baked goods at a shelter."),
    (CLOSEST, "Dave is working on restoring a car.", "Dave came back from San Francisco with new ideas."),
])
def test_questions_several_sentences_and_words_that_only_look_like_a_change(rule, older, newer):
    assert shortfall(rule, newer, older, 0) is not None  # None: applied


def test_a_denial_turned_around_needs_a_plain_denial():
    assert shortfall(FLIP, "User spent two weeks in Tokyo.", "User has never visited Japan.", 0) is None
    assert "verb's sense" in shortfall(FLIP, "John mentioned his military background.",
                                       "John recently failed the military aptitude test.", 0)


def test_statements_of_different_people_are_never_one_fact():
    assert subjects_differ("Melanie values friendship with Caroline.", "Caroline expresses appreciation for Melanie.")
    assert subjects_differ("Maria: Thanks, John. I definitely will!", "John: Got it! Thanks, Maria. I definitely will.")
    assert not subjects_differ("Caroline is considering a career in counseling.", "Caroline is looking into counseling.")
    # A capitalised word opening a sentence is no name: "Short answers ..." and "User prefers ..." are one subject.
    assert not subjects_differ("Short answers are what the user prefers.", "User prefers short answers!")
    assert same_named_subject("Jolene: See you!", "Jolene: See you soon!") == {"jolene"}


def test_a_restatement_of_one_persons_state_merges_but_two_events_told_apart_do_not():
    state = ("Jolene practices yoga and meditation to relax and stay focused.",
             "Jolene practices yoga and meditation to stay calm amidst the busyness of life.")
    assert restates(*state, 0.906, CLIENT_THRESHOLDS, 0.0, 170 * DAY)
    assert not restates(*state, 0.89, CLIENT_THRESHOLDS, 0.0, 170 * DAY)  # under the restatement line
    events = ("Caroline attended an LGBTQ+ pride parade last week and felt a sense of belonging.",
              "Caroline attended a pride parade recently and felt inspired by the community.")
    assert not restates(*events, 0.919, CLIENT_THRESHOLDS, 0.0, 43 * DAY)  # maybe two parades
    assert restates(*events, 0.919, CLIENT_THRESHOLDS, 0.0, 60.0)  # told in one conversation: one event
    # A conflicting value keeps them apart whatever the similarity.
    assert not restates("Maria volunteers at the shelter 3 days a week.", "Maria volunteers at the shelter 5 days "
                        "a week.", 0.95, CLIENT_THRESHOLDS, 0.0, DAY)


# --- through the service -----------------------------------------------------------------------------------

def _dedup(services):
    return services.engine.run(["dedup"], full=True)["result"]["dedup"]


def _organises_then_starts(services) -> tuple[str, str]:
    """A state and, later, something new taken up beside it that shares a word with it: a proposal."""
    older = add_memory(services, vector=vector_at(0.9, axis(4), axis(5)), timestamp=days_ago(30),
                       content="Deborah organizes workshops and events to practice mindfulness and create a community.")
    newer = add_memory(services, vector=vector_at(0.9, axis(4), axis(6)), timestamp=days_ago(3),
                       content="Deborah started a project for a community cleanup and is raising funds for it.")
    return older, newer


def test_an_accumulation_is_left_as_it_is_and_a_shortfall_is_proposed_for_review(client, auth, services):
    puppy = add_memory(services, vector=vector_at(0.8, axis(0), axis(1)), timestamp=days_ago(20),
                       content="Maria got a puppy named Coco two weeks ago.")
    add_memory(services, vector=vector_at(0.8, axis(0), axis(2)), timestamp=days_ago(2),
               content="Maria recently adopted a cute pup named Shadow from a shelter.")
    organises, started = _organises_then_starts(services)
    report = _dedup(services)
    assert report["supersessions"] == [] and report["proposals_new"] == 1
    assert not services.stores.graph.get_memory(puppy).get("superseded_by")
    listed = client.get("/hygiene/proposals", headers=auth).get_json()
    (proposal,) = listed["items"]
    assert (proposal["older_id"], proposal["newer_id"]) == (organises, started)
    assert proposal["older_content"].startswith("Deborah organizes") and "proposed, not applied" in proposal["reason"]
    # A second run changes nothing: the pair is proposed once.
    assert _dedup(services)["proposals_new"] == 0
    assert client.get("/hygiene/proposals", headers=auth).get_json()["total"] == 1


def test_an_accepted_proposal_supersedes_and_a_rejected_one_stays_apart(client, auth, services):
    older, newer = _organises_then_starts(services)
    _dedup(services)
    (proposal,) = client.get("/hygiene/proposals", headers=auth).get_json()["items"]
    accepted = client.post(f"/hygiene/proposals/{proposal['id']}/accept", headers=auth)
    assert accepted.status_code == 200 and accepted.get_json()["state"] == "accepted"
    assert services.stores.graph.get_memory(older)["superseded_by"] == newer
    assert services.stores.vectors.payloads([older])[older]["superseded"] is True
    again = client.post(f"/hygiene/proposals/{proposal['id']}/reject", headers=auth)
    assert again.status_code == 409  # decided already
    assert client.get("/hygiene/proposals", headers=auth).get_json()["total"] == 0
    assert client.get("/hygiene/proposals?state=accepted", headers=auth).get_json()["total"] == 1
    entries = services.memories.audit.recent()
    assert entries[0]["action"] == "accept_proposal" and entries[0]["details"]["requested_by"] == "admin"


def test_a_rejected_proposal_is_never_proposed_or_applied_again(client, auth, services):
    older, _ = _organises_then_starts(services)
    _dedup(services)
    (proposal,) = client.get("/hygiene/proposals", headers=auth).get_json()["items"]
    assert client.post(f"/hygiene/proposals/{proposal['id']}/reject", headers=auth).get_json()["state"] == "rejected"
    assert _dedup(services)["proposals_new"] == 0
    assert not services.stores.graph.get_memory(older).get("superseded_by")
    assert client.post("/hygiene/proposals/00000000-0000-4000-8000-000000000000/accept",
                       headers=auth).status_code == 404


def test_two_people_saying_alike_are_never_merged_and_one_person_restating_is(services):
    melanie = add_memory(services, vector=vector_at(0.97, axis(0), axis(1)), timestamp=days_ago(3),
                         content="Melanie values friendship with Caroline and expresses appreciation for it.")
    caroline = add_memory(services, vector=vector_at(0.97, axis(0), axis(2)), timestamp=days_ago(3),
                          content="Caroline expresses appreciation for her friendship with Melanie.")
    first = add_memory(services, vector=vector_at(0.97, axis(5), axis(6)), timestamp=days_ago(200),
                       content="Jolene practices yoga and meditation to relax and stay focused.")
    second = add_memory(services, vector=vector_at(0.97, axis(5), axis(7)), timestamp=days_ago(20),
                        content="Jolene practices yoga and meditation to stay calm amidst the busyness of life.")
    report = _dedup(services)
    graph = services.stores.graph
    assert not graph.get_memory(melanie).get("merged_into") and not graph.get_memory(caroline).get("merged_into")
    assert {graph.get_memory(first).get("merged_into"), graph.get_memory(second).get("merged_into")} - {None} \
        <= {first, second}
    (merge,) = report["merges"]
    assert "restated by jolene" in merge["reason"]

