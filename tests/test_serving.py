"""The real thing: gunicorn serving app:app on the embedded stores, as `make run` starts it."""

import json
import socket
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
        assert_odd_requests_answer_json(port)
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    assert "consolidation scheduler stopped" in output
    assert TOKEN not in output  # not even the refused query-string attempt reaches the access log


# What only a real server lets through (or refuses itself): raw bytes, malformed framing, oversized heads.
SERVER_ODD_REQUESTS = [
    (b"GET /memories/search?q=x HTTP/1.1\r\nX-Long: " + b"a" * 9000 + b"\r\n", 431, None),
    (b"GET /memories/search?q=x HTTP/1.1\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(120)), 431, None),
    (b"GET /memory/%FF HTTP/1.1\r\n", 400, "memory_id"),  # PATH_INFO holds the byte itself: not UTF-8
    (b"GET /memory/\xff HTTP/1.1\r\n", 400, None),  # a raw byte in the request line: gunicorn's refusal
    (b"GET //memory//x HTTP/1.1\r\n", 404, None),  # was a redirect page (HTML)
    # A malformed chunk: gunicorn raised its parse error inside the app's read of the body, a 500.
    (b"POST /recall HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}",
     400, "body"),
]


def assert_odd_requests_answer_json(port: int) -> None:
    for request, status, field in SERVER_ODD_REQUESTS:
        head, _, rest = request.partition(b"\r\n")
        sent = head + f"\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n".encode() + rest
        answer = raw_request(port, sent if b"\r\n\r\n" in rest else sent + b"\r\n")
        status_line, _, rest = answer.partition(b"\r\n")
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert int(status_line.split()[1]) == status, (request[:60], answer[:300])
        assert b"content-type: application/json" in headers.lower(), (request[:60], answer[:300])
        error = json.loads(body)
        assert error["error"] and error["detail"] and error.get("field") == field, (request[:60], error)


def raw_request(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(data)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


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
    assert run.json()["result"]["cluster"]["created"] == len(FakeChatModel.requests) >= 1
    assert took > 2.5 and "WORKER TIMEOUT" not in output
