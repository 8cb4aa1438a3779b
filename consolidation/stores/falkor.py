"""The FalkorDB connection (embedded falkordblite or a server) and the few ways the service queries it."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import redis
from falkordb import Graph
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from falkordb.exceptions import SchemaVersionMismatchException
from falkordb.helpers import stringify_param_value

from ..demand import Demand
from ..errors import StoreUnavailable
from ..settings import Settings
from ..slices import array_of, columns_of, joined_columns
from ..timeutil import epoch_seconds
from .embedded_falkor import SOCKET_TIMEOUT_SECONDS, shut_down_embedded, start_embedded

log = logging.getLogger(__name__)

# While anyone waits (Demand.waiting), writes are chunked so that no single query holds FalkorDB for long: a
# write holds the whole server (every client's command waits for it, reads of other graphs and plain Redis
# commands too), so its length is every request's worst wait. WRITE_CHUNK is the most rows one write takes; the
# next chunk is sized from the rows per second of the last one so that it lasts about WRITE_TARGET_SECONDS (at 1M
# memories 500 score rows took 20-45 ms and 200 merge records 268 ms, and status requests, each waiting behind
# one, missed 50 ms). While nobody waits, chunks are IDLE_CHUNK_FACTOR times larger and last up to
# IDLE_WRITE_SECONDS: fewer round trips and query plans for a bulk load, and a request that comes waits for at
# most one of them.
WRITE_CHUNK = 500
WRITE_TARGET_SECONDS = 0.01
WRITE_FEWEST_ROWS = 20
IDLE_CHUNK_FACTOR = 10
IDLE_WRITE_SECONDS = 0.25
PACES_KEPT = 512
# Reads over every memory go a range of node ids at a time: one 100k-row reply holds the server while it is
# written and this process's GIL while hiredis parses it (hundreds of ms), and status requests wait behind it.
# Two short pages asked at once keep two of the server's reader threads busy and no reply long: on 100k
# memories the full run took 9.7 s against 11.0 s reading one 10k page at a time. More at once gained little and
# made every status request queue behind them (p50 9 -> 21 ms).
SCAN_PAGE = 2500
TOP_SEARCH_IDS = 1024  # the ids below the top where a label's highest id is looked for first
SCAN_READERS = 2
# A worker process (runs apart from serving) asks one page at a time: FalkorDB answers reads on as many threads
# as the server has cores (two here), and a request's read queued behind two pages waited for one of them.
WORKER_SCAN_READERS = 1
CONNECT_TIMEOUT_SECONDS = 3
# A dropped connection is retried twice within about a quarter second: that rides over a server restart's
# first refused connect, yet an outage is reported (as 503) at once instead of after seconds of back-off.
SERVER_RETRY = Retry(ExponentialBackoff(cap=0.2, base=0.05), retries=2)
OUTAGE_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, OSError)
# FalkorDB logs each query with its parameters (every memory's text among them) in a stream key beside the graph,
# telemetry{<graph>}, which is saved with the data; the last MAX_INFO_QUERIES queries are kept. The service turns
# the log off (0 queries kept) instead of scrubbing it: a scrub after each write would race the server's
# asynchronous logger, and the stream would be in every snapshot taken meanwhile.
QUERY_LOG_OFF = (("MAX_INFO_QUERIES", "0"), ("CMD_INFO", "no"))
QUERY_LOG_KEY = "telemetry{{{graph}}}"


def _as_read(rows: list[list[Any]]) -> list[list[Any]]:
    """A page's rows as they were read (_read_pages' default shape)."""
    return rows


class Falkor:
    """One FalkorDB graph reached through a redis client; every store error becomes StoreUnavailable."""

    def __init__(self, client: redis.Redis, graph_name: str, closer: Callable[[], None] | None = None,
                 readers: int = SCAN_READERS, demand: Demand | None = None):
        self.client = client
        self.graph_name = graph_name
        self.readers = readers  # how many pages of a scan are asked at once
        self.demand = demand or Demand()  # whether requests wait: writes are paced, a run's calls give way
        self._graph = Graph(client, graph_name)
        self._closer = closer
        self._paces: dict[tuple[str, int], WritePace] = {}  # by query and largest chunk: learnt once, kept

    @classmethod
    def connect(cls, settings: Settings) -> Falkor:
        """Connect to the configured server, or start the embedded FalkorDB under the data directory."""
        if settings.falkordb_host:
            password = settings.falkordb_password.get_secret_value() if settings.falkordb_password else None
            client = redis.Redis(
                host=settings.falkordb_host, port=settings.falkordb_port, password=password,
                decode_responses=True, socket_timeout=SOCKET_TIMEOUT_SECONDS,
                socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, health_check_interval=30, retry=SERVER_RETRY,
            )
            return cls(client, settings.falkordb_graph, client.close)
        return cls._embedded(settings.data_dir / "falkordb", settings.falkordb_graph)

    @classmethod
    def _embedded(cls, directory: Path, graph_name: str) -> Falkor:
        client = start_embedded(directory)
        return cls(client, graph_name, lambda: shut_down_embedded(client))

    @classmethod
    def attach(cls, socket_path: str, graph_name: str) -> Falkor:
        """Connect to the embedded FalkorDB another process of this service started (its Unix socket): the
        worker child's way in. Closing it leaves that server running."""
        client = redis.Redis(unix_socket_path=socket_path, decode_responses=True,
                             socket_timeout=SOCKET_TIMEOUT_SECONDS, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS)
        return cls(client, graph_name, client.close)

    @property
    def socket_path(self) -> str | None:
        """The Unix socket of an embedded server (None for a server reached over TCP)."""
        return getattr(self.client, "socket_file", None)

    def command(self, *args: Any) -> Any:
        """A plain Redis command on the server (the run queue's list, the workers' heartbeats)."""
        return self._call(self.client.execute_command, *args)

    def rewrite_files(self, timeout: float = 120.0) -> None:
        """Write the server's files afresh from what it holds now (an RDB snapshot, then the append-only file
        rewritten), so that data deleted from the graph leaves the disk too."""
        self.command("SAVE")
        self.command("BGREWRITEAOF")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                return
            time.sleep(0.05)
        raise StoreUnavailable("graph", "the append-only file rewrite did not finish in time")

    def silence_query_log(self) -> bool:
        """Turn the server's log of queries off and drop what it logged of this graph (also on a server that
        restarted with its own settings: called whenever the stores are made ready). False, with a warning, when
        the server refuses the setting: then only forget_query_log, after an erase, keeps texts out of it."""
        silenced = True
        for name, value in QUERY_LOG_OFF:
            try:
                self._call(self.client.execute_command, "GRAPH.CONFIG", "SET", name, value)
            except redis.ResponseError as exc:
                silenced = False
                log.warning("FalkorDB refused GRAPH.CONFIG SET %s %s (%s): its query log keeps memory texts; set "
                            "it in FALKORDB_ARGS", name, value, exc)
        self.forget_query_log()
        return silenced

    def forget_query_log(self) -> None:
        """Drop this graph's query log and the server's slow-command log (both hold query parameters)."""
        self._call(self.client.delete, QUERY_LOG_KEY.format(graph=self.graph_name))
        try:
            self._call(self.client.execute_command, "SLOWLOG", "RESET")
        except redis.ResponseError as exc:  # a managed server may rename or forbid it
            log.warning("FalkorDB refused SLOWLOG RESET (%s): slow queries' parameters stay in its slow log", exc)

    def for_graph(self, graph_name: str) -> Falkor:
        """Another graph on the same server and connection; closing it leaves the connection open."""
        return Falkor(self.client, graph_name, readers=self.readers, demand=self.demand)

    def graph_names(self) -> list[str]:
        """Every graph the server holds (GRAPH.LIST)."""
        return list(self._call(self.client.execute_command, "GRAPH.LIST"))

    def close(self) -> None:
        if self._closer:
            self._closer()
            self._closer = None

    def ping(self) -> None:
        self._call(self.client.ping)

    def records(self, cypher: str, params: dict | None = None, *, read_only: bool = False) -> list[list[Any]]:
        """Run one query and return its rows as Python values (lists, booleans, floats, nodes)."""
        run = self._graph.ro_query if read_only else self._graph.query
        try:
            return self._call(run, cypher, params).result_set
        except SchemaVersionMismatchException:
            # The client's cached label/property names were stale; they were refreshed, so one retry suffices.
            return self._call(run, cypher, params).result_set

    def execute(self, cypher: str, params: dict | None = None, *, read_only: bool = False) -> list[list[Any]]:
        """Run one query in FalkorDB's plain reply format: fast to parse, but floats and booleans are text."""
        command = "GRAPH.RO_QUERY" if read_only else "GRAPH.QUERY"
        reply = self._call(self.client.execute_command, command, self.graph_name, _with_params(cypher, params))
        # A reply is [header, rows, statistics] when the query returns something, else just [statistics].
        return reply[1] if len(reply) == 3 else []

    def scan_memories(self, where: str, returns: str, params: dict | None = None, then: str = "",
                      kinds: Sequence[str] | None = None) -> list[Any]:
        """`MATCH (m:Memory) WHERE <where> <then> RETURN <returns>` as columns, read a page of node ids at a
        time (`then`: a further MATCH from each memory). With `kinds` (one per column, see typed), each page's
        columns are converted as the page arrives: a scan of a million memories then never holds every value it
        read as a Python object (forget's seventeen columns: about half a gigabyte)."""
        shape = columns_of if kinds is None else lambda rows: typed(columns_of(rows), kinds)
        return joined_columns(self._read_pages(_paged(where, returns, then), [
            {**(params or {}), **page} for page in self._id_ranges(SCAN_PAGE)], shape))

    def scan_records(self, where: str, returns: str, then: str = "") -> list[list[Any]]:
        """scan_memories as rows of parsed values (lists, maps): for the few scans that return them."""
        query = _paged(where, returns, then)
        return [row for page in self._id_ranges(SCAN_PAGE) for row in self.records(query, page, read_only=True)]

    def scan_nodes(self, label: str, then: str, returns: str) -> list[list[Any]]:
        """`MATCH (n:<label>) <then> RETURN <returns>` over every node of the label (plain reply), read a page of
        node ids at a time as scan_memories reads memories; `then` may filter (WITH ... WHERE)."""
        query = f"MATCH (n:{label}) WHERE id(n) >= $first AND id(n) < $after {then} RETURN {returns}"
        pages = self._read_pages(query, list(self._id_ranges(SCAN_PAGE, label)))
        return [row for page in pages for row in page]

    def read_chunks(self, cypher: str, items: Sequence[Any], size: int, key: str = "ids",
                    params: dict | None = None) -> list[list[Any]]:
        """`cypher` (plain reply) over `items` passed as `$<key>`, `size` at a time, its rows in order."""
        pages = self._read_pages(cypher, [{**(params or {}), key: list(part)} for part in chunked(items, size)])
        return [row for page in pages for row in page]

    def record_chunks(self, cypher: str, items: Sequence[Any], size: int, key: str = "ids") -> list[list[Any]]:
        """read_chunks as rows of parsed values (lists, maps, nodes), one chunk after the other."""
        return [row for part in chunked(items, size)
                for row in self.records(cypher, {key: list(part)}, read_only=True)]

    def _read_pages(self, cypher: str, parameter_sets: Sequence[dict], shape: Callable = _as_read) -> list:
        """The read query run once per parameter set (plain reply): each set's rows as `shape` makes them, in
        order. FalkorDB answers reads on several threads: asking `readers` at once keeps them busy, and each
        page is shaped by the thread that read it while the server answers the next."""
        if len(parameter_sets) <= 1:
            return [shape(self.execute(cypher, parameters, read_only=True)) for parameters in parameter_sets]
        give_way = self.demand.give_way if not self.demand.inside_request() else lambda: None

        def page(parameters: dict) -> Any:
            give_way()  # each page of a run's scan lets the requests in flight go first
            return shape(self.execute(cypher, parameters, read_only=True))

        with ThreadPoolExecutor(max_workers=self.readers, thread_name_prefix="read") as pool:
            return list(pool.map(page, parameter_sets))

    def write_pages(self, prefix: str, where: str, sets: str, params: dict | None = None) -> int:
        """`<prefix> MATCH (m:Memory) WHERE <where> SET <sets>` over every memory, a short range of node ids
        at a time (no index needed, no long write lock); returns how many memories it set."""
        query = (f"{prefix} MATCH (m:Memory) WHERE id(m) >= $first AND id(m) < $after AND ({where}) "
                 f"SET {sets} RETURN count(m)")
        highest = self.highest_node_id()
        done, first, pace = 0, 0, self._pace(query, WRITE_CHUNK)
        while highest is not None and first <= highest:
            after = first + self._next_rows(pace)
            with pace.timing(after - first):
                rows = self.execute(query, {**(params or {}), "first": first, "after": after})
            done += int(rows[0][0]) if rows else 0
            first = after
        return done

    def highest_node_id(self, label: str = "Memory") -> int | None:
        """The highest internal id of a node of this label (None: none).

        `max(id(n))` over all of them took 106 ms at 1M memories, before every scan, so the search starts near
        the top: ids run up to about the count of all nodes (a deleted node's id is given to the next), and this
        label's highest is at least its own count less one (ids are distinct). With other labels' nodes between
        (a FactTerms node beside each memory) the first look, the last 1,024 ids, nearly always finds it."""
        count = int(self.execute(f"MATCH (n:{label}) RETURN count(n)", read_only=True)[0][0])
        if count == 0:
            return None
        ceiling = int(self.execute("MATCH (n) RETURN count(n)", read_only=True)[0][0])
        reach, floor = TOP_SEARCH_IDS, None
        while floor != 0:  # the last look is over every id: nodes deleted since the count may leave none above
            floor = max(count - 1, ceiling - reach) if floor != count - 1 else 0
            top = self.execute(f"MATCH (n:{label}) WHERE id(n) >= $floor RETURN max(id(n))", {"floor": floor},
                               read_only=True)
            if top and top[0][0] is not None:
                return int(top[0][0])
            reach *= 16
        return None

    def _id_ranges(self, step: int, label: str = "Memory") -> Iterator[dict[str, int]]:
        """`$first` / `$after` parameters covering the node id of every node of a label, `step` ids at a time.
        (Ranges holding `step` nodes of the label instead, twice as wide at a million memories with their
        FactTerms nodes between, were tried: no faster beyond the noise, and the status p99 of the benchmark
        with them was 49.1 ms against 35-36 ms: docs/performance.md, issue 43, tenth part.)"""
        highest = self.highest_node_id(label)
        if highest is None:
            return
        for first in range(0, highest + 1, step):
            yield {"first": first, "after": first + step}

    def write_chunks(self, cypher: str, rows: Sequence[Any], chunk: int = WRITE_CHUNK,
                     **params: Any) -> list[list[Any]]:
        """Run `UNWIND $rows AS row ...` over the rows, a chunk of at most `chunk` at a time while anyone waits
        (fewer when the write is slow, more while nobody waits: see WritePace), with any further parameters;
        what the chunks return, in order."""
        done, pace, returned = 0, self._pace(cypher, chunk), []
        while done < len(rows):
            part = list(rows[done:done + self._next_rows(pace)])
            with pace.timing(len(part)):
                returned += self.execute(cypher, {**params, "rows": part})
            done += len(part)
        return returned

    def _pace(self, cypher: str, most: int) -> WritePace:
        """The pace of this write, as the last series of it left it (a new one starts at `most` rows)."""
        if len(self._paces) > PACES_KEPT:  # queries are a fixed set of texts; this only bounds a mistake
            self._paces.clear()
        return self._paces.setdefault((cypher, most), WritePace(most))

    def _next_rows(self, pace: WritePace) -> int:
        """The rows of a series' next write: short while anyone waits (after the requests in flight, for a
        run's writes), long while nobody does."""
        self.demand.give_way()
        return pace.next_rows(self.demand.waiting())

    def _call(self, function: Callable, *args):
        try:
            return function(*args)
        except redis.BusyLoadingError as exc:
            raise StoreUnavailable("graph", "FalkorDB is loading its data; try again shortly") from exc
        except OUTAGE_ERRORS as exc:
            raise StoreUnavailable("graph", f"FalkorDB is unreachable ({type(exc).__name__}: {exc})") from exc


