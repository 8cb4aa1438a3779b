"""The optional LLM summarizer: used when it answers, the heuristic summary whenever it does not."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from consolidation.service import build_services
from tests.conftest import make_settings
from tests.test_cluster import patterns, plant_cluster, run_cluster


class FakeChatModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions endpoint that records requests and answers as told."""

    status = 200
    delay_seconds = 0.0
    requests: list = []

    def do_POST(self):
        time.sleep(self.delay_seconds)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeChatModel.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        reply = {"choices": [{"message": {"content": "The team settled on PostgreSQL for billing."}}]}
        payload = json.dumps(reply).encode() if self.status == 200 else b"overloaded"
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_model():
    server = HTTPServer(("127.0.0.1", 0), FakeChatModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeChatModel.requests = []
    FakeChatModel.status = 200
    FakeChatModel.delay_seconds = 0.0
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def summarized_with(tmp_path, clock, url):
    settings = make_settings(tmp_path / "d", summarizer_llm_url=url, summarizer_llm_model="tiny",
                             summarizer_llm_api_key="sk-test", summarizer_llm_timeout_seconds=2)
    services = build_services(settings, clock=clock)
    try:
        plant_cluster(services, 6)
        run_cluster(services)
        ((_, props, _),) = patterns(services)
        return props
    finally:
        services.close()


def test_the_model_writes_the_summary_when_it_answers(tmp_path, clock, chat_model):
    props = summarized_with(tmp_path, clock, chat_model)
    assert props["content"] == "The team settled on PostgreSQL for billing." and props["summary_method"] == "llm"
    (request,) = FakeChatModel.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "tiny"
    assert "Use PostgreSQL for billing, note 0" in request["body"]["messages"][0]["content"]


def test_a_failing_model_falls_back_to_the_heuristic_summary(tmp_path, clock, chat_model):
    FakeChatModel.status = 503
    props = summarized_with(tmp_path, clock, chat_model)
    assert props["summary_method"] == "heuristic" and props["content"].startswith("6 related memories")


def test_an_unreachable_model_falls_back_too(tmp_path, clock):
    props = summarized_with(tmp_path, clock, "http://127.0.0.1:9/v1")
    assert props["summary_method"] == "heuristic"
