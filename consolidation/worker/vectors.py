"""Embedded vectors for a worker child: the serving process (which alone may open its embedded Qdrant) answers
the child's vector calls over a Unix socket; matrices travel as raw bytes, in chunks."""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

import numpy as np

from ..demand import Demand
from ..errors import StoreUnavailable
from ..stores.vectors import Hit, SearchFilter, VectorPoint, VectorStore

log = logging.getLogger(__name__)

# Each call does a bounded amount of the holder's work: its request threads get the GIL back between chunks.
IDS_PER_CALL = 1000
VECTORS_PER_CALL = 2500
BYTES_PER_SEND = 8 * 1024 * 1024
# Long lists (ids) travel as several pickled messages: pickling a million ids at once held the holder's GIL for
# 340 ms (status requests waited that long), 50,000 at a time 10 ms (and 72 ms in all, not 340).
ITEMS_PER_SEND = 50_000
SWITCH_INTERVAL_SECONDS = 0.001
CALLS = frozenset({"upsert", "vectors", "all_vectors", "payloads", "set_relevance", "set_archived",
                   "set_superseded", "set_fields", "set_scopes", "search", "delete", "count", "ids", "ping",
                   "describe"})


class VectorServer:
    """The holder's side: a thread accepting the child's connections, one thread answering each; each call first
    gives way to the requests in flight (`demand`)."""

    def __init__(self, path: Path, authkey: bytes, vectors_of: Callable[[str], VectorStore],
                 demand: Demand | None = None):
        self.path, self.authkey, self.vectors_of = path, authkey, vectors_of
        self.demand = demand or Demand()
        path.unlink(missing_ok=True)
        self._listener = Listener(str(path), family="AF_UNIX", authkey=authkey)
        path.chmod(0o600)
        self._closed = threading.Event()
        # The child's writes run Python loops in this process (Qdrant Edge sets one payload per call, holding
        # the GIL): a request thread waiting for the GIL gets it after the switch interval, several times per
        # request. 1 ms instead of 5 keeps those waits short.
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        threading.Thread(target=self._accept, name="vector-server", daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection = self._listener.accept()
            except Exception:  # closed, or a caller without the key: keep serving the others
                if self._closed.is_set():
                    return
                log.warning("vector server refused a connection")
                continue
            threading.Thread(target=self._serve, args=(connection,), name="vector-server-call", daemon=True).start()

    def _serve(self, connection: Connection) -> None:
        with connection:
            while not self._closed.is_set():
                try:
                    graph, method, args = connection.recv()
                except (EOFError, OSError):
                    return
                # A call answered meanwhile (1,000 scores set, ~15 ms of Python) would share the GIL with the
                # requests: during a full run at a million memories, POST /recall at 20/s had p99 86-121 ms.
                self.demand.give_way()
                try:
                    self._answer(connection, self._call(graph, method, args))
                except StoreUnavailable as exc:
                    connection.send(("unavailable", exc.store, exc.detail))
                except Exception as exc:  # reported to the child as its call's failure
                    connection.send(("failed", f"{type(exc).__name__}: {exc}"))

    def _call(self, graph: str, method: str, args: tuple) -> Any:
        if method not in CALLS:
            raise ValueError(f"no vector call {method!r}")
        vectors = self.vectors_of(graph)
        if method == "describe":
            return {"vector_size": vectors.vector_size, "store_id": getattr(vectors, "store_id", graph)}
        return getattr(vectors, method)(*args)

    @staticmethod
    def _answer(connection: Connection, result: Any) -> None:
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], np.ndarray):
            ids, matrix = result
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            connection.send(("matrix", len(ids), matrix.shape))
            _send_list(connection, ids)
            data = memoryview(matrix).cast("B")
            for start in range(0, len(data), BYTES_PER_SEND):
                connection.send_bytes(data[start:start + BYTES_PER_SEND])
        elif isinstance(result, list) and len(result) > ITEMS_PER_SEND:
            connection.send(("list", len(result)))
            _send_list(connection, result)
        else:
            connection.send(("ok", result))