class WritePace:
    """How many rows the next write of a series takes: from the rows per second of the last one, so that it
    lasts about WRITE_TARGET_SECONDS while anyone waits (at most `most` rows) or IDLE_WRITE_SECONDS while nobody
    does (at most IDLE_CHUNK_FACTOR times `most`), and never more than double the last."""

    def __init__(self, most: int):
        self.most = most
        self.rows = most  # the last write's rows
        self.rows_per_second: float | None = None  # of the last write (None: none measured yet)

    def next_rows(self, waiting: bool) -> int:
        target, most = (WRITE_TARGET_SECONDS, self.most) if waiting else (IDLE_WRITE_SECONDS,
                                                                         self.most * IDLE_CHUNK_FACTOR)
        if self.rows_per_second is None:
            return self.most
        wanted = int(self.rows_per_second * target)
        return max(min(WRITE_FEWEST_ROWS, most), min(wanted, 2 * self.rows, most))

    @contextmanager
    def timing(self, rows: int) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.took(rows, time.perf_counter() - started)

    def took(self, rows: int, seconds: float) -> None:
        self.rows = rows
        self.rows_per_second = rows / max(seconds, 1e-6)


def _paged(where: str, returns: str, then: str) -> str:
    """A scan's query over one page of node ids ($first, $after): no query holds the server for long."""
    return f"MATCH (m:Memory) WHERE id(m) >= $first AND id(m) < $after AND ({where}) {then} RETURN {returns}"


