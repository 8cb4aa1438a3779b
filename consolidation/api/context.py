"""Reaching the current app's services and reading request bodies, for the route modules."""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from ..errors import InvalidInput
from ..json_input import parse_json
from ..service import Services


def services() -> Services:
    """The services of the app handling the current request."""
    return current_app.extensions["consolidation"]


def json_body(required: bool = True) -> Any:
    """The request's JSON body, read strictly (json_input); an empty body is {} when not required."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            raise InvalidInput("body", "a JSON body is required")
        return {}
    if not request.is_json:
        raise InvalidInput("body", "must be JSON sent with Content-Type: application/json")
    return parse_json(raw)


def only_fields(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("body", "must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(unknown[0], f"is not accepted here (accepted: {', '.join(sorted(allowed))})")
    return body


def query_flags(allowed: set[str]) -> dict[str, bool]:
    """Boolean query parameters (true/false/1/0, default false); any other parameter or value is a 400."""
    unknown = sorted(set(request.args) - allowed)
    if unknown:
        raise InvalidInput(unknown[0], f"is not a query parameter here (accepted: {', '.join(sorted(allowed))})")
    flags = {}
    for name in allowed:
        value = request.args.get(name, "false").lower()
        if value not in ("true", "false", "1", "0"):
            raise InvalidInput(name, "must be true or false")
        flags[name] = value in ("true", "1")
    return flags
