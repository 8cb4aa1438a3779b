"""The real thing: gunicorn serving app:app on the embedded stores, as `make run` starts it."""

import time

import requests

from tests.conftest import TOKEN
from tests.test_summaries_llm import FakeChatModel, chat_model  # noqa: F401 (a fixture)
from tests.processes import AUTH, ROOT, free_port, gunicorn, stop, wait_answering


def test_gunicorn_serves_the_app_and_shuts_down_cleanly(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = gunicorn(tmp_path / "data", port, VECTOR_SIZE="384")
    try:
        wait_answering(url, process)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        created = requests.post(f"{url}/memory", json={"content": "served for real"}, headers=auth, timeout=10)
        assert created.status_code == 201
        run = requests.post(f"{url}/consolidate", json={"wait": True}, headers=auth, timeout=60)
        assert run.status_code == 200 and run.json()["success"]
        status = requests.get(f"{url}/consolidate/status", headers=auth, timeout=10).json()
        assert status["scheduler"]["alive"] and status["store_counts"]["in_sync"]
        assert requests.get(f"{url}/consolidate/status?token={TOKEN}", timeout=10).status_code == 401
        # What gunicorn refuses before the app sees it is JSON too (a request line over its 4,094 bytes).
        too_long = requests.get(f"{url}/memories/search?q={'x' * 5000}", headers=auth, timeout=10)
        assert too_long.status_code == 414 and too_long.headers["Content-Type"] == "application/json"
        assert too_long.json()["error"] == "uri_too_long"
        # A NUL in a query parameter is refused, named (FalkorDB cannot take it in a parameter: it was a 500).
        nul = requests.get(f"{url}/memories/search?q=a%00b", headers=auth, timeout=10)
        assert nul.status_code == 400 and nul.json()["field"] == "q" and "NUL" in nul.json()["detail"]
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    assert "consolidation scheduler stopped" in output
    assert TOKEN not in output  # not even the refused query-string attempt reaches the access log


def test_several_workers_on_embedded_stores_are_refused_with_a_clear_message(tmp_path):
    process = gunicorn(tmp_path / "data", free_port(), "--workers", "3")
    output, _ = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "3 workers need store servers" in output and "embedded stores belong to one process" in output


def test_a_waited_run_longer_than_the_worker_timeout_is_not_killed(tmp_path, chat_model):
    # gunicorn kills a worker silent for --timeout seconds; a slow summarizer model makes clustering outlast it.
    FakeChatModel.delay_seconds = 2.5
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = gunicorn(tmp_path / "data", port, "--timeout", "2", VECTOR_SIZE="384", SUMMARIZER_LLM_URL=chat_model,
                       SUMMARIZER_LLM_TIMEOUT_SECONDS="10")
    try:
        wait_answering(url, process)
        sample = (ROOT / "samples" / "memories.jsonl").read_text()
        imported = requests.post(f"{url}/memory/import?shift_to_now=true", data=sample, headers=AUTH, timeout=30)
        assert imported.status_code == 200, imported.text
        started = time.monotonic()
        run = requests.post(f"{url}/consolidate", json={"task": "cluster", "wait": True}, headers=AUTH, timeout=120)
        took = time.monotonic() - started
    finally:
        output = stop(process)
    assert run.status_code == 200 and run.json()["success"], run.text
    assert run.json()["results"]["cluster"]["created"] == len(FakeChatModel.requests) >= 1
    assert took > 2.5 and "WORKER TIMEOUT" not in output
