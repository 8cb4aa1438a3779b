"""Reaching the current app's services, and the graph the current request addresses, for the route modules."""

from __future__ import annotations

from collections.abc import Callable

from flask import current_app, g, request

from ..errors import GRAPH_HEADER, UnknownGraph
from ..service import GraphServices, Services


def services() -> Services:
    """The services of the app handling the current request."""
    return current_app.extensions["consolidation"]


def graph(create: bool = False) -> GraphServices:
    """The graph the request names in the X-Graph header (none: the default graph). A graph under a prefix that
    does not exist yet is created only by a write that asks (`create`), and is a 404 otherwise."""
    if "graph" not in g:
        g.graph = services().graphs.get(request.headers.get(GRAPH_HEADER) or None, create=create)
    return g.graph



def graph_to_write(writes: Callable[[], bool]) -> GraphServices | None:
    """The graph a write addresses. One under a prefix that does not exist yet is made only when `writes` (the
    write's own checks, run without any store: raising what they refuse) says the write would write: a refused
    or dry write leaves no graph behind. None when the graph does not exist and the write would write nothing."""
    if "graph" not in g:
        registry = services().graphs
        name = request.headers.get(GRAPH_HEADER) or None
        try:
            g.graph = registry.get(name, create=False)
        except UnknownGraph:
            if name is None or not registry.selection.serves(name):
                raise
            if not writes():
                return None
            g.graph = registry.get(name, create=True)
    return g.graph
