"""Both vector store implementations behave the same: the embedded Qdrant Edge and qdrant-client (server path)."""

import uuid

import numpy as np
import pytest
from qdrant_client import QdrantClient

from consolidation.errors import StoreMismatch
from consolidation.stores.qdrant_edge import EdgeVectorStore
from consolidation.stores.qdrant_server import QdrantServerStore
from consolidation.stores.vectors import VectorPoint

SIZE = 8


@pytest.fixture(params=["edge", "server"])
def store(request, tmp_path):
    if request.param == "edge":
        built = EdgeVectorStore(tmp_path / "edge", SIZE)
    else:
        # qdrant-client's local mode runs the same client code paths the server store uses.
        built = QdrantServerStore(QdrantClient(location=":memory:"), "memories", SIZE)
        built.ensure_collection()
    yield built
    built.close()


def points(n, seed=0):
    rng = np.random.default_rng(seed)
    return [VectorPoint(str(uuid.UUID(int=rng.integers(2**63) + 1)), rng.standard_normal(SIZE).astype(np.float32),
                        {"relevance_score": 0.5, "archived": False, "type": "Context"}) for _ in range(n)]


def test_upsert_and_read_back_in_the_order_asked(store):
    batch = points(300)
    store.upsert(batch)
    asked = [batch[5].id, str(uuid.uuid4()), batch[2].id, batch[250].id]
    ids, matrix = store.vectors(asked)
    assert ids == [batch[5].id, batch[2].id, batch[250].id]
    for row, index in zip(matrix, (5, 2, 250)):
        expected = batch[index].vector / np.linalg.norm(batch[index].vector)
        assert row == pytest.approx(expected, abs=1e-5)
    assert store.count() == 300 and sorted(store.ids()) == sorted(p.id for p in batch)
    all_ids, all_vectors = store.all_vectors()
    assert sorted(all_ids) == sorted(p.id for p in batch) and all_vectors.shape == (300, SIZE)


def test_payload_mirrors_skip_missing_points(store):
    batch = points(3)
    store.upsert(batch)
    missing = str(uuid.uuid4())
    store.set_relevance([batch[0].id, missing, batch[2].id], [0.1, 0.2, 0.3])
    store.set_archived([batch[1].id, missing], True)
    store.set_archived([batch[2].id], True, state="merged")
    store.set_superseded([batch[0].id, missing], True)
    payloads = store.payloads([p.id for p in batch] + [missing])
    assert set(payloads) == {p.id for p in batch}
    assert payloads[batch[0].id]["relevance_score"] == pytest.approx(0.1) and payloads[batch[0].id]["superseded"]
    assert payloads[batch[1].id] == {"relevance_score": 0.5, "archived": True, "type": "Context",
                                     "state": "archived"}
    assert payloads[batch[2].id]["relevance_score"] == pytest.approx(0.3)
    assert (payloads[batch[2].id]["archived"], payloads[batch[2].id]["state"]) == (True, "merged")
    store.set_archived([batch[2].id], False)
    assert store.payloads([batch[2].id])[batch[2].id]["state"] == "active"


def test_delete_is_idempotent(store):
    batch = points(4)
    store.upsert(batch)
    store.delete([batch[0].id, batch[1].id, str(uuid.uuid4())])
    store.delete([batch[0].id])
    assert sorted(store.ids()) == sorted([batch[2].id, batch[3].id])
    assert store.vectors([]) [1].shape == (0, SIZE)


def test_an_existing_store_of_another_vector_size_is_refused(tmp_path):
    EdgeVectorStore(tmp_path / "edge", SIZE).close()
    with pytest.raises(StoreMismatch, match="VECTOR_SIZE=16"):
        EdgeVectorStore(tmp_path / "edge", 16)
    client = QdrantClient(location=":memory:")
    QdrantServerStore(client, "memories", SIZE).ensure_collection()
    with pytest.raises(StoreMismatch, match="size 8.*VECTOR_SIZE=16"):
        QdrantServerStore(client, "memories", 16).ensure_collection()


def test_the_embedded_store_refuses_a_second_process(tmp_path):
    import subprocess
    import sys

    first = EdgeVectorStore(tmp_path / "edge", SIZE)
    try:
        code = ("import sys; from pathlib import Path; from consolidation.stores.qdrant_edge import EdgeVectorStore\n"
                "from consolidation.errors import StoreUnavailable\n"
                "try:\n    EdgeVectorStore(Path(sys.argv[1]), 8)\nexcept StoreUnavailable as e:\n    print(e.detail)")
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "edge")], capture_output=True, text=True,
                             timeout=60)
        assert "another process holds the embedded Qdrant" in out.stdout, out.stderr
    finally:
        first.close()


def test_the_embedded_store_keeps_its_vector_copy_exact_across_restarts(tmp_path):
    batch = points(3000, seed=4)
    store = EdgeVectorStore(tmp_path / "edge", SIZE)
    store.upsert(batch)
    store.delete([p.id for p in batch[:100]])
    store.upsert([VectorPoint(batch[200].id, -batch[200].vector, {})])  # replaced vector
    expected_ids, expected = store.all_vectors()
    store.close()
    assert (tmp_path / "edge.vectors.npz").exists()

    reopened = EdgeVectorStore(tmp_path / "edge", SIZE)  # clean restart: the saved copy is used
    assert not (tmp_path / "edge.vectors.npz").exists()  # ...and removed, so a crash cannot reuse it stale
    ids, matrix = reopened.all_vectors()
    assert ids == expected_ids and np.array_equal(matrix, expected)
    # A crash: the shard's files are released but the process never gets to save its copy. (The recall index's
    # background reading of the shard stops first: closing the shard under it raced it, "Already borrowed".)
    reopened.index.stop()
    with reopened._lock:
        reopened._shard.close()
        reopened._shard = None

    rebuilt = EdgeVectorStore(tmp_path / "edge", SIZE)
    try:
        assert rebuilt._cache is None  # nothing saved: rebuilt from the shard on the first bulk read
        ids, matrix = rebuilt.all_vectors()
        order = np.argsort(ids)
        assert sorted(ids) == sorted(expected_ids)
        assert np.allclose(matrix[order], expected[np.argsort(expected_ids)], atol=1e-6)
        one = batch[200].id
        assert rebuilt.vectors([one])[1][0] == pytest.approx(-batch[200].vector / np.linalg.norm(batch[200].vector),
                                                            abs=1e-5)
    finally:
        rebuilt.close()
