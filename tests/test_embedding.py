"""Embedders: the built-in sentence model, the providers behind HTTP (each against a local server speaking its
protocol, backed by the built-in model), the store's recorded model, the 409 across two models, and reembed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from flask import Flask, jsonify, request

from consolidation.embedding import HashingEmbedder, MiniLMEmbedder, build_embedder
from consolidation.embedding import minilm
from consolidation.errors import EmbeddingUnavailable
from consolidation.service import build_services
from consolidation.settings import SettingsError
from tests.conftest import TOKEN, add_memory, make_settings, unit

AUTH = {"Authorization": f"Bearer {TOKEN}"}
OPENAI_MODEL = "text-embedding-3-small"


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_the_built_in_model_places_paraphrases_together_and_other_topics_apart(model):
    doctor, physician, guitar = model.embed(["A doctor cared for someone who was sick",
                                             "The physician treated the patient for a fever",
                                             "A man is playing a guitar."])
    assert np.allclose(np.linalg.norm([doctor, physician, guitar], axis=1), 1.0, atol=1e-5)
    # The words shared are none: the hashing embedder sees two unrelated texts; the model sees one event.
    hashing = HashingEmbedder(384).embed(["A doctor cared for someone who was sick",
                                          "The physician treated the patient for a fever"])
    assert float(hashing[0] @ hashing[1]) < 0.15
    assert float(doctor @ physician) > 0.5
    assert float(doctor @ guitar) < 0.2
    again = model.embed(["A man plays the guitar."])[0]
    assert float(guitar @ again) > 0.9


def test_a_text_gets_the_same_vector_alone_and_padded_in_a_batch(model):
    short, long = "Coco is a dog.", "Maria adopted a puppy named Shadow from the shelter two weeks ago."
    alone = model.embed([short])[0]
    batched = model.embed([long, short, long])
    assert np.allclose(batched[1], alone, atol=1e-5)  # padding is masked out of attention and of the mean
    assert np.allclose(batched[0], batched[2], atol=1e-6)
    assert model.embed([]).shape == (0, 384)


def test_a_text_longer_than_the_model_reads_is_cut_not_refused(model):
    words = " ".join(["memory"] * 600)
    assert len(minilm._weights().tokenizer.encode(words).ids) == minilm.MAX_TOKENS
    assert model.embed([words]).shape == (1, 384)


# --- settings ----------------------------------------------------------------------------------------------

def test_auto_takes_the_first_provider_set_in_automems_order(tmp_path):
    def chosen(**values):
        return make_settings(tmp_path, embedding_provider="auto", vector_size=384, **values).chosen_embedding_provider

    assert chosen() == "builtin"
    assert chosen(ollama_base_url="http://localhost:11434") == "ollama"
    assert chosen(openai_api_key="k", ollama_base_url="http://localhost:11434") == "openai"
    assert chosen(voyage_api_key="v", openai_api_key="k") == "voyage"
    assert make_settings(tmp_path, embedding_provider="placeholder").embedding_provider == "hash"
    assert make_settings(tmp_path, embedding_provider="local", vector_size=384).embedding_provider == "fastembed"


def test_settings_refuse_what_no_provider_can_make(tmp_path):
    with pytest.raises(ValueError, match="VECTOR_SIZE=16"):
        make_settings(tmp_path, embedding_provider="builtin")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_settings(tmp_path, embedding_provider="openai", vector_size=384)


def test_fastembed_without_its_files_is_a_start_up_error_naming_where_it_looked(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    settings = make_settings(tmp_path, embedding_provider="fastembed", vector_size=384, fastembed_cache_path=models)
    with pytest.raises(SettingsError, match="bge-small-en-v1.5.*" + str(models)):
        build_embedder(settings)
    (models / "models--qdrant--bge-small-en-v1.5-onnx-q").mkdir()  # the files there: the package is what is missing
    with pytest.raises(SettingsError, match="fastembed package"):
        build_embedder(settings)


# --- providers behind HTTP ---------------------------------------------------------------------------------

class FakeProvider:
    """One server speaking OpenAI's, Voyage's and Ollama's embedding protocols, embedding with the built-in model;
    `failures` answers that many calls with 503 first. Every request body is kept."""

    def __init__(self, model: MiniLMEmbedder):
        self.model, self.requests, self.failures, self.lock = model, [], 0, threading.Lock()
        app = Flask("fake-provider")
        app.post("/v1/embeddings")(self.openai)
        app.post("/api/embeddings")(self.ollama)
        self.app = app

    def _answer_or_fail(self):
        with self.lock:
            self.requests.append({"body": request.get_json(), "auth": request.headers.get("Authorization")})
            if self.failures:
                self.failures -= 1
                return jsonify({"error": "busy"}), 503
        return None

    def openai(self):
        failed = self._answer_or_fail()
        if failed:
            return failed
        vectors = self.model.embed(request.get_json()["input"])
        return jsonify({"data": [{"index": i, "embedding": v.tolist()} for i, v in reversed(list(enumerate(vectors)))]})

    def ollama(self):
        failed = self._answer_or_fail()
        if failed:
            return failed
        return jsonify({"embedding": self.model.embed([request.get_json()["prompt"]])[0].tolist()})


@pytest.fixture
def provider(model, serve):
    fake = FakeProvider(model)
    fake.url = serve(fake.app)
    return fake


def openai_settings(tmp_path, provider, **values):
    return make_settings(tmp_path / "data", embedding_provider="openai", openai_api_key="sk-test-key",
                         openai_base_url=provider.url + "/v1", embedding_model=OPENAI_MODEL, vector_size=384,
                         **{"embedding_retries": 2, **values})


def test_each_http_provider_sends_its_protocol_and_gets_the_models_vectors(provider, model, tmp_path):
    texts = ["Maria adopted a dog.", "Caroline plays guitar.", "The weather is cold."]
    expected = model.embed(texts)
    openai = build_embedder(openai_settings(tmp_path, provider, embedding_batch_size=2))
    assert np.allclose(openai.embed(texts), expected, atol=1e-5)  # answered out of order: put back by index
    assert [r["body"]["input"] for r in provider.requests] == [texts[:2], texts[2:]]
    assert provider.requests[0]["body"]["model"] == OPENAI_MODEL
    assert "dimensions" not in provider.requests[0]["body"]  # asked only of OpenAI's own API, as AutoMem does
    assert provider.requests[0]["auth"] == "Bearer sk-test-key"
    provider.requests.clear()
    voyage = build_embedder(make_settings(tmp_path, embedding_provider="voyage", voyage_api_key="pa-test",
                                          voyage_base_url=provider.url + "/v1", vector_size=384))
    assert np.allclose(voyage.embed(texts), expected, atol=1e-5)
    assert provider.requests[0]["body"] == {"model": "voyage-4", "input": texts, "output_dimension": 384}
    provider.requests.clear()
    ollama = build_embedder(make_settings(tmp_path, embedding_provider="auto", ollama_base_url=provider.url,
                                          vector_size=384))
    assert ollama.model == "nomic-embed-text"
    assert np.allclose(ollama.embed(texts), expected, atol=1e-5)
    assert [r["body"] for r in provider.requests] == [{"model": "nomic-embed-text", "prompt": t} for t in texts]


def test_a_provider_that_fails_is_retried_then_named_in_a_503_and_nothing_is_written(provider, tmp_path,
                                                                                  client_for):
    services = build_services(openai_settings(tmp_path, provider, embedding_retries=1))
    try:
        client = client_for(services)
        provider.failures = 1  # one busy answer: the retry succeeds
        assert client.post("/memory", json={"content": "Maria adopted a dog."}, headers=AUTH).status_code == 201
        provider.failures = 10
        answer = client.post("/memory", json={"content": "Caroline plays guitar."}, headers=AUTH)
        assert answer.status_code == 503
        assert answer.get_json()["error"] == "embedding_unavailable"
        assert answer.get_json()["provider"] == "openai"
        assert "503" in answer.get_json()["detail"]
        assert services.stores.graph.count_memories() == 1
        assert services.stores.vectors.count() == 1
    finally:
        services.close()


def test_a_vector_of_the_wrong_size_is_refused_not_stored(provider, tmp_path):
    embedder = build_embedder(openai_settings(tmp_path, provider))
    embedder.dimension = 16  # the store holds 16-number vectors; the provider makes 384
    with pytest.raises(EmbeddingUnavailable, match="384 numbers for 1 texts; the store holds 16"):
        embedder.embed(["Maria adopted a dog."])


# --- the store's model -------------------------------------------------------------------------------------

def test_writes_and_text_recalls_go_to_the_configured_provider_and_record_its_model(provider, tmp_path,
                                                                                  client_for):
    services = build_services(openai_settings(tmp_path, provider))
    try:
        client = client_for(services)
        created = client.post("/memory", json={"content": "Maria adopted a dog named Coco."}, headers=AUTH)
        memory_id = created.get_json()["memory"]["id"]
        shown = client.get(f"/memory/{memory_id}", headers=AUTH).get_json()["memory"]
        assert shown["embedding_model"] == OPENAI_MODEL
        assert services.stores.vectors.payloads([memory_id])[memory_id]["embedding_model"] == OPENAI_MODEL
        recalled = client.post("/recall", json={"query": "Which pet does Maria have?", "k": 1}, headers=AUTH)
        assert recalled.get_json()["results"][0]["id"] == memory_id
        assert [r["body"]["model"] for r in provider.requests] == [OPENAI_MODEL, OPENAI_MODEL]
        status = client.get("/consolidate/status", headers=AUTH).get_json()["embedding"]
        assert status == {"store_model": OPENAI_MODEL, "store_model_known": True, "configured_model": OPENAI_MODEL,
                          "matches": True, "reembed_in_progress_to": None}
    finally:
        services.close()


def test_a_store_of_the_built_in_model_refuses_text_work_under_another_until_reembedded(provider, tmp_path,
                                                                                      client_for):
    built_in = build_services(make_settings(tmp_path / "data", embedding_provider="builtin", vector_size=384))
    try:
        client = client_for(built_in)
        ids = [client.post("/memory", json={"content": text}, headers=AUTH).get_json()["memory"]["id"]
               for text in ("Maria adopted a dog named Coco.", "Caroline moved to Boston.")]
        assert client.get(f"/memory/{ids[0]}", headers=AUTH).get_json()["memory"]["embedding_model"] == \
            "all-MiniLM-L6-v2"
    finally:
        built_in.close()
    services = build_services(openai_settings(tmp_path, provider))
    try:
        client = client_for(services)
        for path, body in (("/recall", {"query": "Where does Caroline live?"}),
                           ("/memory", {"content": "Caroline moved to Denver."})):
            refused = client.post(path, json=body, headers=AUTH)
            assert refused.status_code == 409, path
            assert refused.get_json()["error"] == "embedding_model_mismatch"
            assert refused.get_json()["store_model"] == "all-MiniLM-L6-v2"
            assert refused.get_json()["configured_model"] == OPENAI_MODEL
        assert services.stores.graph.count_memories() == 2  # the refused write wrote nothing
        assert provider.requests == []  # nor asked the provider for anything
        status = client.get("/consolidate/status", headers=AUTH).get_json()["embedding"]
        assert (status["store_model"], status["configured_model"], status["matches"]) == \
            ("all-MiniLM-L6-v2", OPENAI_MODEL, False)
        preview = client.post("/reembed", json={"dry_run": True}, headers=AUTH).get_json()
        assert (preview["memories_to_reembed"], preview["from_models"]) == (2, {"all-MiniLM-L6-v2": 2})
        assert services.stores.graph.get_memory(ids[0])["embedding_model"] == "all-MiniLM-L6-v2"  # dry: unchanged
        done = client.post("/reembed", json={}, headers=AUTH).get_json()
        assert (done["reembedded"], done["finished"], done["store_model_now"]) == (2, True, OPENAI_MODEL)
        recalled = client.post("/recall", json={"query": "Where does Caroline live?", "k": 1}, headers=AUTH)
        assert recalled.status_code == 200
        assert recalled.get_json()["results"][0]["id"] == ids[1]
        assert client.get(f"/memory/{ids[1]}", headers=AUTH).get_json()["memory"]["embedding_model"] == OPENAI_MODEL
        assert client.post("/reembed", json={}, headers=AUTH).get_json()["reembedded"] == 0
    finally:
        services.close()


def test_a_store_written_before_models_were_recorded_is_the_hashing_embedders(tmp_path, client_for):
    services = build_services(make_settings(tmp_path / "data", embedding_provider="builtin", vector_size=384))
    try:
        # What an earlier version wrote for a text it embedded itself: embedded_by, no embedding_model.
        add_memory(services, unit(np.ones(384)), content="Maria adopted a dog.", embedded_by="built-in")
        services.engine.space.forget()  # as if the store had been opened with it already there
        client = client_for(services)
        refused = client.post("/recall", json={"query": "Maria's dog"}, headers=AUTH)
        assert refused.status_code == 409
        assert refused.get_json()["store_model"] == "hash"
        # A client's vector names no model: recall by a vector is never refused.
        assert client.post("/recall", json={"embedding": [1.0] * 384}, headers=AUTH).status_code == 200
    finally:
        services.close()


def test_an_interrupted_reembed_leaves_text_work_refused_and_a_second_one_finishes(provider, tmp_path,
                                                                                 client_for, monkeypatch):
    hashed = build_services(make_settings(tmp_path / "data", vector_size=384))
    try:
        client = client_for(hashed)
        for i in range(5):
            assert client.post("/memory", json={"content": f"fact number {i}"}, headers=AUTH).status_code == 201
    finally:
        hashed.close()
    monkeypatch.setattr("consolidation.reembedding.CHUNK", 2)
    services = build_services(openai_settings(tmp_path, provider))
    try:
        client = client_for(services)
        provider.failures = 100  # dies after the first chunk: the provider goes away
        real = services.engine.lifecycle.embedder.embed
        calls = []

        def first_chunk_only(texts):
            calls.append(len(texts))
            if len(calls) > 1:
                raise EmbeddingUnavailable("openai", "gone")
            provider.failures = 0
            return real(texts)

        monkeypatch.setattr(services.engine.lifecycle.embedder, "embed", first_chunk_only)
        assert client.post("/reembed", json={}, headers=AUTH).status_code == 503
        refused = client.post("/recall", json={"query": "fact"}, headers=AUTH)
        assert refused.status_code == 409 and "has not finished" in refused.get_json()["detail"]
        half = services.engine.run(["dedup", "decay"])["result"]
        assert half["dedup"]["success"] is False and "has not finished" in half["dedup"]["error"]
        assert half["decay"]["success"] is True  # scores compare no vectors
        monkeypatch.setattr(services.engine.lifecycle.embedder, "embed", real)
        services.engine.space.forget()
        finished = client.post("/reembed", json={}, headers=AUTH).get_json()
        assert finished["memories_to_reembed"] == 3 and finished["finished"]  # the first chunk's 2 were done
        assert client.post("/recall", json={"query": "fact"}, headers=AUTH).status_code == 200
    finally:
        services.close()


def test_only_the_hashing_embedders_vectors_are_judged_on_its_thresholds(tmp_path):
    services = build_services(make_settings(tmp_path / "data", vector_size=384))
    try:
        hashed = add_memory(services, content="a", embedded_by="built-in", embedding_model="hash")
        legacy = add_memory(services, content="b", embedded_by="built-in")
        model = add_memory(services, content="c", embedded_by="built-in", embedding_model="all-MiniLM-L6-v2")
        client = add_memory(services, content="d")
        inputs = services.engine.lifecycle.hygiene.inputs()
        built_in = dict(zip([c.id if hasattr(c, "id") else c for c in inputs.ids], inputs.built_in))
        assert built_in == {hashed: True, legacy: True, model: False, client: False}
    finally:
        services.close()


def test_a_model_nobody_calibrated_is_judged_on_the_conservative_line(tmp_path):
    from consolidation.hygiene.judge import CLIENT_THRESHOLDS, UNCALIBRATED_THRESHOLDS
    from consolidation.tasks.dedup import client_thresholds

    builtin = make_settings(tmp_path, embedding_provider="builtin", vector_size=384)
    assert client_thresholds(builtin) == CLIENT_THRESHOLDS  # the built-in model is the calibrated one
    openai = make_settings(tmp_path, embedding_provider="openai", openai_api_key="k", vector_size=384)
    assert client_thresholds(openai) == UNCALIBRATED_THRESHOLDS
    assert UNCALIBRATED_THRESHOLDS.same_fact > CLIENT_THRESHOLDS.same_fact
    calibrated = make_settings(tmp_path, embedding_provider="openai", openai_api_key="k", vector_size=384,
                               consolidation_dedup_same_fact_similarity=0.8)
    assert client_thresholds(calibrated).same_fact == 0.8  # the deployment's own calibration wins
