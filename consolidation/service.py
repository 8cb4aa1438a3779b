"""Composition: builds each graph's stores, engine and memory service, and the process's scheduler, from the settings."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .embedding import Embedder, HashingEmbedder
from .engine import ConsolidationEngine
from .errors import (GRAPH_HEADER, Forbidden, GraphLimit, GraphRequired, InvalidInput, StoreMismatch, StoreUnavailable,
                     UnknownGraph)
from .graphs import GRAPH_NAME, GRAPH_NAME_RULE, GraphSelection
from .heap import bound_arenas
from .ingest import MemoryChecks, MemoryService
from .scheduler import ConsolidationScheduler
from .settings import Settings
from .stores import Stores, open_stores, store_health
from .stores.falkor import Falkor
from .stores.inspection import InspectionStore
from .summaries import HeuristicSummarizer, LLMSummarizer, Summarizer
from .timeutil import utc_now

log = logging.getLogger(__name__)


@dataclass
class GraphServices:
    """Everything that works on one graph: its stores (graph + collection), engine, memories and admin reads."""

    name: str
    stores: Stores
    engine: ConsolidationEngine
    memories: MemoryService
    inspection: InspectionStore

    def close(self) -> None:
        self.engine.wait_for_background(timeout=60)
        self.stores.close()


class GraphRegistry:
    """The graphs this process serves, each opened on first use and kept; one FalkorDB connection for all.

    Named graphs are always served. With a prefix (`tenant_*`), the graphs the server holds under it are
    discovered (`refresh`), and a request may address a new one: a write creates it, a read of a graph that
    does not exist yet is a 404 rather than an empty graph made by a typo.
    """

    def __init__(self, settings: Settings, build: Callable[[str, Callable[[], Falkor]], GraphServices]):
        self.selection: GraphSelection = settings.graph_selection
        self._settings = settings
        self._build = build
        self._graphs: dict[str, GraphServices] = {}
        self._known: list[str] = list(self.selection.names)
        self._connection: Falkor | None = None
        self._opening: dict[str, threading.Lock] = {}
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
            return self._open(name)

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

    def opened(self) -> list[GraphServices]:
        with self._lock:
            return [self._graphs[name] for name in sorted(self._graphs)]

    def all(self) -> list[GraphServices]:
        """Every served graph's services (opening those not opened yet)."""
        return [self.get(name) for name in self.names()]

    def connection(self) -> Falkor:
        with self._lock:
            if self._connection is None:
                self._connection = Falkor.connect(self._settings)
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


@dataclass
class Services:
    """A process's services: the graphs it serves and the scheduler that consolidates them."""

    settings: Settings
    graphs: GraphRegistry
    scheduler: ConsolidationScheduler
    checks: MemoryChecks  # a write's validation, run before a write makes a new graph

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

    def close(self) -> None:
        """Stop the scheduler, let background runs finish, then release the stores; safe to call twice."""
        self.scheduler.stop()
        self.graphs.close()


def build_services(settings: Settings, clock: Callable[[], datetime] = utc_now,
                   embedder: Embedder | None = None) -> Services:
    bound_arenas()  # before the stores and the scheduler start their threads
    embedder = embedder or HashingEmbedder(settings.vector_size)
    summarizer = summarizer_for(settings)

    def build(name: str, connect: Callable[[], Falkor]) -> GraphServices:
        stores = open_stores(settings, name, connect)
        engine = ConsolidationEngine(settings, stores, embedder, summarizer, clock)
        try:
            # Deletions and merges a crash interrupted are finished before the graph serves anything.
            engine.complete_interrupted()
        except StoreUnavailable:
            pass  # a store still down: the scheduler's ticks finish them once it answers

        memories = MemoryService(settings, stores, embedder, engine.lifecycle, clock)
        return GraphServices(name, stores, engine, memories, InspectionStore(stores.graph.falkor))

    graphs = GraphRegistry(settings, build)
    try:
        for name in settings.graph_selection.names:  # named graphs open at start: a bad store shows at once
            graphs.get(name)
    except Exception:
        graphs.close()
        raise
    scheduler = ConsolidationScheduler(graphs, settings.consolidation_tick_seconds, clock)
    return Services(settings, graphs, scheduler, MemoryChecks(settings, clock))


def summarizer_for(settings: Settings) -> Summarizer:
    heuristic = HeuristicSummarizer()
    if not settings.summarizer_llm_url:
        return heuristic
    api_key = settings.summarizer_llm_api_key.get_secret_value() if settings.summarizer_llm_api_key else None
    return LLMSummarizer(settings.summarizer_llm_url, settings.summarizer_llm_model, api_key,
                         settings.summarizer_llm_timeout_seconds, fallback=heuristic)
