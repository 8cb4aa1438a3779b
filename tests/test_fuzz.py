"""A bounded fuzz of every route: hostile JSON, strings, numbers, ids, headers and content types never reach a
5xx, every error keeps its JSON shape, and whatever is accepted is stored exactly as it was sent."""

from __future__ import annotations

import json
import urllib.parse
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidation.memory import import_id
from consolidation.timeutil import parse_iso
from tests.conftest import NOW, TOKEN

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SIZE = 16

# Every code point, lone surrogates and NUL included.
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
edge_numbers = st.sampled_from([0, 1, -1, 0.5, 1e308, -1e308, 5e-324, 3.5e38, 3.4e38, 1e-46, 1e-40, 2**53, 2**53 - 1,
                                2**63, 2**63 - 1, -(2**63) - 1, 10**400, float("nan"), float("inf")])
edge_times = st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00Z",
                              "2026-05-31T23:00:00+14:00", "2026-06-01", "2026-13-01T00:00:00Z", "yesterday",
                              "2026-05-01T00:00:00.123456-07:30", " 2026-05-01T00:00:00 "])
times = st.one_of(edge_times, st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(2026, 6, 1),
                                           timezones=st.just(UTC)).map(datetime.isoformat))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), edge_numbers, any_text,
                    times)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(any_text, inner, max_size=3), max_leaves=12)
floats32 = st.floats(-1e6, 1e6, allow_nan=False, width=32)


# Legal values, edges included: every code point but NUL and surrogates, the first and last times, float32 limits.
legal_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=40)
legal_times = st.one_of(st.sampled_from(["0001-01-01T00:00:00Z", "0001-01-01T01:00:00+01:00", "2026-06-02T11:00:00Z",
                                         "2026-05-01T00:00:00.123456-07:30", "2026-05-01", "2026-05-01T00:00:00"]),
                        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(2026, 6, 1),
                                     timezones=st.just(UTC)).map(datetime.isoformat))
legal_vectors = st.lists(st.one_of(st.floats(-1e6, 1e6, allow_nan=False, width=32),
                                   st.sampled_from([3.4e38, -3.4e38, 1.4e-45, 0, 7])), min_size=SIZE, max_size=SIZE)
LEGAL = {
    "type": st.sampled_from(["Decision", "Insight", "Memory", "a-b_c9", "Z" * 64]),
    "importance": st.floats(0, 1) | st.integers(0, 1), "confidence": st.floats(0, 1) | st.integers(0, 1),
    "tags": st.lists(legal_text, max_size=4), "timestamp": legal_times, "last_accessed": legal_times,
    "access_count": st.integers(0, 2**53 - 1), "protected": st.booleans(), "protected_reason": legal_text,
    "id": st.uuids().map(str) | st.uuids().map(lambda u: str(u).upper()),
    "embedding": legal_vectors.filter(any),
}
legal_bodies = st.fixed_dictionaries({"content": legal_text}, optional=LEGAL)


@st.composite
def one_field_wrong(draw):
    body = draw(legal_bodies)
    body[draw(st.sampled_from([*LEGAL, "content", "colour"]))] = draw(json_values)
    return body


memory_bodies = st.one_of(legal_bodies, one_field_wrong(), st.dictionaries(any_text, json_values, max_size=4))
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
headers = st.one_of(st.just(ADMIN), st.just(ADMIN), st.sampled_from([
    {"X-Admin-Token": TOKEN}, {}, {"Authorization": "Bearer wrong-wrong-wrong-wrong"}, {"Authorization": TOKEN}]))
content_types = st.one_of(st.just("application/json"), st.just("application/json"), st.sampled_from(
    ["text/plain", None, "application/json; charset=latin-1", "application/x-ndjson"]))
path_ids = st.one_of(st.uuids().map(str), any_text, st.sampled_from(["%00", "%ED%A0%80", "..", "x" * 500]))


def send(client, method, path, body=None, header=None, content_type=None):
    request_headers = dict(header or {})
    if content_type:
        request_headers["Content-Type"] = content_type
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8", "surrogatepass")
    answer = getattr(client, method)(path, data=data, headers=request_headers)
    assert answer.status_code < 500, (path, body, answer.get_data()[:300])
    if answer.status_code >= 400:
        error = answer.json
        assert isinstance(error["error"], str) and isinstance(error["detail"], str)
        if answer.status_code == 400:
            assert isinstance(error.get("field"), str)
    return answer


