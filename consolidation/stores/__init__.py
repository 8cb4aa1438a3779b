"""Opening both stores from the settings, and making sure their schema exists before they are used."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from ..errors import StoreUnavailable
from ..settings import Settings
from .falkor import Falkor
from .graph import GraphStore
from .vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass
class Stores:
    """The graph and vector stores of one process, opened once and shared by the API and the scheduler."""

    graph: GraphStore
    vectors: VectorStore
    embedded: bool
    _ready: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure_ready(self) -> None:
        """Create indexes and the collection if missing; a store that is down raises StoreUnavailable."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            self.graph.ensure_schema()
            ensure_collection = getattr(self.vectors, "ensure_collection", None)
            if ensure_collection:
                ensure_collection()
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
        report = {}
        for name, ping in (("graph", self.graph.falkor.ping), ("vectors", self.vectors.ping)):
            try:
                ping()
                report[name] = {"ok": True}
            except StoreUnavailable as exc:
                report[name] = {"ok": False, "detail": exc.detail}
        return report

    def close(self) -> None:
        for close in (self.vectors.close, self.graph.falkor.close):
            try:
                close()
            except Exception:  # closing is best effort: one failing store must not keep the other open
                log.exception("closing a store failed")


def open_stores(settings: Settings) -> Stores:
    """Connect to the configured servers, or open the embedded stores under the data directory."""
    # The vector store first: the embedded Qdrant refuses a second process, which is how a CLI command
    # notices a running service before it touches the (shared) embedded FalkorDB server.
    vectors = _open_vectors(settings)
    try:
        falkor = Falkor.connect(settings)
    except Exception:
        vectors.close()
        raise
    stores = Stores(GraphStore(falkor), vectors, embedded=settings.uses_embedded_store)
    stores.try_ready()
    return stores


def _open_vectors(settings: Settings) -> VectorStore:
    if settings.qdrant_url:
        from .qdrant_server import QdrantServerStore

        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantServerStore.connect(
            settings.qdrant_url, api_key, settings.qdrant_collection, settings.vector_size
        )
    from .qdrant_edge import EdgeVectorStore

    return EdgeVectorStore(settings.data_dir / "qdrant" / settings.qdrant_collection, settings.vector_size)