class RemoteVectors:
    """The child's VectorStore for one graph: every call answered by the serving process's own store."""

    def __init__(self, path: Path, authkey: bytes, graph: str):
        self.path, self.authkey, self.graph = path, authkey, graph
        self._idle: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        described = self._ask("describe")
        self.vector_size: int = described["vector_size"]
        self.store_id: str = described["store_id"]

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        for start in range(0, len(points), IDS_PER_CALL):
            self._ask("upsert", list(points[start:start + IDS_PER_CALL]))

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        found, parts = [], []
        for start in range(0, len(ids), VECTORS_PER_CALL):
            part_ids, part = self._ask("vectors", list(ids[start:start + VECTORS_PER_CALL]))
            found += part_ids
            parts.append(part)
        return found, (np.concatenate(parts) if parts else np.zeros((0, self.vector_size), np.float32))

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        return self._ask("all_vectors")

    def payloads(self, ids: Sequence[str]) -> dict[str, dict]:
        found: dict[str, dict] = {}
        for part in _parts(ids):
            found.update(self._ask("payloads", part))
        return found

    def set_relevance(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        scores = list(scores)
        for start in range(0, len(ids), IDS_PER_CALL):
            self._ask("set_relevance", list(ids[start:start + IDS_PER_CALL]), scores[start:start + IDS_PER_CALL])

    def set_archived(self, ids: Sequence[str], archived: bool, state: str | None = None) -> None:
        for part in _parts(ids):
            self._ask("set_archived", part, archived, state)

    def set_superseded(self, ids: Sequence[str], superseded: bool) -> None:
        for part in _parts(ids):
            self._ask("set_superseded", part, superseded)

    def set_scopes(self, ids: Sequence[str], scope: str) -> None:
        for part in _parts(ids):
            self._ask("set_scopes", part, scope)

    def set_fields(self, ids: Sequence[str], fields: Sequence[dict]) -> None:
        fields = list(fields)
        for start in range(0, len(ids), IDS_PER_CALL):
            self._ask("set_fields", list(ids[start:start + IDS_PER_CALL]), fields[start:start + IDS_PER_CALL])

    def search(self, vector: np.ndarray, limit: int, where: SearchFilter, with_payloads: bool = True) -> list[Hit]:
        return self._ask("search", np.asarray(vector, np.float32), limit, where, with_payloads)

    def delete(self, ids: Sequence[str]) -> None:
        for part in _parts(ids):
            self._ask("delete", part)

    def count(self) -> int:
        return self._ask("count")

    def ids(self) -> list[str]:
        return self._ask("ids")

    def ping(self) -> None:
        self._ask("ping")

    def close(self) -> None:
        while not self._idle.empty():
            self._idle.get().close()

    def _ask(self, method: str, *args: Any) -> Any:
        started = time.monotonic()
        try:
            return self._answer_of(method, *args)
        finally:
            # The call ran in the serving process, mostly holding its GIL (Qdrant Edge keeps it during a call):
            # waiting as long again leaves that process's requests the GIL at least half the time.
            time.sleep(time.monotonic() - started)

    def _answer_of(self, method: str, *args: Any) -> Any:
        with self._connection() as connection:
            connection.send((self.graph, method, args))
            answer = connection.recv()
            if answer[0] == "matrix":
                return _receive_list(connection, answer[1]), _receive_matrix(connection, answer[2])
            if answer[0] == "list":
                return _receive_list(connection, answer[1])
        if answer[0] == "unavailable":
            raise StoreUnavailable(answer[1], answer[2])
        if answer[0] == "failed":
            raise RuntimeError(f"the serving process's vector store failed: {answer[1]}")
        return answer[1]

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A connection of the pool (one per thread asking at once); a broken one is dropped, not returned."""
        try:
            connection = self._idle.get_nowait()
        except queue.Empty:
            try:
                connection = Client(str(self.path), family="AF_UNIX", authkey=self.authkey)
            except OSError as exc:
                raise StoreUnavailable("vectors", f"the serving process's vector store is gone ({exc})") from exc
        try:
            yield connection
        except (EOFError, OSError) as exc:
            connection.close()
            raise StoreUnavailable("vectors", f"the serving process's vector store is gone ({exc})") from exc
        self._idle.put(connection)


def _parts(ids: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), IDS_PER_CALL):
        yield list(ids[start:start + IDS_PER_CALL])


def _send_list(connection: Connection, items: Sequence[Any]) -> None:
    for start in range(0, len(items), ITEMS_PER_SEND):
        connection.send(list(items[start:start + ITEMS_PER_SEND]))


def _receive_list(connection: Connection, count: int) -> list[Any]:
    items: list[Any] = []
    while len(items) < count:
        items += connection.recv()
    return items


def _receive_matrix(connection: Connection, shape: tuple[int, int]) -> np.ndarray:
    matrix = np.empty(shape, dtype=np.float32)
    data = memoryview(matrix).cast("B")
    received = 0
    while received < len(data):
        received += connection.recv_bytes_into(data[received:])
    return matrix
