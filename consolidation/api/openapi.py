"""OpenAPI 3.1 from the code (spectree): the decorator that declares each route's models, and the document.

A route declares its models where it is defined, below its auth decorator so a caller without a token learns
nothing about the body it would need:

    @blueprint.post("/reconcile")
    @require_admin
    @api.validate(json=ReconcileRequest, resp=answers(HTTP_200=ReconcileReport), security=ADMIN, tags=["..."])
    def reconcile(json: ReconcileRequest): ...

`answers` adds the error statuses every route can give. What spectree cannot say of itself (a JSONL body, a
text answer, an optional JSON body) is added to the operation with `@amend({...})`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import flask
from pydantic import ValidationError
from spectree import Response, SecurityScheme, SpecTree
from spectree.models import SecuritySchemeData
from spectree.plugins.flask_plugin import FlaskPlugin

from .. import __version__
from ..errors import GRAPH_HEADER
from ..graphs import GRAPH_NAME
from ..scopes import MAX_VALUE_CHARS
from ..validation import checked, invalid_input
from .models import ErrorBody, StoreUnavailableBody

log = logging.getLogger(__name__)

ADMIN = [{"bearerToken": []}, {"adminToken": []}]  # either header; the admin token only
TOKEN = ADMIN  # the same headers; API_TOKEN is accepted as well when it is set
PUBLIC: list[dict[str, list[str]]] = []
SECURITY_SCHEMES = [
    SecurityScheme(name="bearerToken", data=SecuritySchemeData(
        type="http", scheme="bearer", description="Authorization: Bearer <ADMIN_API_TOKEN or API_TOKEN>")),
    SecurityScheme(name="adminToken", data=SecuritySchemeData(
        type="apiKey", name="X-Admin-Token", field_in="header", description="the same token in X-Admin-Token")),
]


class CheckedFlaskPlugin(FlaskPlugin):
    """spectree's Flask plugin, with the strict JSON reader in front of the body model, our error shape for a
    failed validation, and answers that never turn into 500s for not matching their documented model."""

    def request_validation(self, request, query, json, form, headers, cookies):
        try:
            super().request_validation(request, query, None, form, headers, cookies)  # all but the body
        except ValidationError as exc:
            raise invalid_input(exc, query) from None
        if json is not None:
            # StrictRequest.get_json: a body that is not strict JSON is refused here, whatever its type claims;
            # no body at all is {} (the model's defaults, or its required fields named).
            body = request.get_json()
            request.context = request.context._replace(json=checked(json, {} if body is None else body))

    def validate_response(self, resp, resp_model, skip_validation, force_resp_serialize):
        response, mismatch = super().validate_response(resp, resp_model, skip_validation, force_resp_serialize)
        if mismatch is None:
            return response, None
        # The work is done: the caller gets its answer, and the log says that the documentation is wrong.
        log.error("response does not match its documented model path=%s errors=%s", flask.request.path, mismatch)
        return super().validate_response(resp, resp_model, True, force_resp_serialize)[0], None

api = SpecTree(
    "flask", backend=CheckedFlaskPlugin, title="Memory consolidation service", version=__version__,
    description="Decay, dedup, associations, clusters and safe forgetting of an AI agent's memories "
                "(FalkorDB + Qdrant). Every error is JSON {error, detail, field}.",
    security_schemes=SECURITY_SCHEMES, validation_error_status=400, validation_error_model=ErrorBody,
    naming_strategy=lambda model: model.model_config.get("title") or model.__name__,
    nested_naming_strategy=lambda _parent, child: child, annotations=True,
)


def answers(*plain: str, common_errors: bool = True, **code_models: Any) -> Response:
    """The route's answers (a model per status, or a status without a JSON body), plus by default the errors
    any route behind a token may give: bad input, no token, a token without the right, too large, a store
    down."""
    common = {"HTTP_400": ErrorBody, "HTTP_401": ErrorBody, "HTTP_403": ErrorBody, "HTTP_413": ErrorBody,
              "HTTP_503": StoreUnavailableBody} if common_errors else {}
    return Response(*plain, **{**common, **code_models})


def amend(fragment: dict[str, Any]) -> Callable:
    """Merge an OpenAPI fragment into the decorated route's operation (what spectree cannot declare)."""

    def decorate(view: Callable) -> Callable:
        view.openapi_amendment = fragment
        return view

    return decorate


