"""A Qdrant server for tests that need one vector store shared by several processes.

No Qdrant server binary can be installed on this machine (not on PyPI, Debian or npm), so this serves
Qdrant's REST API on loopback from qdrant-client's own local engine: the service reaches it through the real
qdrant-client over real HTTP, exactly as it reaches a Qdrant server, and the points live in Qdrant's local
implementation. Only the endpoints QdrantServerStore uses are served; anything else answers 404, so a new
call shows up as a failing test rather than passing silently. `stop()` / `start()` make a real outage.
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask, jsonify, request
from pydantic import TypeAdapter
from qdrant_client import QdrantClient, models

from tests.loopback import LoopbackServer

VERSION = "1.20.0"


class QdrantRestServer(LoopbackServer):
    def __init__(self, port: int = 0):
        super().__init__(_app(self), port)
        self.local = QdrantClient(location=":memory:")
        self._lock = threading.Lock()  # the local engine is not meant for concurrent writers

    def call(self, method: str, *args, **kwargs) -> Any:
        with self._lock:
            return getattr(self.local, method)(*args, **kwargs)


def _app(server: QdrantRestServer) -> Flask:
    app = Flask("qdrant-rest")

    def ok(result: Any):
        return jsonify({"result": _plain(result), "status": "ok", "time": 0.0})

    def body(model):
        return TypeAdapter(model).validate_python(request.get_json())

    @app.get("/")
    def version():
        return jsonify({"title": "qdrant - vector search engine", "version": VERSION})

    @app.get("/collections/<name>/exists")
    def exists(name):
        return ok({"exists": server.call("collection_exists", name)})

    @app.put("/collections/<name>")
    def create(name):
        config = body(models.CreateCollection)
        return ok(server.call("create_collection", name, vectors_config=config.vectors))

    @app.get("/collections/<name>")
    def info(name):
        if not server.call("collection_exists", name):
            return jsonify({"status": {"error": f"Collection `{name}` doesn't exist!"}, "time": 0.0}), 404
        return ok(server.call("get_collection", name))

    @app.put("/collections/<name>/points")
    def upsert(name):
        operation = body(models.PointInsertOperations)
        return ok(server.call("upsert", name, points=operation.points if hasattr(operation, "points") else operation.batch))

    @app.post("/collections/<name>/points")
    def retrieve(name):
        asked = body(models.PointRequest)
        return ok(server.call("retrieve", name, asked.ids, with_payload=asked.with_payload,
                              with_vectors=asked.with_vector))

    @app.post("/collections/<name>/points/scroll")
    def scroll(name):
        asked = body(models.ScrollRequest)
        points, offset = server.call("scroll", name, limit=asked.limit, offset=asked.offset,
                                     with_payload=asked.with_payload, with_vectors=asked.with_vector)
        return ok({"points": points, "next_page_offset": offset})

    @app.post("/collections/<name>/points/payload")
    def set_payload(name):
        given = body(models.SetPayload)
        return ok(server.call("set_payload", name, payload=given.payload, points=given.points))

    @app.post("/collections/<name>/points/batch")
    def batch(name):
        given = body(models.UpdateOperations)
        return ok(server.call("batch_update_points", name, update_operations=given.operations))

    @app.post("/collections/<name>/points/delete")
    def delete(name):
        return ok(server.call("delete", name, points_selector=body(models.PointsSelector)))

    @app.put("/collections/<name>/index")
    def index(name):
        given = body(models.CreateFieldIndex)
        return ok(server.call("create_payload_index", name, given.field_name, field_schema=given.field_schema))

    @app.post("/collections/<name>/points/query")
    def query(name):
        asked = body(models.QueryRequest)
        found = server.call("query_points", name, query=asked.query, limit=asked.limit, query_filter=asked.filter,
                            with_payload=asked.with_payload, with_vectors=asked.with_vector)
        return ok(found)

    @app.post("/collections/<name>/points/count")
    def count(name):
        asked = body(models.CountRequest)
        return ok(server.call("count", name, exact=asked.exact if asked.exact is not None else True))

    return app


def _plain(value: Any) -> Any:
    """Models to JSON-ready values, recursively."""
    if isinstance(value, models.BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
