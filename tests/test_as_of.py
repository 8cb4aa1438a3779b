"""Consolidation as of a time (`as_of`): decay and forgetting take that time as now, memories stored after it are
not read, and the schedule is left to runs at the present time."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from click.testing import CliRunner

from consolidation.cli import main
from consolidation.timeutil import to_iso

from conftest import NOW, add_memory, days_ago, make_settings


def _run(client, auth, **body):
    return client.post("/consolidate", headers=auth, json={"wait": True, **body})


def test_decay_as_of_a_past_time_scores_by_that_time(client, auth, services):
    old = add_memory(services, timestamp=days_ago(30), last_accessed=days_ago(30))
    later = add_memory(services, timestamp=days_ago(5), last_accessed=days_ago(5), relevance_score=0.42)
    as_of = NOW - timedelta(days=20)  # ten days after `old` was stored and used, before `later`
    answer = _run(client, auth, task="decay", as_of=to_iso(as_of))
    assert answer.status_code == 200, answer.get_json()
    run = answer.get_json()
    assert run["as_of"] == to_iso(as_of) and run["result"]["decay"]["memories_processed"] == 1
    # age 10 days, unused for 10 days, no edges, importance 0.5, confidence 0.5
    expected = math.exp(-0.01 * 10) * math.exp(-0.05 * 10) * 1.0 * (0.5 + 0.5) * (0.7 + 0.3 * 0.5)
    assert services.stores.graph.get_memory(old)["relevance_score"] == pytest.approx(expected, abs=1e-6)
    assert services.stores.graph.get_memory(later)["relevance_score"] == 0.42  # stored after: not read
    status = client.get("/consolidate/status", headers=auth).get_json()
    assert status["last_decay"] is None  # the schedule is the present time's


def test_forgetting_as_of_a_past_time_protects_what_was_young_then(tmp_path, clock, client_for):
    from consolidation.service import build_services

    services = build_services(make_settings(tmp_path / "data", consolidation_archive_threshold=0.2,
                                            consolidation_delete_threshold=0.05), clock=clock)
    try:
        client = client_for(services)
        memory = add_memory(services, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3,
                            type="Context")
        then = _run(client, client.auth, task="forget", as_of=to_iso(NOW - timedelta(days=350))).get_json()
        decisions = {d["memory_id"]: d for d in then["result"]["forget"]["protections"]}
        assert "grace period" in decisions[memory]["reason"]  # 50 days old as of then: within the 90 days
        assert services.stores.graph.existing_ids([memory]) == {memory}
        now = _run(client, client.auth, task="forget").get_json()
        assert now["result"]["forget"]["deleted"] == 1
    finally:
        services.close()


def test_a_time_ahead_of_now_or_no_time_at_all_is_refused(client, auth):
    ahead = _run(client, auth, task="decay", as_of=to_iso(NOW + timedelta(hours=2)))
    assert ahead.status_code == 400 and ahead.get_json()["field"] == "as_of"
    assert _run(client, auth, as_of="yesterday").status_code == 400
    both = _run(client, auth, dry_run=True, incremental=True, as_of=to_iso(NOW))
    assert both.status_code == 400


def test_the_cli_names_a_bad_time():
    result = CliRunner().invoke(main, ["consolidate", "--as-of", "last tuesday"])
    assert result.exit_code == 2 and "--as-of" in result.output