def public_operation(tag: str, description: str, media_type: str, schema: dict, **errors: str) -> dict[str, Any]:
    """An amendment documenting a public route that is not JSON in, JSON out (a page, a file): its one answer
    of `media_type`, and its errors (status -> description) in our JSON shape."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    responses = {"200": {"description": description, "content": {media_type: {"schema": schema}}}}
    responses.update({status: {"description": text, "content": error} for status, text in errors.items()})
    return {"security": PUBLIC, "tags": [tag], "responses": responses}


def uuid_in_path(name: str, description: str) -> dict[str, Any]:
    """An amendment for a path parameter holding a UUID (the route refuses anything else with a 400)."""
    return {"parameters": [{"name": name, "in": "path", "required": True, "description": description,
                            "schema": {"type": "string", "format": "uuid"}}]}


GRAPH_BLUEPRINTS: set[str] = set()
GRAPH_PARAMETER = {
    "name": GRAPH_HEADER, "in": "header", "required": False, "schema": {"type": "string", "pattern": GRAPH_NAME.pattern},
    "description": "the graph (FALKORDB_GRAPHS) this request is about; without it, the default graph "
                   "(FALKORDB_GRAPH). Required when the service consolidates several graphs and none is the default.",
}
UNKNOWN_GRAPH = {"description": "no such graph (X-Graph names a graph this service does not serve)",
                 "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}


def addresses_graph(blueprint: flask.Blueprint) -> flask.Blueprint:
    """Mark a blueprint whose every route works on one graph: its operations document the X-Graph header."""
    GRAPH_BLUEPRINTS.add(blueprint.name)
    return blueprint


def openapi_document(app: flask.Flask) -> dict[str, Any]:
    """The app's OpenAPI 3.1 document: spectree's, with each route's amendments merged in.

    spectree builds its document once per process, from the first app that asks (it cannot build it twice):
    every app create_app makes has the same routes, so that is every app's document."""
    document = copy.deepcopy(api.spec)
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        fragment, token = _amendment(view), _required_token(view)
        graph = rule.endpoint.partition(".")[0] in GRAPH_BLUEPRINTS
        if fragment is None and not graph and token is None:
            continue
        path, _ = api.backend.parse_path(rule, None)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            operation = document["paths"].get(path, {}).get(method.lower())
            if operation is None:
                continue
            _merge(operation, fragment or {})
            if token is not None:
                operation["x-token"] = token  # admin: only the admin token; token: any of the service's tokens
            if graph:
                operation.setdefault("parameters", []).append(copy.deepcopy(GRAPH_PARAMETER))
                operation["responses"].setdefault("404", copy.deepcopy(UNKNOWN_GRAPH))
    _add_scope_properties(document, app.extensions["consolidation"].settings.consolidation_scope_properties)
    return document


def _add_scope_properties(document: dict[str, Any], names: tuple[str, ...]) -> None:
    """The scope properties the settings name, in the bodies that take them (a memory, an import's lines): no
    static model can list them, and without them the bodies' closed schemas would refuse what the service takes."""
    bodies = [document["paths"].get("/memory", {}).get("post", {}),
              document["paths"].get("/memory/import", {}).get("post", {})]
    for operation in bodies:
        for content in operation.get("requestBody", {}).get("content", {}).values():
            schema = content.get("schema", {})
            schema = schema.get("items", schema)
            for name in names:
                schema.setdefault("properties", {})[name] = {
                    "type": "string", "minLength": 1, "maxLength": MAX_VALUE_CHARS,
                    "description": "a scope property (CONSOLIDATION_SCOPE_PROPERTIES): printable characters; "
                                   "memories of different scopes are never consolidated together"}


def _required_token(view: Callable) -> str | None:
    """admin or token, as the route's auth decorator says (None: the route takes no token)."""
    return _marked(view, "required_token")


def _amendment(view: Callable) -> dict[str, Any] | None:
    return _marked(view, "openapi_amendment")


def _marked(view: Callable | None, attribute: str) -> Any:
    """What the view, or one it wraps (decorators in between), was marked with; None if none is."""
    while view is not None:
        if hasattr(view, attribute):
            return getattr(view, attribute)
        view = getattr(view, "__wrapped__", None)
    return None


def _merge(target: dict[str, Any], fragment: dict[str, Any]) -> None:
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
