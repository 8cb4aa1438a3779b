"""The graphs a process serves (GraphRegistry), each one's services (GraphServices) opened on first use."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .errors import (GRAPH_HEADER, Forbidden, GraphLimit, GraphRequired, InvalidInput, StoreMismatch,
                     UnknownGraph)
from .graphs import GRAPH_NAME, GRAPH_NAME_RULE, GraphSelection
from .stores.falkor import Falkor

if TYPE_CHECKING:
    from .engine import ConsolidationEngine, Run
    from .ingest import MemoryService
    from .settings import Settings
    from .stores import Stores
    from .stores.inspection import InspectionStore

log = logging.getLogger(__name__)
MIN_OPEN_SECONDS = 5.0  # a graph used this recently (a request on it may still run) stays open beyond the cap


class Runner(Protocol):
    """What the API asks of a graph's runs: begin one, wait for it, or let it go on alone."""

    def start(self, tasks: Sequence[str], dry_run: bool, trigger: str, scope: dict[str, str] | None,
              full: bool, incremental: bool, as_of: datetime | None = None) -> Run: ...

    def wait(self, run: Run) -> dict[str, Any]:
        """The finished run's record (GET /consolidate/runs/<id>'s shape)."""

    def detach(self, run: Run) -> str:
        """Let the run go on without the caller; the state to report now (running or queued)."""


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
