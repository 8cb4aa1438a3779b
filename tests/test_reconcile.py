"""Reconcile: the graph and the vector store must hold the same memories; what differs is shown and repaired."""

import numpy as np

from consolidation.stores.vectors import VectorPoint
from tests.conftest import add_memory, axis


def test_reconcile_reports_then_repairs_both_kinds_of_drift(services, client_for):
    kept = add_memory(services, content="both stores agree")
    lost_vector = add_memory(services, content="User prefers dark mode in the editor")
    services.stores.vectors.delete([lost_vector])
    orphan = "9b2f0d0c-6a55-4f44-8d1a-2d3c4b5a6f70"
    services.stores.vectors.upsert([VectorPoint(orphan, axis(3), {"relevance_score": 0.5})])
    client = client_for(services)

    status = client.get("/consolidate/status", headers=client.auth).json["store_counts"]
    assert status == {"graph_memories": 2, "vector_points": 2, "in_sync": True, "difference": 0}  # counts hide it

    report = client.post("/reconcile", json={}, headers=client.auth).json
    assert report["nodes_without_vectors"] == [lost_vector] and report["vectors_without_nodes"] == [orphan]
    assert report["repaired"] is False
    assert services.stores.vectors.payloads([orphan])  # a report changes nothing

    repaired = client.post("/reconcile", json={"repair": True}, headers=client.auth).json
    assert repaired["repaired"] is True
    assert services.stores.vectors.payloads([orphan]) == {}
    ids, vectors = services.stores.vectors.vectors([lost_vector, kept])
    assert ids == [lost_vector, kept]
    expected = services.memories.embedder.embed(["User prefers dark mode in the editor"])[0]
    assert np.allclose(vectors[0], expected, atol=1e-6)  # re-embedded from its content
    again = client.post("/reconcile", json={}, headers=client.auth).json
    assert again["nodes_without_vectors_total"] == 0 and again["vectors_without_nodes_total"] == 0


def test_reconcile_rejects_unknown_fields(client, auth):
    response = client.post("/reconcile", json={"fix": True}, headers=auth)
    assert response.status_code == 400 and response.json["field"] == "fix"
