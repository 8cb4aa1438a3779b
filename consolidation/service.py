"""Composition root: builds each graph's stores, engine and memory service, the process's scheduler, and decides
where its runs compute (inline, a worker child, external workers: RunPlacement)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .demand import Demand
from .embedding import Embedder, build_embedder
from .engine import ConsolidationEngine
from .errors import StoreUnavailable
from .heap import bound_arenas
from .ingest import MemoryChecks, MemoryService
from .registry import GraphRegistry, GraphServices, Runner
from .settings import Settings
from .stores import Stores, open_stores, refuse_shared_graphs, store_health
from .stores.falkor import WORKER_SCAN_READERS, Falkor
from .stores.inspection import InspectionStore
from .summaries import HeuristicSummarizer, LLMSummarizer, Summarizer
from .stores.vectors import VectorStore
from .timeutil import utc_now
from .worker.process import ChildWorker, WorkerLinks
from .worker.queue import RunQueue
from .worker.runners import InlineRuns, QueuedRuns
from .worker.scheduler import ConsolidationScheduler
from .worker.vectors import RemoteVectors

# The workers' list status shows may be this old: their heartbeats are 2 s apart, and reading it costs two
# round trips that, during a run, each wait behind the run's current write.
WORKERS_FRESH_SECONDS = 1.0


@dataclass(frozen=True)
class RunPlacement:
    """Where this process's runs compute, the one reading of CONSOLIDATION_WORKER: `inline` (the scheduler thread
    and the requests' runs here), `child` (a worker child this serving process starts) or `external` (worker
    processes of their own). A worker process (`in_worker`) computes what it takes itself, whatever the mode."""

    mode: str
    in_worker: bool = False

    @property
    def inline(self) -> bool:
        return self.mode == "inline"

    def runner(self, engine: ConsolidationEngine, connect: Callable[[], Falkor], demand: Demand) -> Runner:
        """How a run asked of this process computes: here, or queued for a worker process."""
        if self.inline or self.in_worker:
            return InlineRuns(engine)
        return QueuedRuns(engine, RunQueue(connect()), demand)

    def start(self, services: Services, start_scheduler: bool | None = None) -> None:
        """Start what computes here: inline, the scheduler thread (when enabled, or `start_scheduler` says so);
        child, the worker child (it also runs what is asked by hand: only `start_scheduler=False` keeps it from
        starting); external, nothing. A worker process runs its own loop instead (`consolidation worker`)."""
        if self.inline:
            enabled = services.settings.consolidation_scheduler_enabled
            if start_scheduler if start_scheduler is not None else enabled:
                services.scheduler.start()
        elif self.mode == "child" and start_scheduler is not False and services.worker is None:
            services.worker = ChildWorker(services.settings, services.graphs, services.demand)
            services.worker.start()


@dataclass
class Services:
    """A process's services: the graphs it serves and the scheduler that consolidates them."""

    settings: Settings
    graphs: GraphRegistry
    scheduler: ConsolidationScheduler
    checks: MemoryChecks  # a write's validation, run before a write makes a new graph
    placement: RunPlacement  # where this process's runs compute
    worker: ChildWorker | None = None  # the worker child this serving process started (CONSOLIDATION_WORKER=child)
    # The requests being answered now, here and by the other processes on the data directory: the worker child's
    # calls into this process's vectors wait for them, and every process's store writes are paced by them.
    demand: Demand = field(default_factory=Demand)
    _run_queue: RunQueue | None = None

    # The default graph's parts: what a one-graph deployment (and most tests) work with.
    @property
    def default(self) -> GraphServices:
        return self.graphs.get(None)

    @property
    def stores(self) -> Stores:
        return self.default.stores

    @property
    def engine(self) -> ConsolidationEngine:
        return self.default.engine

    @property
    def memories(self) -> MemoryService:
        return self.default.memories

    @property
    def inspection(self) -> InspectionStore:
        return self.default.inspection

    def health(self) -> dict[str, dict]:
        """Whether the stores answer now: through the default graph (or any opened one), else the connection."""
        opened = {graph.name: graph for graph in self.graphs.opened()}
        chosen = opened.get(self.graphs.selection.default) or next(iter(opened.values()), None)
        if chosen is not None:
            return chosen.stores.health()
        return store_health({"graph": lambda: self.graphs.connection().ping()})

    def start_consolidating(self, start_scheduler: bool | None = None) -> None:
        """Start what computes runs, as the placement says (RunPlacement.start)."""
        self.placement.start(self, start_scheduler)

    def scheduler_view(self) -> dict[str, Any]:
        """What computes the schedule, and whether it is alive: the thread here (inline), or the worker processes
        whose heartbeats are fresh (child, external; each says when it last ticked). Status, health and metrics
        all read this, so they agree whichever process computes."""
        settings, scheduler = self.settings, self.scheduler
        if self.placement.inline:
            return {"enabled": settings.consolidation_scheduler_enabled, "runs_in": "inline",
                    "alive": scheduler.alive, "tick_seconds": scheduler.tick_seconds,
                    "last_tick_at": scheduler.last_tick_at.isoformat() if scheduler.last_tick_at else None,
                    "last_error": scheduler.last_error}
        workers = self.run_queue().workers(max_age_seconds=WORKERS_FRESH_SECONDS)
        ticks = sorted(w["last_tick_at"] for w in workers if w.get("last_tick_at"))
        errors = [w["last_error"] for w in workers if w.get("last_error")]
        return {"enabled": settings.consolidation_scheduler_enabled, "runs_in": self.placement.mode,
                "alive": bool(workers), "tick_seconds": settings.consolidation_tick_seconds,
                "last_tick_at": ticks[-1] if ticks else None, "last_error": "; ".join(errors) or None,
                "workers": workers}

    def scheduler_alive(self) -> bool:
        """scheduler_view's `alive`; False when the graph store, which holds the workers' heartbeats, is down."""
        try:
            return bool(self.scheduler_view()["alive"])
        except StoreUnavailable:
            return False

    def run_queue(self) -> RunQueue:
        connection = self.graphs.connection()
        if self._run_queue is None or self._run_queue.falkor is not connection:
            self._run_queue = RunQueue(connection)
        return self._run_queue

    def close(self) -> None:
        """Stop the scheduler and the worker child, let background runs finish, then release the stores; safe
        to call twice."""
        self.scheduler.stop()
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.graphs.close()


