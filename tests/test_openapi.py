"""Issue 11: /openapi.json is OpenAPI 3.1 and lists every route with its models, the /docs page works offline,
validation errors keep our shape, and the issue's hostile inputs are 400s."""

from __future__ import annotations

import logging
import re
import uuid
from html.parser import HTMLParser

import pytest
import schemathesis
from flask import Blueprint, jsonify
from pydantic import BaseModel

from consolidation.api import create_app
from consolidation.api.openapi import answers, api

SOME_ID = str(uuid.UUID(int=7))


def documented(client) -> dict:
    answer = client.get("/openapi.json")
    assert answer.status_code == 200 and answer.content_type == "application/json"
    return answer.json


def app_routes(app) -> set[tuple[str, str]]:
    """(method, OpenAPI path) of every rule the app routes, read from its url_map."""
    return {(method.lower(), re.sub(r"<(?:[^<>:]+:)?([^<>]+)>", r"{\1}", rule.rule))
            for rule in app.url_map.iter_rules() for method in rule.methods - {"HEAD", "OPTIONS"}}


def test_the_document_is_valid_openapi_3_1_and_lists_every_route(app, client):
    document = documented(client)
    assert document["openapi"].startswith("3.1")
    schemathesis.openapi.from_dict(document).validate()  # the OpenAPI 3.1 meta-schema
    listed = {(method, path) for path, item in document["paths"].items() for method in item}
    assert listed == app_routes(app) and len(listed) >= 14


def test_every_operation_documents_its_answers_with_schemas(app, client):
    document = documented(client)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation["responses"], (method, path)
            for status, answer in operation["responses"].items():
                if int(status) >= 400:  # every error is our JSON shape
                    assert set(answer["content"]) == {"application/json"}, (method, path, status)
                for media in answer.get("content", {}).values():
                    assert media["schema"], (method, path, status)
            if method == "post" and "{" not in path:  # the POSTs on one memory's id take no body
                assert operation["requestBody"]["content"], (method, path)
    schemas = document["components"]["schemas"]
    assert {"error", "detail", "field"} <= set(schemas["ErrorBody"]["properties"])
    assert set(schemas["ErrorBody"]["required"]) == {"error", "detail"}


def test_request_models_are_the_ones_the_routes_validate(client):
    document = documented(client)
    schemas = document["components"]["schemas"]

    def body_schema(path):
        schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        return schemas[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema

    consolidate = body_schema("/consolidate")
    assert set(consolidate["properties"]) == {"task", "mode", "dry_run", "full", "incremental", "wait", "scope", "trigger",
                                                "as_of"}
    assert consolidate["additionalProperties"] is False
    assert document["paths"]["/consolidate"]["post"]["requestBody"]["required"] is False
    # A deleted memory is gone, not missing: its 410 names its state and until when it can be restored.
    gone = document["paths"]["/memory/{memory_id}"]["get"]["responses"]["410"]["content"]["application/json"]
    deleted = schemas[gone["schema"]["$ref"].rsplit("/", 1)[1]]
    assert {"state", "deleted_at", "reason", "restorable_until"} <= set(deleted["properties"])
    stored = schemas["StoredMemory"]["properties"]
    assert {"state", "held_until"} <= set(stored)
    memory = body_schema("/memory")
    assert memory["required"] == ["content"] and memory["additionalProperties"] is False
    assert memory["properties"]["importance"]["anyOf"][0] == {"type": "number", "minimum": 0, "maximum": 1}
    flags = {p["name"]: p for p in document["paths"]["/memory/import"]["post"]["parameters"] if p["in"] == "query"}
    assert set(flags) == {"dry_run", "shift_to_now", "overwrite", "skip_bad_lines"}
    assert all(p["in"] == "query" and p["schema"]["type"] == "boolean" for p in flags.values())
    lines = document["paths"]["/memory/import"]["post"]["requestBody"]["content"]["application/x-ndjson"]
    assert {"relevance_score", "archived", "archived_at", "content"} <= set(lines["schema"]["items"]["properties"])
    metrics = document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain"]


def test_security_is_documented_as_the_routes_enforce_it(app, client):
    document = documented(client)
    schemes = document["components"]["securitySchemes"]
    assert (schemes["bearerToken"]["type"], schemes["bearerToken"]["scheme"]) == ("http", "bearer")
    assert (schemes["adminToken"]["type"], schemes["adminToken"]["in"], schemes["adminToken"]["name"]) == (
        "apiKey", "header", "X-Admin-Token")
    for path, item in document["paths"].items():
        for method, operation in item.items():
            public_file = "docs.js" if "/assets/" in path else "main.js" if "/dashboard/static/" in path else SOME_ID
            concrete = re.sub(r"\{[^}]+\}", public_file, path)
            status = getattr(client, method)(concrete).status_code  # no token
            if operation["security"]:
                assert operation["security"] == [{"bearerToken": []}, {"adminToken": []}], (method, path)
                assert status == 401, (method, path)
            else:
                assert status == 200, (method, path)


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.urls += [attributes[name] for name in ("src", "href") if name in attributes]


def test_the_docs_page_loads_and_everything_it_needs_is_served_here(client):
    page = client.get("/docs")
    assert page.status_code == 200 and page.content_type.startswith("text/html")
    html = page.get_data(as_text=True)
    assert "http://" not in html and "https://" not in html and 'data-spec-url="/openapi.json"' in html
    parser = _Assets()
    parser.feed(html)
    assert len(parser.urls) == 3  # the stylesheet, Swagger UI, and the script that starts it
    kinds = set()
    for url in parser.urls:
        assert url.startswith("/docs/assets/"), url
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.get_data()) > 100, url
        kinds.add(asset.mimetype)
    assert kinds == {"text/css", "text/javascript"}
    assert "SwaggerUIBundle" in client.get("/docs/assets/docs.js").get_data(as_text=True)
    licence = client.get("/docs/assets/swagger-ui/LICENSE")
    assert licence.status_code == 200 and b"Apache License" in licence.get_data()
    missing = client.get("/docs/assets/../api/openapi.py")
    assert missing.status_code == 404 and missing.json["error"] == "not_found"


