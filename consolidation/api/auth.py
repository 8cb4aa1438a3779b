"""Token checks for the admin and memory routes: header only, constant-time comparison, fail closed."""

from __future__ import annotations

import functools
import hmac

from flask import g, request

from ..errors import Unauthorized
from .context import services

QUERY_TOKEN_NAMES = ("token", "admin_token", "api_token", "api_key", "access_token", "key")


def require_admin(view):
    """Only the admin token (Authorization: Bearer <token>, or X-Admin-Token) may call this route."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        _check(admin_only=True)
        return view(*args, **kwargs)

    return checked


def require_token(view):
    """The admin token, or API_TOKEN when one is set, may call this route."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        _check(admin_only=False)
        return view(*args, **kwargs)

    return checked


def _check(admin_only: bool) -> None:
    if any(name in request.args for name in QUERY_TOKEN_NAMES):
        raise Unauthorized("tokens are not accepted in the query string; send Authorization: Bearer <token>")
    given = _presented_token()
    if given is None:
        raise Unauthorized("missing token; send Authorization: Bearer <token>")
    settings = services().settings
    accepted = [settings.admin_api_token]
    if not admin_only and settings.api_token is not None:
        accepted.append(settings.api_token)
    # Compare against every accepted token, without stopping early, so timing says nothing about which matched.
    matches = [_same(given, token.get_secret_value()) for token in accepted]
    if not any(matches):
        raise Unauthorized("invalid token")
    g.is_admin = matches[0]


def is_admin() -> bool:
    """Whether the current request carries the admin token (for routes that show admins more)."""
    if "is_admin" not in g:
        given = _presented_token()
        g.is_admin = given is not None and _same(given, services().settings.admin_api_token.get_secret_value())
    return g.is_admin


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _presented_token() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    admin_header = request.headers.get("X-Admin-Token", "").strip()
    return admin_header or None
