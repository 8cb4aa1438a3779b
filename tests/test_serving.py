"""The real thing: gunicorn serving app:app on the embedded stores, as `make run` starts it."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.conftest import TOKEN

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gunicorn(data_dir, port, *extra):
    env = {**os.environ, "ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(data_dir), "PORT": str(port),
           "CONSOLIDATION_TICK_SECONDS": "3600"}
    return subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", *extra, "app:app"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_healthy(url, process, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        try:
            if requests.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or the worker is still booting
            pass
        time.sleep(0.2)
    raise AssertionError("service did not become healthy")


def test_gunicorn_serves_the_app_and_shuts_down_cleanly(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = gunicorn(tmp_path / "data", port)
    try:
        wait_healthy(url, process)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        created = requests.post(f"{url}/memory", json={"content": "served for real"}, headers=auth, timeout=10)
        assert created.status_code == 201
        run = requests.post(f"{url}/consolidate", json={"wait": True}, headers=auth, timeout=60)
        assert run.status_code == 200 and run.json()["success"]
        status = requests.get(f"{url}/consolidate/status", headers=auth, timeout=10).json()
        assert status["scheduler"]["alive"] and status["store_counts"]["in_sync"]
        assert requests.get(f"{url}/consolidate/status?token={TOKEN}", timeout=10).status_code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "consolidation scheduler stopped" in output
    assert TOKEN not in output  # not even the refused query-string attempt reaches the access log


def test_several_workers_on_embedded_stores_are_refused_with_a_clear_message(tmp_path):
    process = gunicorn(tmp_path / "data", free_port(), "--workers", "3")
    output, _ = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "3 workers need store servers" in output and "embedded stores belong to one process" in output
