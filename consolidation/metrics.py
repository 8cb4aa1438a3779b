"""Prometheus metrics: counters kept by each process, and gauges read from the shared stores at scrape time."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import (
    CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest, multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from .reports import task_outcome
from .settings import TASK_NAMES
from .timeutil import epoch_or_nan

log = logging.getLogger(__name__)

# Counters live in one registry per process. Under gunicorn with several workers, prometheus-client's
# multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set up by gunicorn.conf.py) makes them shared files that a
# scrape of any worker adds up.
PROCESS_REGISTRY = CollectorRegistry(auto_describe=True)
disable_created_metrics()  # *_created series only double the output; nothing here reads them

RUNS = Counter(
    "consolidation_runs", "Task executions by task, outcome and dry run",
    ["task", "outcome", "dry_run"], registry=PROCESS_REGISTRY,
)
DURATION = Histogram(
    "consolidation_task_duration_seconds", "How long each task took (dry runs included)", ["task"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
    registry=PROCESS_REGISTRY,
)
MEMORIES = Counter(
    "consolidation_memories", "Memories handled by real runs, by task and action", ["task", "action"],
    registry=PROCESS_REGISTRY,
)
HTTP_REQUESTS = Counter(
    "consolidation_http_requests", "HTTP requests answered, by method, route and status",
    ["method", "route", "status"], registry=PROCESS_REGISTRY,
)

# Which number of a task's report counts as which action in consolidation_memories_total.
REPORTED_ACTIONS = {
    "processed": "memories_processed",
    "rescored": "scores_changed",
    "associated": "edges_total",
    "clustered": "memories_clustered",
    "archived": "archived",
    "deleted": "deleted",
    "merged": "merged",
    "superseded": "supersessions_total",
    "contradicted": "contradictions_total",
}


def record_task(task: str, report: dict[str, Any], dry_run: bool) -> None:
    """Count one task execution from its report."""
    RUNS.labels(task, task_outcome(report), str(dry_run).lower()).inc()
    DURATION.labels(task).observe(report.get("seconds", 0.0))
    if dry_run or not report.get("success"):
        return
    for action, key in REPORTED_ACTIONS.items():
        if isinstance(report.get(key), int):
            MEMORIES.labels(task, action).inc(report[key])


def record_request(method: str, route: str, status: int) -> None:
    HTTP_REQUESTS.labels(method, route, str(status)).inc()


class StoreCollector:
    """Cluster-wide facts read from the stores at each scrape, per graph: last successes, the lease, counts."""

    def __init__(self, services):
        self.services = services

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("consolidation_store_up", "1 if the store answers", labels=["store"])
        last = GaugeMetricFamily("consolidation_last_success_timestamp_seconds",
                                 "When each task last succeeded on each graph (epoch seconds)", labels=["graph", "task"])
        lease = GaugeMetricFamily("consolidation_lease_info",
                                  "Each graph's run lease: holder, run and task (1 while held)",
                                  labels=["graph", "holder", "run_id", "task"])
        held = GaugeMetricFamily("consolidation_lease_held", "1 while some process holds the graph's run lease",
                                 labels=["graph"])
        counts = GaugeMetricFamily("consolidation_store_memories", "Memories in each store of each graph",
                                   labels=["graph", "store"])
        health = self.services.health()
        for store, state in health.items():
            up.add_metric([store], float(state["ok"]))
        for graph in self.services.graphs.opened():
            if health["graph"]["ok"]:
                self._graph_facts(graph.name, graph.engine, last, lease, held, counts)
            if health.get("vectors", {}).get("ok"):
                counts.add_metric([graph.name, "vectors"], _safely(graph.stores.vectors.count, 0))
        alive = GaugeMetricFamily("consolidation_scheduler_alive",
                                  "1 if what computes the schedule is alive: this process's scheduler thread "
                                  "(inline), else a worker process with a fresh heartbeat")
        alive.add_metric([], float(self.services.scheduler_alive()))
        yield from (up, last, lease, held, counts, alive)

    def _graph_facts(self, name, engine, last, lease, held, counts) -> None:
        try:
            state, current = engine.control.state_and_lease()
            counts.add_metric([name, "graph"], engine.stores.graph.count_memories())
        except Exception:  # the store went away between the ping and now; the scrape still answers
            log.warning("metrics could not read the graph store graph=%s", name)
            return
        for task in TASK_NAMES:
            when = epoch_or_nan(state.get(f"last_{task}"))
            if not math.isnan(when):  # NaN: the task has never succeeded
                last.add_metric([name, task], when)
        held.add_metric([name], 1.0 if current else 0.0)
        if current:
            lease.add_metric([name, current.holder, current.run_id, current.task or ""], 1.0)


def exposition(services, multiprocess_dir: Path | None) -> bytes:
    """The text a scrape returns: this process's counters (or every worker's), plus the store gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess_dir is not None:
        multiprocess.MultiProcessCollector(registry, path=str(multiprocess_dir))
    else:
        registry.register(_Forward(PROCESS_REGISTRY))
    registry.register(StoreCollector(services))
    return generate_latest(registry)


class _Forward:
    """Lets a per-scrape registry include the process registry's metrics."""

    def __init__(self, registry: CollectorRegistry):
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        return self.registry.collect()


def _safely(read, default):
    try:
        return read()
    except Exception:
        return default