@FUZZ
@given(body=memory_bodies, header=headers, content_type=content_types)
def test_creating_memories(client, services, body, header, content_type):
    answer = send(client, "post", "/memory", body, header, content_type)
    if answer.status_code == 201:
        assert answer.json["memory"]["state"] == "active"  # what the memory is, not a stored field
        assert_stored_as_sent(services, body, {k: v for k, v in answer.json["memory"].items() if k != "state"})


@FUZZ
@given(lines=st.lists(st.one_of(legal_bodies, legal_bodies, memory_bodies, json_values), min_size=1, max_size=4),
       junk=st.sampled_from([b"", b"\n\n", b"\r\n", b"\xff\xfe", b"{", "\u2028".encode()]),
       query=st.sampled_from(["", "?shift_to_now=true", "?dry_run=1", "?overwrite=true", "?x=1", "?dry_run=2"]),
       header=headers)
def test_importing_memories(client, services, lines, junk, query, header):
    data = b"\n".join(json.dumps(line).encode("utf-8", "surrogatepass") for line in lines) + junk
    answer = send(client, "post", f"/memory/import{query}", data, header)
    if answer.status_code != 200 or answer.json["dry_run"]:
        return
    report = answer.json
    assert report["created"] + report["overwritten"] + report["skipped"] == report["lines"] == len(lines)
    if "shift_to_now" in query or report["skipped"]:
        return
    for line in lines:  # every line was written: each is stored exactly as sent
        memory_id = str(line.get("id") or import_id(line)).lower()
        assert_stored_as_sent(services, line, services.stores.graph.get_memory(memory_id))


@FUZZ
@given(memory_id=path_ids, route=st.sampled_from(["get /memory/{}", "post /memory/{}/access",
                                                  "post /memory/{}/restore", "get /consolidate/runs/{}"]),
       header=headers)
def test_routes_with_an_id(client, memory_id, route, header):
    method, path = route.split(" ")
    send(client, method, path.format(urllib.parse.quote(memory_id, safe="", errors="surrogatepass")),
         header=header)


@FUZZ
@given(body=st.one_of(json_values, st.fixed_dictionaries({}, optional={
           "task": st.sampled_from(["decay", "creative", "cluster", "forget", "full", "all"]) | json_values,
           "mode": st.sampled_from(["full", "decay"]) | json_values, "dry_run": st.just(True) | json_values,
           "wait": st.booleans() | json_values, "repair": st.booleans() | json_values})),
       route=st.sampled_from(["/consolidate", "/reconcile"]), header=headers, content_type=content_types)
def test_admin_actions(client, services, body, route, header, content_type):
    if isinstance(body, dict) and route == "/consolidate":
        body.setdefault("dry_run", True)  # the fuzz previews; real runs are the other tests' business
    answer = send(client, "post", route, body, header, content_type)
    assert answer.status_code in (200, 202, 400, 401, 409)
    services.engine.wait_for_background()


@pytest.mark.parametrize("path", ["/health", "/metrics", "/consolidate/status", "/nope"])
def test_reading_routes_with_hostile_query_strings(client, path):
    for query in ["?token=" + TOKEN, "?%ED%A0%80=1", "?a=%00", "?" + "a" * 5000]:
        send(client, "get", path + query, header={"Authorization": f"Bearer {TOKEN}"})


def assert_stored_as_sent(services, sent: dict, answered: dict) -> None:
    stored = services.stores.graph.get_memory(answered["id"])
    assert stored == {k: v for k, v in answered.items() if v is not None}
    assert stored["content"] == sent["content"]
    assert stored["type"] == sent.get("type", "Memory")
    assert stored["tags"] == sent.get("tags", [])
    for name in ("importance", "confidence"):
        # FalkorDB reports doubles with 15 significant digits: that is what the service accepts and answers.
        assert stored[name] == (float(f"{sent[name]:.15g}") if sent.get(name) is not None else 0.5)
        assert sent.get(name) is None or abs(stored[name] - sent[name]) <= 1e-15
    assert stored["access_count"] == sent.get("access_count", 0)
    assert stored["protected"] == sent.get("protected", False)
    assert stored.get("protected_reason") == sent.get("protected_reason")
    if "id" in sent:
        assert stored["id"] == sent["id"].lower()
    for name in ("timestamp", "last_accessed"):
        if sent.get(name) is not None:
            assert parse_iso(stored[name]) == parse_iso(sent[name])  # the same instant, spelt in UTC
    if sent.get("embedding") is not None:
        _, vectors = services.stores.vectors.vectors([stored["id"]])
        given = np.asarray(sent["embedding"], dtype=np.float64)
        assert np.allclose(vectors[0], given / np.linalg.norm(given), atol=1e-6)
    assert parse_iso(stored["timestamp"]) <= NOW + timedelta(days=1)  # no time beyond the future tolerance
