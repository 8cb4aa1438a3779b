"""The four processes of the check (FalkorDB server, vector stand-in, AutoMem, this service), started and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from consolidation.settings import child_environment
from tests.processes import FalkorServer, free_port  # the FalkorDB server the multi-process tests start

ROOT = Path(__file__).resolve().parent.parent
GRAPH = "memories"
COLLECTION = "memories"
VECTOR_SIZE = 384


def environment_without_store_settings() -> dict[str, str]:
    """This process's environment (as the service hands one to its children) without any store or consolidation
    setting: each started service gets its own, never the caller's."""
    return {k: v for k, v in child_environment({}).items()
            if not k.startswith(("CONSOLIDATION_", "FALKORDB_", "QDRANT_"))}


class Child:
    """One subprocess whose output goes to a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT):
        self.name, self.log_path = name, log
        self._log = open(log, "w", encoding="utf-8")
        # A process group of its own: stopping it stops whatever it started (gunicorn's workers).
        self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._log.close()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def wait_until(url: str, child: Child, seconds: float = 90, headers: dict | None = None) -> None:
    """Wait until `url` answers 200 (the child must stay alive meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not child.alive():
            raise RuntimeError(f"{child.name} exited:\n{child.tail()}")
        try:
            if requests.get(url, timeout=5, headers=headers).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{child.name} did not answer {url} in {seconds:.0f} s:\n{child.tail()}")


class Stack:
    """Everything the check runs, stopped together (also on an error or Ctrl-C: use it as a context manager)."""

    def __init__(self, work: Path, automem_src: Path, automem_python: Path, standin: Path, runner: Path,
                 service_root: Path = ROOT):
        self.work, self.automem_src, self.automem_python = work, automem_src, automem_python
        self.service_root = service_root
        self.standin, self.runner = standin, runner
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.falkor: FalkorServer | None = None
        self.children: list[Child] = []
        self.automem_token = "interop-automem-token"
        self.automem_admin = "interop-automem-admin-token"
        self.our_token = "interop-consolidation-admin-token"
        self.vectors_port = self.automem_port = self.our_port = 0
        self.our: Child | None = None

    def __enter__(self) -> Stack:
        signal.signal(signal.SIGTERM, _raise_interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def vectors_url(self) -> str:
        return f"http://127.0.0.1:{self.vectors_port}"

    @property
    def automem_url(self) -> str:
        return f"http://127.0.0.1:{self.automem_port}"

    @property
    def our_url(self) -> str:
        return f"http://127.0.0.1:{self.our_port}"

    def start(self) -> None:
        data = self.work / "falkordb"
        if data.exists():
            for old in data.iterdir():  # a fresh store every run
                if old.is_file():
                    old.unlink()
                else:
                    _remove_tree(old)
        self.falkor = FalkorServer(data).start()
        self.vectors_port = free_port()
        standin = Child("vector stand-in", [sys.executable, str(self.standin), str(self.vectors_port)],
                        child_environment({}), self.logs / "standin.log")
        self.children.append(standin)
        wait_until(self.vectors_url + "/", standin, 30)
        self.start_automem()
        self.start_ours()

    def automem_env(self) -> dict[str, str]:
        env = environment_without_store_settings()
        env.pop("PYTHONPATH", None)
        env.update({
            "FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": str(self.falkor.port), "FALKORDB_GRAPH": GRAPH,
            "QDRANT_URL": self.vectors_url, "QDRANT_COLLECTION": COLLECTION, "VECTOR_SIZE": str(VECTOR_SIZE),
            "EMBEDDING_PROVIDER": "placeholder", "AUTOMEM_API_TOKEN": self.automem_token,
            "ADMIN_API_TOKEN": self.automem_admin, "PORT": str(self.automem_port),
            "CONSOLIDATION_TICK_SECONDS": "100000", "SYNC_CHECK_INTERVAL_SECONDS": "100000", "OPENAI_API_KEY": "",
            # AutoMem's forget archives (never deletes) what it scores below 0.05 and does not protect
            "CONSOLIDATION_ARCHIVE_THRESHOLD": "0.05", "CONSOLIDATION_DELETE_THRESHOLD": "0",
        })
        return env

    def start_automem(self) -> None:
        self.automem_port = free_port()
        child = Child("AutoMem", [str(self.automem_python), str(self.runner), str(self.automem_src)],
                      self.automem_env(), self.logs / "automem.log", cwd=self.automem_src)
        self.children.append(child)
        wait_until(self.automem_url + "/health", child, 120)

    def our_env(self) -> dict[str, str]:
        env = environment_without_store_settings()
        env.update({
            "PYTHONPATH": str(self.service_root), "ADMIN_API_TOKEN": self.our_token,
            "DATA_DIR": str(self.work / "ourdata"),
            "FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": str(self.falkor.port), "FALKORDB_GRAPH": GRAPH,
            "QDRANT_URL": self.vectors_url, "QDRANT_COLLECTION": COLLECTION, "VECTOR_SIZE": str(VECTOR_SIZE),
            "PORT": str(self.our_port), "HOST": "127.0.0.1", "CONSOLIDATION_WORKER": "inline",
            "CONSOLIDATION_SCHEDULER_ENABLED": "false", "WEB_CONCURRENCY": "1", "LOG_LEVEL": "WARNING",
            # forgetting on, so that the old, unused memories the check stores are archived by our forget
            "CONSOLIDATION_ARCHIVE_THRESHOLD": "0.1", "CONSOLIDATION_DELETE_THRESHOLD": "0",
            "CONSOLIDATION_PROTECTED_TYPES": "Decision,Insight,Note",
            # every run a full pass: each of our runs reads every memory AutoMem wrote since
            "CONSOLIDATION_FULL_PASS_INTERVAL_SECONDS": "0",
        })
        return env

    def start_ours(self) -> None:
        if self.our is not None:
            self.our.stop()
            self.children.remove(self.our)
        self.our_port = free_port()
        (self.work / "ourdata").mkdir(exist_ok=True)
        self.our = Child("consolidation service",
                         [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "app:app"],
                         self.our_env(), self.logs / "consolidation.log", cwd=self.service_root)
        self.children.append(self.our)
        wait_until(self.our_url + "/health", self.our, 120)

    def stop(self) -> None:
        for child in reversed(self.children):
            try:
                child.stop()
            except Exception as exc:  # keep stopping the others
                print(f"stopping {child.name}: {exc}", file=sys.stderr)
        self.children.clear()
        if self.falkor is not None:
            self.falkor.kill()
            self.falkor = None


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _remove_tree(path: Path) -> None:
    for entry in path.iterdir():
        if entry.is_dir():
            _remove_tree(entry)
        else:
            entry.unlink()
    path.rmdir()
