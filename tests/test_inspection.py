"""The admin read routes behind the dashboard, on the real stores: run history, relevance histogram, clusters,
merges, supersessions and restorable memories; admin only, paged, bad paging refused in the JSON error shape."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidation.service import build_services
from tests.conftest import TOKEN, add_memory, axis, days_ago, make_settings, vector_at

ROUTES = ["/consolidate/runs", "/memories/relevance-histogram", "/clusters", "/hygiene/merges",
          "/hygiene/supersessions", "/memories/restorable?kind=archived", "/memories/search?q=x",
          "/hygiene/contradictions", "/hygiene/associations", "/consolidate/trends"]
PAGED = [route for route in ROUTES if "histogram" not in route and "trends" not in route]
STATIC = Path(__file__).resolve().parent.parent / "consolidation" / "dashboard" / "static"


@pytest.fixture
def forgetful(tmp_path, clock):
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.2,
                             consolidation_delete_threshold=0.05, api_token="memory-api-token-0123456789")
    built = build_services(settings, clock=clock)
    yield built
    built.close()


@pytest.mark.parametrize("route", ROUTES)
def test_only_the_admin_token_in_a_header_reads_them(route, forgetful, client_for):
    client = client_for(forgetful)
    assert client.get(route).status_code == 401
    assert client.get(route, headers={"Authorization": "Bearer memory-api-token-0123456789"}).status_code == 403
    separator = "&" if "?" in route else "?"
    refused = client.get(f"{route}{separator}token={TOKEN}")
    assert refused.status_code == 401 and refused.json["error"] == "unauthorized"
    assert client.get(route, headers=client.auth).status_code == 200


@pytest.mark.parametrize("route", PAGED)
@pytest.mark.parametrize("query, field", [
    ("limit=0", "limit"), ("limit=501", "limit"), ("limit=ten", "limit"), ("limit=", "limit"),
    ("offset=-1", "offset"), ("offset=1.5", "offset"), ("page=2", "page"),
])
def test_bad_paging_is_a_400_naming_the_parameter(route, query, field, client, auth):
    separator = "&" if "?" in route else "?"
    answer = client.get(f"{route}{separator}{query}", headers=auth)
    assert answer.status_code == 400
    assert answer.json["error"] == "invalid_input" and answer.json["field"] == field
    assert answer.json["detail"].startswith(f"{field}: ")


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), name=st.sampled_from(["limit", "offset", "bins", "kind", "x"]),
       value=st.one_of(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
                               max_size=12),
                       st.integers(-(2**70), 2**70).map(str), st.sampled_from(["1e3", "0x10", " 7", "5.0", "NaN"])))
def test_any_query_value_is_answered_or_refused_in_the_error_shape(client, auth, route, name, value):
    separator = "&" if "?" in route else "?"
    quoted = urllib.parse.quote(value, safe="", errors="surrogatepass")
    answer = client.get(f"{route}{separator}{name}={quoted}", headers=auth)
    assert answer.status_code in (200, 400), answer.get_data()[:300]
    if answer.status_code == 400:
        assert answer.json["error"] == "invalid_input" and answer.json["field"] == name
    elif "histogram" in route:
        assert answer.json["scored"] == 0 and {b["count"] for b in answer.json["buckets"]} == {0}
    else:
        assert answer.json["items"] == [] and answer.json["total"] == 0


def test_restorable_takes_a_known_kind_or_none_and_the_histogram_a_sane_bin_count(client, auth):
    assert client.get("/memories/restorable", headers=auth).json == {"items": [], "total": 0, "limit": 50,
                                                                     "offset": 0, "kind": None}  # every kind
    assert client.get("/memories/restorable?kind=forgotten", headers=auth).json["field"] == "kind"
    for bins in ("1", "101", "x"):
        answer = client.get(f"/memories/relevance-histogram?bins={bins}", headers=auth)
        assert answer.status_code == 400 and answer.json["field"] == "bins"


def test_run_history_lists_runs_newest_first_in_pages(services, client, auth, clock):
    add_memory(services, timestamp=days_ago(3))
    finished = []
    for task, dry_run in (("decay", True), ("dedup", False), ("forget", True)):
        finished.append(services.engine.run([task], dry_run=dry_run))
        clock.advance(minutes=5)

    everything = client.get("/consolidate/runs", headers=auth).json
    assert (everything["total"], everything["limit"], everything["offset"]) == (3, 50, 0)
    assert [run["run_id"] for run in everything["items"]] == [run["run_id"] for run in reversed(finished)]
    for shown, run in zip(everything["items"], reversed(finished)):
        task = run["tasks"][0]
        assert shown["state"] == "succeeded" and shown["dry_run"] == run["dry_run"] and shown["tasks"] == [task]
        assert shown["started_at"] == run["started_at"] and shown["finished_at"] == run["finished_at"]
        assert shown["outcomes"] == {task: {"success": True, "cancelled": False,
                                            "seconds": run["result"][task]["seconds"],
                                            "memories_processed": 1, "error": None}}
        assert shown["duration_seconds"] == 0.0  # the test clock stands still during a run

    page = client.get("/consolidate/runs?limit=1&offset=1", headers=auth).json
    assert [run["run_id"] for run in page["items"]] == [finished[1]["run_id"]] and page["total"] == 3


def test_a_run_left_running_by_a_dead_process_is_listed_as_abandoned(services, client, auth):
    services.engine.runs.create({"id": "0f6d2f0e-3c3a-4b8e-9d1e-5a1c2b3d4e5f", "state": "running",
                                 "tasks": ["decay"], "dry_run": False, "trigger": "schedule",
                                 "started_at": days_ago(1)})
    (run,) = client.get("/consolidate/runs", headers=auth).json["items"]
    assert run["state"] == "abandoned" and run["finished_at"] is None and run["duration_seconds"] is None


def test_the_histogram_bins_the_stored_relevance_of_active_memories(services, client, auth):
    scores = [0.03, 0.12, 0.15, 0.47, 0.48, 0.52, 0.86, 0.99, 1.0]
    for score in scores:
        add_memory(services, relevance_score=score)
    add_memory(services, relevance_score=0.33, archived=True)  # archived: not active
    add_memory(services, relevance_score=0.33, type="MetaPattern")  # a summary, not a memory of the agent
    add_memory(services, relevance_score=None)  # never scored: counted apart

    histogram = client.get("/memories/relevance-histogram?bins=4", headers=auth).json

    assert [b["count"] for b in histogram["buckets"]] == np.histogram(scores, bins=4, range=(0, 1))[0].tolist()
    assert [(b["low"], b["high"]) for b in histogram["buckets"]] == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75),
                                                                       (0.75, 1.0)]
    assert (histogram["bins"], histogram["scored"], histogram["unscored"]) == (4, len(scores), 1)
    assert len(client.get("/memories/relevance-histogram", headers=auth).json["buckets"]) == 10


def test_clusters_list_each_meta_pattern_with_its_summary_and_size(services, client, auth):
    for size, start in ((6, 1), (5, 8)):
        for i in range(size):
            add_memory(services, vector=vector_at(0.95, axis(0 if start == 1 else 15), axis(start + i)),
                       content=f"Cluster {start} note {i}", timestamp=days_ago(10 + i))
    services.engine.run(["cluster"])

    listed = client.get("/clusters", headers=auth).json
    assert listed["total"] == 2 and [c["size"] for c in listed["items"]] == [6, 5]
    for cluster in listed["items"]:
        stored = services.stores.graph.get_memory(cluster["id"])
        assert cluster["summary"] == stored["content"] and f"{cluster['size']} related memories" in cluster["summary"]
        assert cluster["dominant_type"] == "Context" and cluster["summary_method"] == "heuristic"
    second = client.get("/clusters?limit=1&offset=1", headers=auth).json
    assert [c["id"] for c in second["items"]] == [listed["items"][1]["id"]]


def test_merges_and_supersessions_list_what_dedup_did(services, client, auth, clock):
    base, other = axis(0), axis(1)
    kept = add_memory(services, vector=base, content="Use Redis for session caching", type="Decision",
                      access_count=9)
    merged = add_memory(services, vector=vector_at(0.97, base, other), content="We picked Redis for session caching",
                        type="Decision")
    old = add_memory(services, vector=axis(5), content="Production deploys happen on Tuesday",
                     timestamp=days_ago(30))
    new = add_memory(services, vector=vector_at(0.8, axis(5), axis(6)),
                     content="Production deploys moved from Tuesday to Thursday", timestamp=days_ago(2))
    services.engine.run(["dedup"])

    (merge,) = client.get("/hygiene/merges", headers=auth).json["items"]
    assert (merge["duplicate_id"], merge["canonical_id"], merge["state"]) == (merged, kept, "done")
    assert merge["duplicate_content"] == "We picked Redis for session caching"
    assert merge["canonical_content"] == "Use Redis for session caching"
    assert merge["similarity"] == pytest.approx(0.97, abs=1e-4) and "Redis" in merge["reason"]
    (link,) = client.get("/hygiene/supersessions", headers=auth).json["items"]
    assert (link["newer_id"], link["older_id"]) == (new, old) and link["confidence"] == 0.9
    assert link["older_content"] == "Production deploys happen on Tuesday" and link["reason"]

    assert client.post(f"/memory/{merged}/restore", headers=auth).status_code == 200
    (merge,) = client.get("/hygiene/merges", headers=auth).json["items"]
    assert merge["state"] == "restored" and merge["restored_at"] == clock().isoformat()


def test_restorable_lists_archived_merged_and_deleted_memories_until_restored(forgetful, client_for):
    client = client_for(forgetful)
    gone = add_memory(forgetful, content="gone " + "x" * 400, timestamp=days_ago(400), last_accessed=days_ago(400),
                      importance=0.3)
    # 150 days old, used 2 days ago: relevance about 0.17, between the archive and delete thresholds.
    faded = add_memory(forgetful, content="faded", timestamp=days_ago(150), last_accessed=days_ago(2))
    canonical = add_memory(forgetful, vector=axis(0), content="Use Redis for session caching", type="Decision",
                           access_count=9)
    duplicate = add_memory(forgetful, vector=vector_at(0.97, axis(0), axis(1)), type="Decision",
                           content="We picked Redis for session caching")
    forgetful.engine.run(["dedup", "forget"])

    def listed(kind: str) -> dict:
        return client.get(f"/memories/restorable?kind={kind}", headers=client.auth).json

    (archived,) = listed("archived")["items"]
    assert archived["memory_id"] == faded and archived["since"] == forgetful.engine.clock().isoformat()
    assert archived["reason"].startswith("relevance 0.1") and archived["reason"].endswith("< archive threshold 0.2")
    (merged,) = listed("merged")["items"]
    assert merged["memory_id"] == duplicate and merged["merged_into"] == canonical
    assert merged["reason"] == f"merged into {canonical}: 'Use Redis for session caching'"
    (deleted,) = listed("deleted")["items"]
    assert deleted["memory_id"] == gone and deleted["reason"].startswith("relevance 0.0000 < delete threshold")
    assert deleted["content"] == ("gone " + "x" * 400)[:280] and deleted["type"] == "Context"
    # No kind: all three, archived then merged then deleted, paged as one list.
    every = client.get("/memories/restorable", headers=client.auth).json
    assert [(i["memory_id"], i["kind"]) for i in every["items"]] == \
        [(faded, "archived"), (duplicate, "merged"), (gone, "deleted")] and every["total"] == 3
    for offset in range(4):
        page = client.get("/memories/restorable", query_string={"limit": 1, "offset": offset},
                          headers=client.auth).json
        assert page["total"] == 3 and page["items"] == every["items"][offset:offset + 1]
    # Filtered by text (any case), each kind: the one holding it, or none.
    for kind, memory_id, text in (("archived", faded, "FADED"), ("merged", duplicate, "picked redis"),
                                  ("deleted", gone, "GONE xxx")):
        found = client.get("/memories/restorable", query_string={"kind": kind, "q": text}, headers=client.auth).json
        assert [(i["memory_id"], found["total"]) for i in found["items"]] == [(memory_id, 1)], kind
        none = client.get("/memories/restorable", query_string={"kind": kind, "q": "nothing like it"},
                          headers=client.auth).json
        assert none["total"] == 0 and none["items"] == [], kind

    for memory_id, kind in ((faded, "archived"), (duplicate, "merged"), (gone, "deleted")):
        assert client.post(f"/memory/{memory_id}/restore", headers=client.auth).status_code == 200
        assert listed(kind) == {"total": 0, "limit": 50, "offset": 0, "kind": kind, "items": []}


def test_the_dashboard_page_and_its_files_are_served_from_the_service_alone(client):
    page = client.get("/dashboard")
    assert page.status_code == 200 and page.mimetype == "text/html"
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    html = page.get_data(as_text=True)
    linked = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert linked and all(url.startswith("/dashboard/static/") or url.startswith("data:") for url in linked)
    for url in linked:
        if url.startswith("/"):
            assert client.get(url).status_code == 200, url
    assert client.get("/dashboard/").status_code == 200
    # Our scripts reach the service by path only; the one vendored file keeps its licence beside it.
    for script in STATIC.glob("*.js"):
        assert not re.search(r"https?://", script.read_text()), script.name
    assert client.get("/dashboard/static/vendor/chart.js.LICENSE.md").status_code == 200
    assert "MIT License" in (STATIC / "vendor" / "chart.js.LICENSE.md").read_text()


def test_every_read_route_is_in_the_openapi_with_its_query_and_answer(app, client):
    """The OpenAPI is generated from each route's models: every read route, its paging parameters, its answer."""
    served = {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint.startswith("inspection.")
              and "<" not in rule.rule}  # the lists; a memory's detail is tested with its own answer
    assert served == {route.split("?")[0] for route in ROUTES}
    paths = client.get("/openapi.json").get_json()["paths"]
    for route in served:
        operation = paths[route]["get"]
        parameters = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
        extra = {"/memories/restorable": {"kind", "q"}, "/memories/search": {"q"},
                 "/consolidate/runs": {"task", "trigger", "state"}, "/hygiene/contradictions": {"written_by"},
                 "/hygiene/associations": {"written_by"}}.get(route, set())
        expected = {"bins"} if route.endswith("histogram") else {"limit"} if route.endswith("trends") else \
            {"limit", "offset"} | extra
        assert parameters == expected, route
        assert "200" in operation["responses"] and "401" in operation["responses"], route

