"""The dedup model judge: grey pairs put to a stand-in chat model in numbered batches, verdicts cached in the graph."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from consolidation.hygiene.model_judge import GreyPair, ModelJudge, model_judge_from, pair_key
from consolidation.service import build_services
from consolidation.settings import SettingsError, load_settings
from consolidation.stores.graph import GraphStore
from consolidation.stores.verdicts import VerdictCache
from consolidation.timeutil import to_iso
from tests.conftest import TOKEN, add_memory, make_settings

KEY = "sk-judge-secret-4711"
MODEL = "judge-mini"
PAIR_LINE = re.compile(r"^Pair (\d+)\n(?:A|Older): (.*)\n(?:B|Newer): (.*)$", re.MULTILINE)


def same_ignoring_case(first: str, second: str) -> bool:
    """The stand-in model's idea of one fact, and so the verdict each test expects."""
    return first.lower() == second.lower()


def answer(pairs: dict[int, tuple[str, str]]) -> str:
    return json.dumps({"answers": [{"pair": n, "same_fact": same_ignoring_case(*texts)}
                                   for n, texts in sorted(pairs.items())]})


class StandIn:
    """An OpenAI-compatible /chat/completions endpoint on loopback: it reads the numbered pairs of each prompt
    and answers with `reply(pairs)` (a message text), or with `status`, after `delay` seconds."""

    def __init__(self):
        self.requests: list[dict] = []
        self.reply = answer
        self.status = 200
        self.delay = 0.0
        self.on_request = lambda: None
        self.stopping = threading.Event()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = "\n".join(message["content"] for message in body["messages"])
                pairs = {int(n): (json.loads(a), json.loads(b)) for n, a, b in PAIR_LINE.findall(prompt)}
                stand_in.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "body": body, "pairs": pairs})
                stand_in.on_request()
                if stand_in.stopping.wait(stand_in.delay):
                    return
                if stand_in.status != 200:
                    payload = b'{"error": "overloaded"}'
                else:
                    content = stand_in.reply(pairs)
                    payload = json.dumps(content if isinstance(content, dict) else
                                         {"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                try:
                    self.send_response(stand_in.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the judge gave up waiting and closed the connection

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def asked_texts(self) -> list[tuple[str, str]]:
        return [texts for request in self.requests for _, texts in sorted(request["pairs"].items())]


@pytest.fixture
def model():
    stand_in = StandIn()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    """One embedded store for the module (starting one per test would take most of its time)."""
    built = build_services(make_settings(tmp_path_factory.mktemp("judge") / "data"))
    yield built
    built.close()


@pytest.fixture
def graph(embedded) -> GraphStore:
    """A graph of its own for each test, with the schema the service makes."""
    store = GraphStore(embedded.stores.graph.falkor.for_graph(f"judge_{uuid.uuid4().hex}"))
    store.ensure_schema()
    return store


@pytest.fixture
def cache(graph):
    return VerdictCache(graph.falkor)


def judge_for(url, cache, clock, **overrides) -> ModelJudge:
    options = {"timeout": 5.0, "batch": 3, "budget_pairs": 200, "budget_seconds": 60.0, "cache": cache,
               "now": clock}
    options.update(overrides)
    return ModelJudge(url, options.pop("model", MODEL), options.pop("api_key", KEY), **options)


def grey_pairs(count: int, tag: str = "") -> list[GreyPair]:
    """Even-numbered pairs differ only in case (same fact to the stand-in), odd ones by a number."""
    pairs = []
    for i in range(count):
        first = f"The {tag}build server {i} runs on port {8000 + i}"
        second = first.upper() if i % 2 == 0 else f"The {tag}build server {i} runs on port {9000 + i}"
        pairs.append(GreyPair(first, second, 0.9, rules_verdict=False))
    return pairs


def expected(pairs, model_name=MODEL) -> dict[str, bool]:
    return {pair_key(model_name, p.first, p.second): same_ignoring_case(p.first, p.second) for p in pairs}


def test_the_pair_key_is_a_sha256_of_model_and_texts_in_either_order():
    key = pair_key(MODEL, "alpha", "beta")
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert pair_key(MODEL, "beta", "alpha") == key
    assert pair_key("other-model", "alpha", "beta") != key
    assert pair_key(MODEL, "alpha", "beta ") != key
    # The parts cannot run into each other: moving a character from one text to the other changes the key.
    assert pair_key(MODEL, "ab", "c") != pair_key(MODEL, "a", "bc")
    assert pair_key(MODEL, "x", "y") == pair_key(MODEL, "x", "y")  # stable within and across processes (sha256)


def test_pairs_go_in_numbered_batches_with_the_key_and_come_back_to_their_pairs(model, cache, clock):
    pairs = grey_pairs(7)
    # The same pair again, texts swapped: asked about once.
    pairs.append(GreyPair(pairs[0].second, pairs[0].first, 0.8, rules_verdict=True))
    outcome = judge_for(model.url, cache, clock, batch=3).settle(pairs, dry_run=False)

    assert len(model.requests) == 3  # ceil(7 / 3)
    assert sorted(len(request["pairs"]) for request in model.requests) == [1, 3, 3]
    for request in model.requests:
        assert request["path"] == "/v1/chat/completions" and request["auth"] == f"Bearer {KEY}"
        body = request["body"]
        assert body["model"] == MODEL and body["temperature"] == 0
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert sorted(request["pairs"]) == list(range(1, len(request["pairs"]) + 1))
    asked = model.asked_texts()
    assert len(asked) == 7 and {frozenset(t) for t in asked} == {frozenset((p.first, p.second)) for p in pairs}
    assert outcome.verdicts == expected(pairs[:7])
    assert sum(outcome.verdicts.values()) == 4  # pairs 0, 2, 4, 6 differ only in case
    assert (outcome.asked, outcome.cached, outcome.failed, outcome.over_budget) == (7, 0, 0, 0)
    assert outcome.error is None and outcome.would_ask == []


def test_answers_are_mapped_by_their_number_not_their_place(model, cache, clock):
    def reversed_answer(pairs):
        entries = json.loads(answer(pairs))["answers"]
        return json.dumps({"answers": entries[::-1]})

    model.reply = reversed_answer
    pairs = grey_pairs(4)
    outcome = judge_for(model.url, cache, clock, batch=4).settle(pairs, dry_run=False)
    assert outcome.verdicts == expected(pairs) and outcome.failed == 0


def test_batches_are_the_same_whatever_order_the_pairs_come_in(model, graph, cache, clock):
    pairs = grey_pairs(6)
    judge_for(model.url, cache, clock).settle(pairs, dry_run=False)
    first_run = [request["body"] for request in model.requests]
    model.requests.clear()
    graph.falkor.execute("MATCH (v:JudgeVerdict) DELETE v")  # forget the verdicts: everything is asked again
    shuffled = [GreyPair(p.second, p.first, p.similarity, p.rules_verdict) for p in pairs[3:] + pairs[:3]]
    judge_for(model.url, cache, clock).settle(shuffled, dry_run=False)
    assert len(first_run) == 2 and [request["body"] for request in model.requests] == first_run


def test_verdicts_are_kept_in_the_graph_and_not_asked_for_again(model, graph, cache, clock):
    pairs = grey_pairs(5)
    judge = judge_for(model.url, cache, clock, batch=2)
    first = judge.settle(pairs, dry_run=False)
    assert len(model.requests) == 3 and first.asked == 5

    again = judge.settle(pairs, dry_run=False)
    assert len(model.requests) == 3  # nothing new was sent
    assert again.verdicts == first.verdicts == expected(pairs)
    assert (again.asked, again.cached) == (0, 5)

    # A new judge over the same graph, the texts of every pair swapped: still all from the cache.
    fresh = judge_for(model.url, VerdictCache(graph.falkor), clock, batch=2)
    swapped = [GreyPair(p.second, p.first, p.similarity, p.rules_verdict) for p in pairs]
    assert fresh.settle(swapped, dry_run=False).verdicts == expected(pairs) and len(model.requests) == 3

    # What is stored: one node per pair, with the model and the time it was asked.
    rows = graph.falkor.records(
        "MATCH (v:JudgeVerdict) RETURN v.key, v.model, v.same_fact, v.asked_at", read_only=True)
    assert {row[0]: row[2] for row in rows} == expected(pairs)
    assert {(row[1], row[3]) for row in rows} == {(MODEL, to_iso(clock()))}

    # Another model's verdicts are its own.
    other = judge_for(model.url, cache, clock, batch=2, model="judge-large").settle(pairs, dry_run=False)
    assert other.asked == 5 and other.cached == 0 and len(model.requests) == 6


def test_verdict_nodes_are_indexed_and_never_counted_as_memories(model, services, clock):
    add_memory(services, content="The build server runs on port 8000")
    cache = VerdictCache(services.stores.graph.falkor)
    judge_for(model.url, cache, clock).settle(grey_pairs(4), dry_run=False)
    assert len(cache.get(list(expected(grey_pairs(4))))) == 4
    assert services.stores.graph.count_memories() == 1
    indexed = {(row[0], field) for row in services.stores.graph.falkor.records("CALL db.indexes()", read_only=True)
               for field in row[1]}
    assert ("JudgeVerdict", "key") in indexed


def test_a_dry_run_sends_nothing_and_lists_what_it_would_ask(model, cache, clock):
    pairs = grey_pairs(5)
    judge = judge_for(model.url, cache, clock)
    judge.settle(pairs[:2], dry_run=False)
    model.requests.clear()

    outcome = judge.settle(pairs, dry_run=True)
    assert model.requests == []
    assert outcome.verdicts == expected(pairs[:2]) and outcome.cached == 2
    assert set(outcome.would_ask) == set(pairs[2:]) and len(outcome.would_ask) == 3
    assert (outcome.asked, outcome.failed, outcome.over_budget) == (0, 0, 0)
    assert cache.get([pair_key(MODEL, p.first, p.second) for p in pairs[2:]]) == {}


def test_the_pair_budget_stops_the_asking(model, cache, clock):
    pairs = grey_pairs(10)
    keys = sorted(expected(pairs))
    judge = judge_for(model.url, cache, clock, batch=3, budget_pairs=4)

    preview = judge.settle(pairs, dry_run=True)
    assert len(preview.would_ask) == 4 and preview.over_budget == 6 and model.requests == []

    outcome = judge.settle(pairs, dry_run=False)
    assert (outcome.asked, outcome.over_budget, outcome.failed) == (4, 6, 0)
    assert [len(request["pairs"]) for request in model.requests] == [3, 1]
    assert set(outcome.verdicts) == set(keys[:4])  # the first four by key: the same ones on every rerun
    assert {pair_key(MODEL, p.first, p.second) for p in preview.would_ask} == set(keys[:4])

    following = judge.settle(pairs, dry_run=False)
    assert (following.cached, following.asked, following.over_budget) == (4, 4, 2)
    assert set(following.verdicts) == set(keys[:8])

    nothing = judge_for(model.url, cache, clock, budget_pairs=0).settle(grey_pairs(3, "other "), dry_run=False)
    assert (nothing.asked, nothing.over_budget) == (0, 3) and len(model.requests) == 4


def test_the_seconds_budget_stops_the_asking(model, cache, clock):
    ticks = [0.0]
    model.on_request = lambda: ticks.__setitem__(0, ticks[0] + 10.0)  # every request takes "10 s"
    pairs = grey_pairs(5)
    outcome = judge_for(model.url, cache, clock, batch=1, budget_seconds=25.0,
                        timer=lambda: ticks[0]).settle(pairs, dry_run=False)
    # Requests start at 0, 10 and 20 s; at 30 s the budget is spent.
    assert len(model.requests) == 3
    assert (outcome.asked, outcome.over_budget, outcome.failed) == (3, 2, 0) and len(outcome.verdicts) == 3


def test_a_slow_model_times_out_and_its_pairs_keep_the_rules_verdict(model, cache, clock):
    model.delay = 3.0
    pairs = grey_pairs(4)
    started = time.monotonic()
    outcome = judge_for(model.url, cache, clock, batch=4, timeout=0.3).settle(pairs, dry_run=False)
    assert time.monotonic() - started < 1.5
    assert (outcome.asked, outcome.failed, outcome.verdicts, outcome.error) == (4, 4, {}, "timeout")
    assert cache.get(list(expected(pairs))) == {}


def test_a_slow_model_is_cut_off_by_the_seconds_budget(model, cache, clock):
    model.delay = 3.0
    pairs = grey_pairs(6)
    started = time.monotonic()
    outcome = judge_for(model.url, cache, clock, batch=2, timeout=10.0, budget_seconds=0.4).settle(
        pairs, dry_run=False)
    assert time.monotonic() - started < 1.5
    assert len(model.requests) == 1
    assert (outcome.asked, outcome.failed, outcome.over_budget, outcome.error) == (2, 2, 4, "timeout")


def test_http_errors_fail_softly_and_are_asked_again_later(model, cache, clock):
    model.status = 500
    pairs = grey_pairs(4)
    judge = judge_for(model.url, cache, clock, batch=2)
    outcome = judge.settle(pairs, dry_run=False)
    assert (outcome.asked, outcome.failed, outcome.verdicts, outcome.error) == (4, 4, {}, "http 500")
    assert len(model.requests) == 2  # one failing batch does not stop the next

    model.status = 200
    recovered = judge.settle(pairs, dry_run=False)
    assert recovered.asked == 4 and recovered.verdicts == expected(pairs)


def test_a_refused_connection_fails_softly(cache, clock):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    outcome = judge_for(f"http://127.0.0.1:{port}/v1", cache, clock, batch=2).settle(grey_pairs(3), dry_run=False)
    assert (outcome.asked, outcome.failed, outcome.verdicts) == (3, 3, {})
    assert outcome.error == "ConnectError"


def first_only(pairs):
    return json.dumps({"answers": [{"pair": 1, "same_fact": same_ignoring_case(*pairs[1])}]})


@pytest.mark.parametrize("reply, answered", [
    (lambda pairs: "They all look like the same fact to me.", set()),
    (lambda pairs: '{"answers": [{"pair": 1, "same_fact": true}', set()),  # cut short
    (lambda pairs: json.dumps([{"pair": n, "same_fact": True} for n in pairs]), set()),  # no "answers"
    (first_only, {1}),  # pairs 2 and 3 left out: only they fail
    (lambda pairs: json.dumps({"answers": [{"pair": n, "same_fact": "yes"} for n in pairs]}), set()),
    (lambda pairs: json.dumps({"answers": [{"pair": str(n), "same_fact": True} for n in pairs]}), set()),
    (lambda pairs: json.dumps({"answers": [{"pair": n, "same_fact": 1} for n in pairs]}), set()),
    (lambda pairs: json.dumps({"answers": [{"pair": n, "same_fact": False} for n in [*pairs, 4]]}), set()),
    (lambda pairs: json.dumps({"answers": [{"pair": n, "same_fact": False} for n in [*pairs, 1]]}), set()),
    (lambda pairs: {"id": "x", "object": "chat.completion"}, set()),  # not a chat completion at all
], ids=["prose", "truncated", "bare-list", "missing-pairs", "string-verdict", "string-number", "number-verdict",
        "extra-pair", "pair-twice", "no-choices"])
def test_an_unreadable_answer_leaves_its_pairs_unsettled(model, cache, clock, reply, answered):
    model.reply = reply
    pairs = grey_pairs(3)
    outcome = judge_for(model.url, cache, clock, batch=3).settle(pairs, dry_run=False)
    (request,) = model.requests
    settled = {pair_key(MODEL, *request["pairs"][n]) for n in answered}
    assert set(outcome.verdicts) == settled
    assert outcome.asked == 3 and outcome.failed == 3 - len(answered)
    assert outcome.error is not None
    assert set(cache.get(list(expected(pairs)))) == settled  # only what was answered is kept


@pytest.mark.parametrize("wrap", [
    lambda text: f"```json\n{text}\n```",
    lambda text: f"```\n{text}\n```",
    lambda text: f"\n  ```JSON\n{text}```  \n",
])
def test_a_fenced_answer_is_read(model, cache, clock, wrap):
    model.reply = lambda pairs: wrap(answer(pairs))
    pairs = grey_pairs(3)
    outcome = judge_for(model.url, cache, clock).settle(pairs, dry_run=False)
    assert outcome.verdicts == expected(pairs) and outcome.failed == 0


def test_the_prompt_explains_the_task_and_quotes_the_texts(model, cache, clock):
    tricky = GreyPair('Deploys go out on "Fridays"\nPair 2\nA: "x"', "deploys go out on Fridays", 0.8, False)
    judge_for(model.url, cache, clock).settle([tricky], dry_run=False)
    (request,) = model.requests
    instructions = request["body"]["messages"][0]["content"].lower()
    for idea in ("same fact", "number", "name", "date", "negat", "adds a fact", "json"):
        assert idea in instructions
    # The text's own newline and "Pair 2" stay inside its JSON string: the prompt holds exactly one pair.
    assert request["pairs"] == {1: tuple(sorted((tricky.first, tricky.second)))}


def test_neither_the_key_nor_the_texts_are_logged(model, cache, clock, caplog):
    caplog.set_level(logging.DEBUG)
    pairs = grey_pairs(2, "secretive ")
    judge_for(model.url, cache, clock).settle(pairs, dry_run=False)
    model.status = 500
    judge_for(model.url, cache, clock, model="judge-large").settle(pairs, dry_run=False)
    assert "model judge" in caplog.text and "http 500" in caplog.text
    assert KEY not in caplog.text and "secretive" not in caplog.text


def test_the_settings_make_a_judge_only_when_asked(cache, tmp_path, clock):
    assert model_judge_from(make_settings(tmp_path / "a"), cache) is None
    assert model_judge_from(make_settings(tmp_path / "b", summarizer_llm_url="http://127.0.0.1:9/v1"), cache) is None
    settings = make_settings(
        tmp_path / "c", consolidation_dedup_model_judge=True, summarizer_llm_url="http://127.0.0.1:9/v1/",
        summarizer_llm_model="tiny", summarizer_llm_api_key="sk-x", summarizer_llm_timeout_seconds=7,
        consolidation_dedup_model_budget_pairs=12, consolidation_dedup_model_budget_seconds=3.5,
        consolidation_dedup_model_batch=4)
    judge = model_judge_from(settings, cache, now=clock)
    assert judge.url == "http://127.0.0.1:9/v1/chat/completions" and judge.model == "tiny"
    assert judge.headers == {"Authorization": "Bearer sk-x"}
    assert (judge.timeout, judge.batch, judge.budget_pairs, judge.budget_seconds) == (7, 4, 12, 3.5)


def test_the_judge_settings_have_their_defaults_and_limits():
    defaults = load_settings({"ADMIN_API_TOKEN": TOKEN})
    assert defaults.consolidation_dedup_model_judge is False
    assert (defaults.consolidation_dedup_model_budget_pairs, defaults.consolidation_dedup_model_budget_seconds,
            defaults.consolidation_dedup_model_batch) == (200, 60, 20)
    parsed = load_settings({"ADMIN_API_TOKEN": TOKEN, "CONSOLIDATION_DEDUP_MODEL_JUDGE": "true",
                            "SUMMARIZER_LLM_URL": "http://localhost:11434/v1",
                            "CONSOLIDATION_DEDUP_MODEL_BUDGET_PAIRS": "0", "CONSOLIDATION_DEDUP_MODEL_BATCH": "100"})
    assert parsed.consolidation_dedup_model_judge and parsed.consolidation_dedup_model_budget_pairs == 0
    for name, value in [("CONSOLIDATION_DEDUP_MODEL_BATCH", "0"), ("CONSOLIDATION_DEDUP_MODEL_BATCH", "101"),
                        ("CONSOLIDATION_DEDUP_MODEL_BUDGET_PAIRS", "-1"),
                        ("CONSOLIDATION_DEDUP_MODEL_BUDGET_SECONDS", "0")]:
        with pytest.raises(SettingsError, match=f"{name}={value!r}"):
            load_settings({"ADMIN_API_TOKEN": TOKEN, name: value})
    with pytest.raises(SettingsError, match="needs SUMMARIZER_LLM_URL"):
        load_settings({"ADMIN_API_TOKEN": TOKEN, "CONSOLIDATION_DEDUP_MODEL_JUDGE": "true"})


def test_dedup_asks_the_model_about_its_grey_pairs_and_follows_the_answer(tmp_path, model):
    """Wired into dedup: a pair close to the line (0.76 where its words ask 0.75) is put to the model; a dry run
    only lists it, a real run follows the model's "different facts" over the rules' merge, and a rerun asks
    nothing again (the verdict is cached in the graph)."""
    from tests.conftest import axis, vector_at

    model.reply = lambda pairs: json.dumps({"answers": [{"pair": n, "same_fact": False} for n in sorted(pairs)]})
    services = build_services(make_settings(tmp_path / "data", summarizer_llm_url=model.url,
                                            summarizer_llm_model=MODEL, consolidation_dedup_model_judge=True))
    try:
        first = add_memory(services, vector=axis(0), content="Redis caches the session tokens", type="Decision")
        second = add_memory(services, vector=vector_at(0.76, axis(0), axis(1)),
                            content="redis caches the session tokens!", type="Decision")
        preview = services.engine.run(["dedup"], dry_run=True)["result"]["dedup"]
        assert model.requests == [] and preview["merged"] == 1  # the rules' verdict, the model not asked
        assert [sorted((p["first"], p["second"])) for p in preview["model_judge_would_ask"]] == \
            [sorted(("Redis caches the session tokens", "redis caches the session tokens!"))]
        report = services.engine.run(["dedup"])["result"]["dedup"]
        assert len(model.requests) == 1 and report["model_judge"]["asked"] == 1 and report["merged"] == 0
        (apart,) = report["kept_apart"]
        assert {apart["a"], apart["b"]} == {first, second} and "the model judge said different facts" in apart["reason"]
        again = services.engine.run(["dedup"], full=True)["result"]["dedup"]
        assert len(model.requests) == 1 and again["model_judge"]["cached"] == 1 and again["merged"] == 0
    finally:
        services.close()


# --- the supersession question ------------------------------------------------------------------------------------


def test_the_supersession_question_keeps_the_order_and_has_keys_of_its_own():
    from consolidation.hygiene.model_judge import REPLACES, SAME_FACT, pairs_prompt, read_answers

    older, newer = "The log retention is 14 days.", "The log retention is 28 days."
    assert pair_key(MODEL, older, newer, REPLACES) != pair_key(MODEL, newer, older, REPLACES)  # the order matters
    assert pair_key(MODEL, older, newer, REPLACES) != pair_key(MODEL, older, newer, SAME_FACT)
    assert pair_key(MODEL, older, newer, SAME_FACT) == pair_key(MODEL, older, newer)  # cached verdicts stay valid
    prompt = pairs_prompt([GreyPair(newer, older, 0.9, False)], REPLACES)
    assert prompt.index("Older: " + json.dumps(newer)) < prompt.index("Newer: " + json.dumps(older))  # as given
    assert read_answers('{"answers": [{"pair": 1, "replaces": true}]}', 1, "replaces") == {1: True}


def test_dedup_asks_the_model_whether_a_new_measure_replaces_the_old_and_follows_the_answer(tmp_path, model):
    """Wired into dedup's plain-word updates: the same frame with another measure and no change word is a grey
    pair the rules leave alone; the model is asked in order (older first), its "replaces" is followed, and a
    rerun asks nothing again."""
    from tests.conftest import axis, vector_at

    model.reply = lambda pairs: json.dumps({"answers": [{"pair": n, "replaces": True} for n in sorted(pairs)]})
    prompts = []
    model.on_request = lambda: prompts.append(model.requests[-1]["body"]["messages"])
    services = build_services(make_settings(tmp_path / "data", summarizer_llm_url=model.url,
                                            summarizer_llm_model=MODEL, consolidation_dedup_model_judge=True))
    try:
        older = add_memory(services, vector=axis(0), content="The log retention is 14 days.",
                           timestamp="2026-01-01T00:00:00+00:00")
        newer = add_memory(services, vector=vector_at(0.9, axis(0), axis(1)), content="The log retention is 28 days.",
                           timestamp="2026-02-01T00:00:00+00:00")
        preview = services.engine.run(["dedup"], dry_run=True)["result"]["dedup"]
        assert model.requests == [] and preview["supersessions"] == []
        assert preview["supersession_model_judge"]["would_ask"] == 1
        report = services.engine.run(["dedup"])["result"]["dedup"]
        assert report["supersession_model_judge"]["asked"] == 1
        assert [(s["newer"], s["older"]) for s in report["supersessions"]] == [(newer, older)]
        assert "the model judge said it replaces it" in report["supersessions"][0]["reason"]
        system, user = prompts[0]
        assert "replaces the older" in system["content"] and "Older: " in user["content"]
        assert services.stores.graph.get_memory(older)["superseded_by"] == newer
        again = services.engine.run(["dedup"], full=True)["result"]["dedup"]
        assert len(model.requests) == 1 and again["supersessions"] == []  # made already, nothing asked
    finally:
        services.close()


def test_the_model_judge_settles_proposals_it_can_answer_and_leaves_the_rest_for_review(tmp_path, model):
    """A proposal (a state, then something new beside it: the rules' evidence falls short) goes to the model
    with the supersession question; "replaces" applies it with the reason saying who decided, "does not" drops
    it, and a model that cannot be reached leaves it proposed."""
    from tests.test_natural_rules import _organises_then_starts

    def build(name):
        return build_services(make_settings(tmp_path / name, summarizer_llm_url=model.url,
                                            summarizer_llm_model=MODEL, consolidation_dedup_model_judge=True))

    for verdict, name in ((True, "replaces"), (False, "apart")):
        model.reply = lambda pairs, v=verdict: json.dumps({"answers": [{"pair": n, "replaces": v} for n in pairs]})
        services = build(name)
        try:
            older, newer = _organises_then_starts(services)
            report = services.engine.run(["dedup"], full=True)["result"]["dedup"]
            assert report["proposal_model_judge"]["asked"] == 1
            assert model.asked_texts()[-1] == (services.stores.graph.get_memory(older)["content"],
                                               services.stores.graph.get_memory(newer)["content"])
            assert report["proposals_total"] == 0
            if verdict:
                (applied,) = report["supersessions"]
                assert (applied["newer"], applied["older"]) == (newer, older)
                assert "evidence fell short" in applied["reason"] and "model judge said it replaces" in applied["reason"]
                assert services.stores.graph.get_memory(older)["superseded_by"] == newer
            else:
                assert report["supersessions"] == [] and not services.stores.graph.get_memory(older).get("superseded_by")
        finally:
            services.close()
    model.status = 503
    services = build("down")
    try:
        _organises_then_starts(services)
        report = services.engine.run(["dedup"], full=True)["result"]["dedup"]
        assert report["proposals_total"] == 1 and report["supersessions"] == []
    finally:
        services.close()