def build_services(settings: Settings, clock: Callable[[], datetime] = utc_now,
                   embedder: Embedder | None = None, links: WorkerLinks | None = None,
                   worker: bool = False) -> Services:
    """The services of a serving process, or of a `worker` process (with `links`: a child reaching its
    parent's stores)."""
    bound_arenas()  # before the stores and the scheduler start their threads
    embedder = embedder or build_embedder(settings)
    summarizer = summarizer_for(settings)
    placement = RunPlacement(settings.consolidation_worker, in_worker=worker)
    demand = Demand.at(settings.data_dir)

    remote_vectors = remote_vectors_of(links) if links is not None and links.vectors_socket is not None else None

    def build(name: str, connect: Callable[[], Falkor]) -> GraphServices:
        stores = open_stores(settings, name, connect, remote_vectors)
        engine = ConsolidationEngine(settings, stores, embedder, summarizer, clock)
        try:
            # Deletions and merges a crash interrupted are finished before the graph serves anything.
            engine.complete_interrupted()
            engine.space.state()  # the store's model read (and recorded, for a store written before it was)
        except StoreUnavailable:
            pass  # a store still down: the scheduler's ticks finish them once it answers

        memories = MemoryService(settings, stores, embedder, engine.lifecycle, engine.refresh_summaries, clock,
                                 demand, space=engine.space)
        try:
            memories.requests.complete_pending()  # supersessions and purges a crash interrupted
        except StoreUnavailable:
            pass
        return GraphServices(name, stores, engine, memories, InspectionStore(stores.graph.falkor),
                             placement.runner(engine, connect, demand))

    def connect() -> Falkor:
        if links is not None and links.falkordb_socket:
            falkor = Falkor.attach(links.falkordb_socket, settings.falkordb_graph)
        else:
            falkor = Falkor.connect(settings)
        if worker:
            falkor.readers = WORKER_SCAN_READERS
        falkor.demand = demand
        return falkor

    graphs = GraphRegistry(settings, build, connect)
    try:
        if settings.falkordb_host and not settings.qdrant_url and links is None:
            # A replica with its own embedded Qdrant is refused now, not at each request for a shared graph.
            existing = set(graphs.connection().graph_names())
            refuse_shared_graphs(settings, graphs.connection().for_graph,
                                 [name for name in graphs.refresh() if name in existing])
        for name in settings.graph_selection.names:  # named graphs open at start: a bad store shows at once
            graphs.get(name)
    except Exception:
        graphs.close()
        raise
    scheduler = ConsolidationScheduler(graphs, settings.consolidation_tick_seconds, clock)
    return Services(settings, graphs, scheduler, MemoryChecks(settings, clock), placement, demand=demand)


def remote_vectors_of(links: WorkerLinks) -> Callable[[str], VectorStore]:
    """A worker child's vector store of each graph: its parent's, over the vector server."""
    def open_remote(name: str) -> VectorStore:
        return RemoteVectors(links.vectors_socket, links.authkey or b"", name)

    return open_remote


def summarizer_for(settings: Settings) -> Summarizer:
    heuristic = HeuristicSummarizer()
    if not settings.summarizer_llm_url:
        return heuristic
    api_key = settings.summarizer_llm_api_key.get_secret_value() if settings.summarizer_llm_api_key else None
    return LLMSummarizer(settings.summarizer_llm_url, settings.summarizer_llm_model, api_key,
                         settings.summarizer_llm_timeout_seconds, fallback=heuristic)
