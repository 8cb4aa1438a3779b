"""Reaching the current app's services, and the graph the current request addresses, for the route modules."""

from __future__ import annotations

from collections.abc import Callable

from flask import current_app, g, request

from ..errors import GRAPH_HEADER
from ..registry import GraphServices
from ..service import Services


def services() -> Services:
    """The services of the app handling the current request."""
    return current_app.extensions["consolidation"]


def graph() -> GraphServices:
    """The graph the request names in the X-Graph header (none: the default graph). A graph under a prefix that
    does not exist yet is a 404 here; only a write makes one (graph_to_write)."""
    if "graph" not in g:
        g.graph = services().graphs.get(_named(), create=False)
    return g.graph


def graph_to_write(writes: Callable[[], bool], admin: bool) -> GraphServices | None:
    """The graph a write addresses, made only if the write passes its checks (GraphRegistry.to_write) and the
    caller may make one (`admin`: the admin token)."""
    if "graph" not in g:
        found = services().graphs.to_write(_named(), writes, admin=admin)
        if found is None:
            return None
        g.graph = found
    return g.graph


def _named() -> str | None:
    return request.headers.get(GRAPH_HEADER) or None
