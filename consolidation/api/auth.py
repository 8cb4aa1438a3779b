"""Token checks for the admin and memory routes: header only, constant-time comparison, fail closed; which token
asked (the admin's, the unbound agent token, or one bound to a scope) and the scope it is bound to."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from typing import Any

from flask import g, request

from ..errors import Forbidden, Unauthorized
from .context import services

QUERY_TOKEN_NAMES = ("token", "admin_token", "api_token", "api_key", "access_token", "key")
ADMIN, AGENT = "admin", "api"


def require_admin(view):
    """Only the admin token (Authorization: Bearer <token>, or X-Admin-Token) may call this route; a valid agent
    token is a 403."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        _check(admin_only=True)
        return view(*args, **kwargs)

    checked.required_token = "admin"  # what the OpenAPI document says of the route (x-token)
    return checked


def require_token(view):
    """The admin token, API_TOKEN, or a token of API_TOKENS (then only in its scope) may call this route."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        _check(admin_only=False)
        return view(*args, **kwargs)

    checked.required_token = "token"
    return checked


def _check(admin_only: bool) -> None:
    if any(name in request.args for name in QUERY_TOKEN_NAMES):
        raise Unauthorized("tokens are not accepted in the query string; send Authorization: Bearer <token>")
    given = _presented_token()
    if given is None:
        raise Unauthorized("missing token; send Authorization: Bearer <token>")
    who, bound = _holder(given)
    if who is None:
        raise Unauthorized("invalid token")
    if admin_only and who != ADMIN:
        raise Forbidden("this route takes the admin token; the token sent is an agent's")
    g.is_admin, g.bound_scope = who == ADMIN, bound


def _holder(given: str) -> tuple[str | None, dict[str, Any] | None]:
    """Whose token this is (ADMIN, AGENT, a scoped one's AGENT, or None) and the scope it is bound to."""
    settings = services().settings
    # The admin and agent tokens are both compared, without stopping early, so timing says nothing about which
    # matched; a scoped token is found by its digest (its text is never compared or kept as a key).
    admin = _same(given, settings.admin_api_token.get_secret_value())
    agent = settings.api_token is not None and _same(given, settings.api_token.get_secret_value())
    scoped = _scoped_tokens(settings.api_tokens.get_secret_value() if settings.api_tokens else "").get(
        hashlib.sha256(given.encode()).hexdigest())
    if admin:
        return ADMIN, None
    if agent:
        return AGENT, None
    if scoped is not None and _same(given, scoped[0]):
        return AGENT, scoped[1]
    return None, None


@functools.lru_cache(maxsize=4)
def _scoped_tokens(encoded: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """API_TOKENS by each token's digest: the token and its scope (parsed once per value of the setting)."""
    tokens = json.loads(encoded) if encoded else {}  # checked when the settings were read
    return {hashlib.sha256(token.encode()).hexdigest(): (token, scope) for token, scope in tokens.items()}


def is_admin() -> bool:
    """Whether the current request carries the admin token (for routes that show admins more)."""
    if "is_admin" not in g:
        given = _presented_token()
        g.is_admin = given is not None and _same(given, services().settings.admin_api_token.get_secret_value())
    return g.is_admin


def bound_scope() -> dict[str, Any] | None:
    """The scope the current request's token is bound to (None: the admin token, or the unbound API_TOKEN)."""
    return g.get("bound_scope")


def requester() -> str:
    """Who asks, as the audit records it: which token (never the token itself)."""
    return ADMIN if is_admin() else AGENT


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _presented_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    admin_header = request.headers.get("X-Admin-Token", "").strip()
    return admin_header or None
