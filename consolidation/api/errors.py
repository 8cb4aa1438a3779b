"""One JSON error shape for every failure: {"error": code, "detail": text, ...}, with the right status."""

from __future__ import annotations

import logging

from flask import Flask, current_app, jsonify
from werkzeug.exceptions import HTTPException

from ..errors import ServiceError, StoreUnavailable

log = logging.getLogger(__name__)


def register(app: Flask) -> None:
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)


def error_response(status: int, error: str, detail: str, **extra):
    response = jsonify({"error": error, "detail": detail, **extra})
    response.status_code = status
    return response


def _service_error(exc: ServiceError):
    if exc.status >= 500:
        log.warning("request failed error=%s detail=%s", exc.error, exc.detail)
    if isinstance(exc, StoreUnavailable):
        for graph in current_app.extensions["consolidation"].graphs.opened():
            graph.stores.mark_stale()
    return error_response(exc.status, exc.error, exc.detail, **{k: v for k, v in exc.extra.items() if v is not None or k in exc.shown_null})


def _http_error(exc: HTTPException):
    names = {413: "body_too_large", 404: "not_found", 405: "method_not_allowed", 400: "invalid_input"}
    return error_response(exc.code or 500, names.get(exc.code, "http_error"), exc.description or exc.name)


def _unexpected(exc: Exception):
    log.exception("unhandled error")
    return error_response(500, "internal_error", "an unexpected error occurred; the server log has the details")
