"""Composition: builds each graph's stores, engine and memory service, and the process's scheduler, from the settings."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .embedding import Embedder, HashingEmbedder
from .engine import ConsolidationEngine
from .errors import (GRAPH_HEADER, Forbidden, GraphLimit, GraphRequired, InvalidInput, StoreMismatch, StoreUnavailable,
                     UnknownGraph)
from .graphs import GRAPH_NAME, GRAPH_NAME_RULE, GraphSelection
from .heap import bound_arenas
from .ingest import MemoryChecks, MemoryService
from .scheduler import ConsolidationScheduler
from .settings import Settings
from .stores import Stores, open_stores, refuse_shared_graphs, store_health
from .stores.falkor import WORKER_SCAN_READERS, Falkor
from .stores.inspection import InspectionStore
from .summaries import HeuristicSummarizer, LLMSummarizer, Summarizer
from .stores.vectors import VectorStore
from .timeutil import utc_now
from .worker.process import ChildWorker, WorkerLinks
from .worker.queue import RunQueue
from .worker.runs import InlineRuns, QueuedRuns, Runner
from .worker.vectors import RemoteVectors, RequestsInFlight

log = logging.getLogger(__name__)
MIN_OPEN_SECONDS = 5.0  # a graph used this recently (a request on it may still run) stays open beyond the cap


@dataclass
class GraphServices:
    """Everything that works on one graph: its stores (graph + collection), engine, memories and admin reads."""

    name: str
    stores: Stores
    engine: ConsolidationEngine
    memories: MemoryService
    inspection: InspectionStore
    runner: Runner  # where a run asked over HTTP computes: here, or in a worker process

    def close(self) -> None:
        self.engine.wait_for_background(timeout=60)
        self.stores.close()


class GraphRegistry:
    """The graphs this process serves, each opened on first use and kept; one FalkorDB connection for all.

    Named graphs are always served. With a prefix (`tenant_*`), the graphs the server holds under it are
    discovered (`refresh`), and a request may address a new one: a write creates it, a read of a graph that
    does not exist yet is a 404 rather than an empty graph made by a typo.
    """

    def __init__(self, settings: Settings, build: Callable[[str, Callable[[], Falkor]], GraphServices],
                 connect: Callable[[], Falkor] | None = None):
        self.selection: GraphSelection = settings.graph_selection
        self.settings = self._settings = settings
        self._build = build
        self._connect = connect or (lambda: Falkor.connect(settings))
        self._graphs: dict[str, GraphServices] = {}
        self._known: list[str] = list(self.selection.names)
        self._connection: Falkor | None = None
        self._opening: dict[str, threading.Lock] = {}
        self._used: dict[str, float] = {}  # when each open graph was last asked for (monotonic)
        self._lock = threading.RLock()

    def get(self, name: str | None, create: bool = True) -> GraphServices:
        """The services of graph `name` (None: the default graph), opened if needed."""
        if name is None:
            if self.selection.default is None:
                raise GraphRequired()
            name = self.selection.default
        if not GRAPH_NAME.fullmatch(name):  # no graph can have this name: the caller's mistake, not a 404
            raise InvalidInput(GRAPH_HEADER, f"must be a graph name: {GRAPH_NAME_RULE}")
        if not self.selection.serves(name):
            raise UnknownGraph(name)
        with self._lock:
            self._used[name] = time.monotonic()
            if name in self._graphs:
                return self._graphs[name]
            opening = self._opening.setdefault(name, threading.Lock())
        # Opening a graph (schema, collection) takes a while: only requests for that graph wait for it.
        with opening:
            with self._lock:
                if name in self._graphs:
                    return self._graphs[name]
            if not create and name not in self.selection.names and name not in self.refresh():
                raise UnknownGraph(name)
            opened = self._open(name)
        self.close_idle()  # a graph more open: the least recently used beyond the cap closes
        return opened

    def to_write(self, name: str | None, writes: Callable[[], bool], admin: bool = True) -> GraphServices | None:
        """The graph a write addresses. One under a prefix that does not exist yet is made only when `writes`
        (the write's own checks, run without any store, raising what they refuse) says the write would write:
        a refused or dry write leaves no graph behind. None when it does not exist and nothing would be written.
        Making one takes the admin token (unless GRAPH_CREATION=any) and room under FALKORDB_GRAPHS_MAX."""
        try:
            return self.get(name, create=False)
        except UnknownGraph:
            if name is None or not self.selection.serves(name):
                raise
            if not writes():
                return None
            self._may_create(name, admin)
            return self.get(name, create=True)

    def _may_create(self, name: str, admin: bool) -> None:
        if not admin and self._settings.graph_creation == "admin":
            raise Forbidden(f"graph {name!r} does not exist yet, and only the admin token may make a new graph "
                            "(GRAPH_CREATION=admin)")
        served = self.refresh()
        if len(served) >= self._settings.falkordb_graphs_max:
            raise GraphLimit(f"this service serves {len(served)} graphs, FALKORDB_GRAPHS_MAX: graph {name!r} would "
                             "be one more")

    def refresh(self) -> list[str]:
        """The graphs to serve now: the named ones and those the server holds under a prefix."""
        if not self.selection.fixed:
            existing = self.connection().graph_names()
            with self._lock:
                self._known = self.selection.served([*existing, *self._graphs])
        return self.names()

    def names(self) -> list[str]:
        with self._lock:
            return sorted({*self._known, *self._graphs})

    def is_open(self, name: str) -> bool:
        with self._lock:
            return name in self._graphs

    def close_idle(self) -> list[str]:
        """Close the graphs unused for FALKORDB_GRAPHS_IDLE_SECONDS, and the least recently used beyond
        FALKORDB_GRAPHS_OPEN_MAX unused for MIN_OPEN_SECONDS at least; never a named graph, nor one whose run goes
        on in this process. They open again when next used. The names closed."""
        now = time.monotonic()
        idle, cap = self._settings.falkordb_graphs_idle_seconds, self._settings.falkordb_graphs_open_max
        with self._lock:
            closable = sorted((self._used.get(name, 0.0), name) for name, graph in self._graphs.items()
                              if name not in self.selection.names and not graph.engine.busy())
            excess = len(self._graphs) - cap
            chosen = [name for used, name in closable if now - used >= idle]
            chosen += [name for used, name in closable if name not in chosen and now - used >= MIN_OPEN_SECONDS][
                :max(0, excess - len(chosen))]
            closing = [self._graphs.pop(name) for name in chosen]
        for graph in closing:
            graph.close()
            log.info("graph closed (idle) graph=%s", graph.name)
        return chosen

    def opened(self) -> list[GraphServices]:
        with self._lock:
            return [self._graphs[name] for name in sorted(self._graphs)]

    def all(self) -> list[GraphServices]:
        """Every served graph's services (opening those not opened yet)."""
        return [self.get(name) for name in self.names()]

    def connection(self) -> Falkor:
        with self._lock:
            if self._connection is None:
                self._connection = self._connect()
            return self._connection

    def close(self) -> None:
        with self._lock:
            graphs, self._graphs = list(self._graphs.values()), {}
            connection, self._connection = self._connection, None
        for graph in graphs:
            graph.close()
        if connection is not None:
            connection.close()

    def _open(self, name: str) -> GraphServices:
        collection = self.selection.collection(name)
        with self._lock:
            taken = {self.selection.collection(other): other for other in self._graphs}
        if collection in taken:
            raise StoreMismatch(f"graphs {taken[collection]!r} and {name!r} would share the Qdrant collection "
                                f"{collection!r}: name another in QDRANT_COLLECTIONS")
        graph = self._build(name, self.connection)
        with self._lock:
            self._graphs[name] = graph
            if name not in self._known:
                self._known = sorted({*self._known, name})
        log.info("graph opened graph=%s collection=%s", name, collection)
        return graph


# The workers' list status shows may be this old: their heartbeats are 2 s apart, and reading it costs two
# round trips that, during a run, each wait behind the run's current write.
WORKERS_FRESH_SECONDS = 1.0


@dataclass
class Services:
    """A process's services: the graphs it serves and the scheduler that consolidates them."""

    settings: Settings
    graphs: GraphRegistry
    scheduler: ConsolidationScheduler
    checks: MemoryChecks  # a write's validation, run before a write makes a new graph
    worker: ChildWorker | None = None  # the worker child this serving process started (CONSOLIDATION_WORKER=child)
    # The requests being answered now: the worker child's calls into this process's vectors wait for them.
    in_flight: RequestsInFlight = field(default_factory=RequestsInFlight)
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

    def start_consolidating(self, scheduler: bool, worker: bool = True) -> None:
        """Start what computes runs, as CONSOLIDATION_WORKER says: the scheduler thread here (inline, when
        `scheduler`), a worker child beside this process (child, when `worker`: it also runs what is asked by
        hand), or nothing (external workers)."""
        mode = self.settings.consolidation_worker
        if mode == "inline" and scheduler:
            self.scheduler.start()
        elif mode == "child" and worker and self.worker is None:
            self.worker = ChildWorker(self)
            self.worker.start()

    def scheduler_view(self) -> dict[str, Any]:
        """What computes the schedule, and whether it is alive: the thread here (inline), or the worker processes
        whose heartbeats are fresh (child, external; each says when it last ticked). Status, health and metrics
        all read this, so they agree whichever process computes."""
        settings, scheduler = self.settings, self.scheduler
        if settings.consolidation_worker == "inline":
            return {"enabled": settings.consolidation_scheduler_enabled, "runs_in": "inline",
                    "alive": scheduler.alive, "tick_seconds": scheduler.tick_seconds,
                    "last_tick_at": scheduler.last_tick_at.isoformat() if scheduler.last_tick_at else None,
                    "last_error": scheduler.last_error}
        workers = self.run_queue().workers(max_age_seconds=WORKERS_FRESH_SECONDS)
        ticks = sorted(w["last_tick_at"] for w in workers if w.get("last_tick_at"))
        errors = [w["last_error"] for w in workers if w.get("last_error")]
        return {"enabled": settings.consolidation_scheduler_enabled, "runs_in": settings.consolidation_worker,
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
    embedder = embedder or HashingEmbedder(settings.vector_size)
    summarizer = summarizer_for(settings)

    remote_vectors = remote_vectors_of(links) if links is not None and links.vectors_socket is not None else None

    def build(name: str, connect: Callable[[], Falkor]) -> GraphServices:
        stores = open_stores(settings, name, connect, remote_vectors)
        engine = ConsolidationEngine(settings, stores, embedder, summarizer, clock)
        try:
            # Deletions and merges a crash interrupted are finished before the graph serves anything.
            engine.complete_interrupted()
        except StoreUnavailable:
            pass  # a store still down: the scheduler's ticks finish them once it answers

        memories = MemoryService(settings, stores, embedder, engine.lifecycle, engine.refresh_summaries, clock)
        try:
            memories.requests.complete_pending()  # supersessions and purges a crash interrupted
        except StoreUnavailable:
            pass
        queued = settings.consolidation_worker != "inline" and not worker
        runner = QueuedRuns(engine, RunQueue(connect())) if queued else InlineRuns(engine)
        return GraphServices(name, stores, engine, memories, InspectionStore(stores.graph.falkor), runner)

    def connect() -> Falkor:
        if links is not None and links.falkordb_socket:
            falkor = Falkor.attach(links.falkordb_socket, settings.falkordb_graph)
        else:
            falkor = Falkor.connect(settings)
        if worker:
            falkor.readers = WORKER_SCAN_READERS
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
    return Services(settings, graphs, scheduler, MemoryChecks(settings, clock))


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
