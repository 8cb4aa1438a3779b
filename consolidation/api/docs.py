"""GET /openapi.json and the GET /docs page (Swagger UI served from the package: it works offline).

These routes take no input, so spectree validates nothing here; `amend` documents them whole.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, current_app, jsonify, send_from_directory, url_for

from .openapi import amend, openapi_document, public_operation

blueprint = Blueprint("docs", __name__)
STATIC = Path(__file__).resolve().parent / "static"
PAGE = (STATIC / "docs.html").read_text(encoding="utf-8")


def _public(description: str, media_type: str, schema: dict, **errors: str) -> dict:
    return public_operation("documentation", description, media_type, schema, **errors)


@blueprint.get("/openapi.json")
@amend(_public("this document (OpenAPI 3.1)", "application/json", {"type": "object"}))
def openapi_json():
    """The OpenAPI 3.1 document of every route, generated from the routes' models."""
    extensions = current_app.extensions
    if "openapi_document" not in extensions:
        extensions["openapi_document"] = openapi_document(current_app)
    return jsonify(extensions["openapi_document"])


@blueprint.get("/docs")
@amend(_public("an interactive page of this API", "text/html", {"type": "string"}))
def docs_page():
    """Swagger UI over /openapi.json; its "Authorize" button takes the token for trying the admin routes."""
    page = PAGE.format(assets=url_for("docs.asset", name="").rstrip("/"), spec_url=url_for("docs.openapi_json"))
    return Response(page, mimetype="text/html")


@blueprint.get("/docs/assets/<path:name>")
@amend({**_public("the file (JavaScript, CSS or text)", "*/*", {"type": "string"}, **{"404": "no such file"}),
        "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"},
                        "description": "docs.js, or swagger-ui/ and one of its files (swagger-ui-bundle.js, "
                                       "swagger-ui.css, LICENSE, NOTICE)"}]})
def asset(name: str):
    """The page's script and the vendored Swagger UI files."""
    return send_from_directory(STATIC, name, max_age=3600)
