"""Opening both stores from the settings, and making sure their schema exists before they are used."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import StoreMismatch, StoreUnavailable
from ..heartbeat import Heartbeat
from ..settings import Settings
from .author_marks import mark_existing
from .control import VectorBindingStore
from .falkor import Falkor
from ..scopes import Scoping
from .graph import GraphStore
from .vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass
class Stores:
    """The graph and vector stores of one process, opened once and shared by the API and the scheduler."""

    graph: GraphStore
    vectors: VectorStore
    embedded: bool
    binding: VectorBinding | None = None
    _ready: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure_ready(self) -> None:
        """Create indexes and the collection if missing, and mark once what we wrote before records and edges
        carried their author; a store that is down raises StoreUnavailable."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            self.graph.ensure_schema()
            mark_existing(self.graph.falkor)
            ensure_collection = getattr(self.vectors, "ensure_collection", None)
            if ensure_collection:
                ensure_collection()
            if self.binding is not None:
                self.binding.claim(on_lost=self.mark_stale)
            self._ready = True

    def mark_stale(self) -> None:
        """After an outage, check the schema again: a store that came back empty needs its indexes and collection."""
        self._ready = False

    def try_ready(self) -> bool:
        """ensure_ready, but a store outage is logged and reported instead of raised."""
        try:
            self.ensure_ready()
        except StoreUnavailable as exc:
            log.warning("stores not ready store=%s detail=%s", exc.store, exc.detail)
            return False
        return True

    def health(self) -> dict[str, dict]:
        """Whether each store answers a ping right now, with the reason when it does not."""
        return store_health({"graph": self.graph.falkor.ping, "vectors": self.vectors.ping})

    def close(self) -> None:
        closers = (self.binding.close,) if self.binding is not None else ()
        for close in (*closers, self.vectors.close, self.graph.falkor.close):
            try:
                close()
            except Exception:  # closing is best effort: one failing store must not keep the other open
                log.exception("closing a store failed")


def store_health(pings: dict[str, Callable[[], None]]) -> dict[str, dict]:
    """Ping each store: {"ok": true}, or {"ok": false, "detail": why}."""
    report = {}
    for name, ping in pings.items():
        try:
            ping()
            report[name] = {"ok": True}
        except StoreUnavailable as exc:
            report[name] = {"ok": False, "detail": exc.detail}
    return report


def open_stores(settings: Settings, graph: str, connect: Callable[[], Falkor],
                remote_vectors: Callable[[str], VectorStore] | None = None) -> Stores:
    """Open one graph's stores: its graph on the configured FalkorDB (through `connect`'s shared connection)
    and its Qdrant collection, on servers or embedded under the data directory (or, for a worker child,
    `remote_vectors`: its parent's embedded store)."""
    # The vector store first: the embedded Qdrant refuses a second process, which is how a CLI command
    # notices a running service before it touches the (shared) embedded FalkorDB server.
    if remote_vectors is not None:
        vectors = remote_vectors(graph)
    else:
        vectors = _open_vectors(settings, settings.graph_selection.collection(graph))
    try:
        falkor = connect().for_graph(graph)
    except Exception:
        vectors.close()
        raise
    binding = None
    if settings.falkordb_host and not settings.qdrant_url and remote_vectors is None:
        binding = VectorBinding(falkor, vectors.store_id, settings.consolidation_lease_seconds)
    scoping = Scoping(settings.consolidation_scope_properties)
    stores = Stores(GraphStore(falkor, scoping), vectors, embedded=settings.uses_embedded_store, binding=binding)
    try:
        stores.try_ready()
    except StoreMismatch:
        stores.close()
        raise
    return stores


class VectorBinding:
    """This process's claim that a FalkorDB server's graph is paired with its own embedded Qdrant.

    Two processes sharing a graph must share the vector store too; a second process that brings its own
    embedded Qdrant is refused (StoreMismatch) before it writes anything. The claim is renewed while the
    process runs and expires on its own if it dies, so a restart elsewhere waits at most one lease.
    """

    def __init__(self, falkor: Falkor, store_id: str, ttl: float):
        self.claims = VectorBindingStore(falkor)
        self.graph_name = falkor.graph_name
        self.store_id, self.ttl = store_id, ttl
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self._heartbeat: Heartbeat | None = None

    def claim(self, on_lost) -> None:
        other = self.claims.claim(self.store_id, self.holder, self.ttl)
        if other is not None:
            raise StoreMismatch(
                f"another process ({other}) uses FalkorDB graph {self.graph_name!r} with its own embedded Qdrant; "
                "processes that share a graph must share the vector store: set QDRANT_URL to one Qdrant server "
                f"for all of them (or give each its own FALKORDB_GRAPH). A process that died frees the graph "
                f"within {self.ttl:g} s."
            )
        if self._heartbeat is None:
            def lost() -> None:
                self._heartbeat = None
                on_lost()  # the next use of the stores claims again, and is refused if another process took over

            self._heartbeat = Heartbeat("vector-binding", self.ttl,
                                        lambda: self.claims.renew(self.store_id, self.ttl), lost)
            self._heartbeat.start()

    def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
            self.claims.release(self.store_id)


def refuse_shared_graphs(settings: Settings, falkor_for: Callable[[str], Falkor], names: Sequence[str]) -> None:
    """At start, what a request would be refused: a graph this process would serve (under a prefix too) that
    another live process pairs with its own embedded Qdrant. Nothing is claimed here: a graph is claimed when it
    is opened."""
    from .qdrant_edge import embedded_store_id

    for name in names:
        collection = settings.graph_selection.collection(name)
        own = embedded_store_id(settings.data_dir / "qdrant" / collection)
        other = VectorBindingStore(falkor_for(name)).other_holder(own or "")
        if other is not None:
            raise StoreMismatch(
                f"another process ({other}) uses FalkorDB graph {name!r} with its own embedded Qdrant; processes "
                "that share graphs must share the vector store: set QDRANT_URL to one Qdrant server for all of them")


def _open_vectors(settings: Settings, collection: str) -> VectorStore:
    if settings.qdrant_url:
        from .qdrant_server import QdrantServerStore

        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantServerStore.connect(
            settings.qdrant_url, api_key, collection, settings.vector_size
        )
    from .qdrant_edge import EdgeVectorStore

    return EdgeVectorStore(settings.data_dir / "qdrant" / collection, settings.vector_size)
