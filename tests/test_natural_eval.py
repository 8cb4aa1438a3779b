"""The natural-memory eval's own arithmetic (bench/natural_eval.py, `make eval`): a LoCoMo-format file read into
memories and questions, and each measure worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import bench_module

natural_eval = bench_module("natural_eval")

CONVERSATION = {
    "sample_id": "conv-x", "qa": [
        {"question": "Where does Ann live?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4},
        {"question": "Unanswerable?", "answer": "", "evidence": ["D1:2"], "category": 5},
        {"question": "What did Bo adopt, and when?", "answer": "a cat", "evidence": ["D2:1", "D1:2"], "category": 1}],
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023", "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I live in Oslo."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a fjord"}],
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "I adopted a cat."}],
        "session_1_observation": {"Ann": [["Ann lives in Oslo.", "D1:1"]], "Bo": [["Bo likes fjords.", "D1:2"]]},
        "session_2_observation": {"Bo": [["Bo adopted a cat.", "D2:1; D1:2"]]}}}


def test_a_locomo_file_becomes_memories_of_both_variants_and_questions(tmp_path):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([CONVERSATION]))
    (conversation,) = natural_eval.conversations(path)
    facts = conversation.memories("facts")
    assert [m.content for m in facts] == ["Ann lives in Oslo.", "Bo likes fjords.", "Bo adopted a cat."]
    assert facts[2].evidence == {"D2:1", "D1:2"} and facts[2].timestamp.day == 20
    turns = conversation.memories("turns")
    assert turns[1].content == "Bo: Nice! [shares a photo: a fjord]" and turns[1].evidence == {"D1:2"}
    questions = conversation.questions()
    assert [q.category for q in questions] == [4, 1]  # category 5 is left out


def test_each_measure_by_hand():
    gold = {"a", "b", "c"}
    ranked = ["x", "a", "y", "b"] + [f"z{i}" for i in range(6)]
    values = natural_eval.measure(ranked, gold, {}, {})
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert values["hit@5"] == 1.0 and values["hit@10"] == 1.0 and values["mrr"] == 0.5
    assert values["recall@10"] == pytest.approx(2 / 3)
    assert values["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    # A canonical stands for what was merged into it: recalled, it finds both.
    merged = natural_eval.measure(["c"], gold, {"c": {"c", "a"}}, {})
    assert merged["recall@10"] == pytest.approx(2 / 3) and merged["mrr"] == 1.0


def test_near_duplicate_slots_count_results_close_to_a_higher_one():
    one = np.array([1.0, 0.0, 0.0])
    close = np.array([0.95, np.sqrt(1 - 0.95 ** 2), 0.0])
    far = np.array([0.0, 0.0, 1.0])
    vectors = {"a": one, "b": close, "c": far, "d": close}
    assert natural_eval.near_duplicates(["a", "b", "c", "d"], vectors) == 2  # b and d both near a


def test_evidence_hidden_is_superseded_archived_or_merged_into_another_fact():
    state = {"s": {"superseded_by": "n", "merged_into": None, "archived": False, "content": "old"},
             "n": {"superseded_by": None, "merged_into": None, "archived": False, "content": "new"},
             "m": {"superseded_by": None, "merged_into": "n", "archived": True, "content": "dup"},
             "r": {"superseded_by": None, "merged_into": "n", "archived": True, "content": "same"},
             "k": {"superseded_by": None, "merged_into": None, "archived": False, "content": "kept"}}
    evidence = {"s": {"D1"}, "n": {"D2"}, "m": {"D3"}, "r": {"D2"}, "k": {"D4"}}
    hidden = natural_eval.hidden_evidence({"s", "m", "r", "k"}, state, evidence)
    assert [(h["id"], h["how"]) for h in hidden] == [("m", "merged"), ("s", "superseded")]
