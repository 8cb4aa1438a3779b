"""The scheduler with a fixed clock: due tasks run once, intervals hold, failures are retried, restarts keep time."""

import time

import pytest

from consolidation.errors import StoreUnavailable
from consolidation.service import build_services
from consolidation.tasks import TASKS
from tests.conftest import add_memory, make_settings


def ran(services):
    return [entry["task"] for entry in services.engine.control.state()["history"]]


def test_first_tick_runs_every_enabled_task_once(services):
    add_memory(services)
    [result] = services.scheduler.run_once()
    assert result["tasks"] == ["decay", "dedup", "creative", "cluster"]  # forget's interval is 0: disabled
    assert ran(services) == ["cluster", "creative", "dedup", "decay"]  # history is newest first
    assert services.scheduler.run_once() == []
    assert len(ran(services)) == 4


def test_each_task_comes_back_after_its_own_interval(services, clock):
    services.scheduler.run_once()
    clock.advance(hours=23, minutes=59)
    assert services.scheduler.run_once() == []
    clock.advance(minutes=1)
    assert services.scheduler.run_once()[0]["tasks"] == ["decay", "dedup"]
    clock.advance(days=6)
    assert services.scheduler.run_once()[0]["tasks"] == ["decay", "dedup", "creative"]
    clock.advance(days=30)
    assert services.scheduler.run_once()[0]["tasks"] == ["decay", "dedup", "creative", "cluster"]
    assert "forget" not in ran(services)


def test_a_failing_task_is_recorded_and_retried_with_backoff(services, clock, monkeypatch):
    def broken(ctx, dry_run):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(TASKS, "decay", broken)
    [result] = services.scheduler.run_once()
    assert result["result"]["decay"]["success"] is False
    assert result["result"]["creative"]["success"] is True  # one failure does not stop the others
    failure = services.engine.control.state()["history"][-1]
    assert failure["task"] == "decay" and failure["success"] is False and "disk on fire" in failure["error"]
    assert services.engine.control.state().get("last_decay") is None
    clock.advance(seconds=0.5)
    assert services.scheduler.run_once() == []  # backoff: tick (1 s) after the first failure
    clock.advance(seconds=0.5)
    assert services.scheduler.run_once()[0]["tasks"] == ["decay"]  # still failing: now waits 2 s
    clock.advance(seconds=1.5)
    assert services.scheduler.run_once() == []
    monkeypatch.undo()
    clock.advance(seconds=0.5)
    assert services.scheduler.run_once()[0]["result"]["decay"]["success"] is True
    assert services.engine.control.state()["last_decay"] == clock().isoformat()


def test_an_unavailable_store_is_waited_for_not_recorded(services, monkeypatch):
    def loading():
        raise StoreUnavailable("graph", "FalkorDB is loading its data; try again shortly")

    monkeypatch.setattr(services.stores, "ensure_ready", loading)
    assert services.scheduler.run_once() == []
    assert "loading" in services.scheduler.last_error
    monkeypatch.undo()
    assert ran(services) == []
    assert services.scheduler.run_once() != []


def test_a_restart_neither_reruns_nor_skips(tmp_path, clock):
    settings = make_settings(tmp_path / "data")
    first = build_services(settings, clock=clock)
    first.scheduler.run_once()
    last_decay = first.engine.control.state()["last_decay"]
    first.close()

    second = build_services(settings, clock=clock)
    try:
        assert second.engine.status()["last_decay"] == last_decay
        assert second.scheduler.run_once() == []
        clock.advance(days=1)
        assert second.scheduler.run_once()[0]["tasks"] == ["decay", "dedup"]
    finally:
        second.close()


def test_the_thread_ticks_without_an_eager_start_and_stops_cleanly(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "data", consolidation_tick_seconds=0.3), clock=clock)
    try:
        services.scheduler.start()
        assert services.scheduler.alive
        time.sleep(0.1)
        assert ran(services) == []  # nothing before the first tick
        deadline = time.monotonic() + 10
        while len(ran(services)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(ran(services)) == ["cluster", "creative", "decay", "dedup"]
        services.scheduler.stop()
        assert not services.scheduler.alive
    finally:
        services.close()


@pytest.mark.parametrize("task", ["decay", "dedup", "creative", "cluster", "forget"])
def test_an_interval_of_zero_disables_a_task(tmp_path, clock, task):
    services = build_services(make_settings(tmp_path / "d", **{f"consolidation_{task}_interval_seconds": 0,
                                                               "consolidation_forget_interval_seconds": 0
                                                               if task == "forget" else 60}), clock=clock)
    try:
        [result] = services.scheduler.run_once()
        assert task not in result["tasks"]
        assert services.engine.status()["next_due"][task] is None
    finally:
        services.close()
