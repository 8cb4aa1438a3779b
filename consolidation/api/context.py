"""Reaching the current app's services and reading request bodies, for the route modules."""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from ..errors import InvalidInput
from ..service import Services


def services() -> Services:
    """The services of the app handling the current request."""
    return current_app.extensions["consolidation"]


def json_body(required: bool = True) -> Any:
    """The request's JSON body; an empty body is {} when not required; anything unparsable is a 400."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            raise InvalidInput("body", "a JSON body is required")
        return {}
    body = request.get_json(silent=True)
    if body is None:
        raise InvalidInput("body", "is not valid JSON (send Content-Type: application/json)")
    return body


def only_fields(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("body", "must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(unknown[0], f"is not accepted here (accepted: {', '.join(sorted(allowed))})")
    return body