def chunked(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _with_params(cypher: str, params: dict | None) -> str:
    if not params:
        return cypher
    header = " ".join(f"{name}={cypher_literal(value)}" for name, value in params.items())
    return f"CYPHER {header} {cypher}"


def cypher_literal(value: Any) -> str:
    """The falkordb client's stringify_param_value, written out for the types rows are made of (its chain of
    isinstance tests was a fifth of writing a chunk of rows); any other type goes to the client's."""
    kind = type(value)
    if kind is str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if kind is list or kind is tuple:
        return "[" + ",".join([cypher_literal(item) for item in value]) + "]"
    if kind is dict:
        return "{" + ",".join([f"`{_map_key(key)}`:{cypher_literal(item)}" for key, item in value.items()]) + "}"
    if kind is int or kind is float or kind is bool:
        return str(value)
    return stringify_param_value(value)


def _map_key(key: Any) -> str:
    text = key.decode() if isinstance(key, bytes) else str(key)
    if not text or "`" in text:
        stringify_param_value({key: None})  # raises the client's error for a key Cypher cannot hold
    return text


def floats(column: Sequence[Any]) -> np.ndarray:
    """A column of numbers (returned as text) as float64, NaN where missing."""
    return array_of(["nan" if value is None else value for value in column], np.float64)


def booleans(column: Sequence[Any]) -> np.ndarray:
    """A column of booleans (returned as 'true'/'false'); missing counts as false."""
    return array_of([value is True or value == "true" for value in column], bool)


def integers(column: Sequence[Any]) -> np.ndarray:
    return array_of(column, np.int64)


def counts(column: Sequence[Any]) -> np.ndarray:
    """A column of whole numbers as float64 (the scoring formulas take them so)."""
    return array_of(column, np.float64)


def names(column: Sequence[Any]) -> list[Any]:
    """A column of a few distinct texts (memory types, scopes), each spelling held once: each value read is a new
    string."""
    return [sys.intern(value) if isinstance(value, str) else value for value in column]


# How a scan may read each column (Falkor.scan_memories' `kinds`, typed).
COLUMN_KINDS: dict[str, Callable[[list[Any]], Any]] = {
    "as read": list, "integers": integers, "counts": counts, "numbers": floats, "flags": booleans,
    "times": epoch_seconds, "names": names}


def typed(columns: list[list[Any]], kinds: Sequence[str]) -> list[Any]:
    """Each column converted as its kind (COLUMN_KINDS) says; no columns stay none."""
    return [COLUMN_KINDS[kind](column) for kind, column in zip(kinds, columns)] if columns else []