@pytest.mark.parametrize("path, body, field", [
    ("/memory", {"content": "x", "importance": "high"}, "importance"),
    ("/memory", {"content": "x", "colour": "blue"}, "colour"),
    ("/memory", {"content": "x", "tags": ["ok", 7]}, "tags"),
    ("/memory", {"importance": 0.5}, "content"),
    ("/consolidate", {"task": "nap", "dry_run": True}, "task"),
    ("/consolidate", {"dry_run": "yes"}, "dry_run"),
    ("/reconcile", {"repair": 1}, "repair"),
])
def test_a_validation_error_has_our_shape_and_names_the_field(client, auth, path, body, field):
    answer = client.post(path, json=body, headers=auth)
    assert answer.status_code == 400
    assert set(answer.json) == {"error", "detail", "field"}
    assert answer.json["error"] == "invalid_input" and answer.json["field"] == field
    assert answer.json["detail"].startswith(f"{field}: ")


def test_a_bad_query_flag_is_a_400_naming_it(client, auth):
    answer = client.post("/memory/import?dry_run=perhaps", data='{"content": "x"}', headers=auth)
    assert answer.status_code == 400 and answer.json["field"] == "dry_run"
    answer = client.post("/memory/import?colour=1", data='{"content": "x"}', headers=auth)
    assert answer.status_code == 400 and answer.json["field"] == "colour"


def test_a_caller_without_a_token_learns_nothing_about_the_body(client):
    answer = client.post("/consolidate", json={"task": "nap"})
    assert answer.status_code == 401 and "field" not in answer.json


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_body_that_is_not_json_is_refused_before_any_run(client, auth, services, content_type):
    answer = client.post("/consolidate", data="task=decay&wait=true",
                         headers={**auth, "Content-Type": content_type})
    assert answer.status_code == 400 and answer.json["field"] == "body"
    assert services.engine.control.current_lease() is None and services.engine.status()["history"] == []


def test_issue_11_inputs_a_5000_level_nested_body_and_a_nul_in_content_are_400s(client, auth, services):
    nested = '{"content": "x", "tags": ' + "[" * 5000 + "]" * 5000 + "}"
    answer = client.post("/memory", data=nested, headers={**auth, "Content-Type": "application/json"})
    assert answer.status_code == 400 and answer.json["field"] == "body" and "nested" in answer.json["detail"]
    answer = client.post("/memory", json={"content": "before\x00after"}, headers=auth)
    assert answer.status_code == 400 and answer.json["field"] == "content" and "NUL" in answer.json["detail"]
    assert services.stores.graph.count_memories() == 0


class _Promised(BaseModel):
    promised: int


def test_an_answer_that_breaks_its_documented_model_is_logged_not_turned_into_a_500(settings, services, caplog):
    app = create_app(settings, services=services, start_scheduler=False)
    broken = Blueprint("broken", __name__)

    @broken.get("/broken")
    @api.validate(resp=answers(HTTP_200=_Promised))
    def answer_that_breaks_its_model():
        return jsonify({"promised": "not a number"})

    app.register_blueprint(broken)
    with caplog.at_level(logging.ERROR, logger="consolidation.api.openapi"):
        answer = app.test_client().get("/broken")
    assert answer.status_code == 200 and answer.json == {"promised": "not a number"}
    assert any("does not match its documented model" in record.getMessage() for record in caplog.records)
