"""Pure: which FalkorDB graphs a service consolidates (FALKORDB_GRAPHS) and the Qdrant collection of each."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

# A graph name is also a Qdrant collection name and an embedded store's folder name: no separators, no dots.
GRAPH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
GRAPH_NAME_RULE = "1-64 letters, digits, '_' or '-', starting with a letter or digit"


def check_graph_name(name: str) -> str:
    """The name, if it can be a graph (and collection, and folder) name; ValueError naming the rule if not."""
    if not isinstance(name, str) or not GRAPH_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a graph name ({GRAPH_NAME_RULE})")
    return name


@dataclass(frozen=True)
class GraphSelection:
    """The graphs one service consolidates: named ones, plus every graph whose name starts with a prefix
    (`tenant_*`). The default graph is the one a request that names none addresses (None: it must name one)."""

    names: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    default: str | None = None
    collections: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, entries: Iterable[str], default_graph: str, default_collection: str,
              collections: Mapping[str, str]) -> GraphSelection:
        """From FALKORDB_GRAPHS entries (names or `prefix*`; none: just FALKORDB_GRAPH). The default graph keeps
        QDRANT_COLLECTION; QDRANT_COLLECTIONS names others' collections; every other graph's is its own name."""
        names, prefixes = [], []
        for entry in entries or (default_graph,):
            if entry.endswith("*"):
                prefixes.append(check_graph_name(entry[:-1]) if entry != "*" else "")
            else:
                names.append(check_graph_name(entry))
        selection = cls(tuple(dict.fromkeys(names)), tuple(dict.fromkeys(prefixes)))
        if not selection.serves(default_graph):
            return replace(selection, collections=dict(collections))
        return replace(selection, default=default_graph,
                       collections={default_graph: default_collection, **collections})

    @property
    def fixed(self) -> bool:
        """Whether the graphs are exactly the named ones (no prefix: nothing to discover on the server)."""
        return not self.prefixes

    def serves(self, name: str) -> bool:
        return bool(GRAPH_NAME.fullmatch(name)) and (
            # A prefix names graphs that go on after it: the bare prefix is a typo, not a tenant.
            name in self.names or any(name.startswith(prefix) and name != prefix for prefix in self.prefixes))

    def served(self, existing: Iterable[str]) -> list[str]:
        """The graphs to consolidate, given the graphs the server holds: every named one, and each existing
        graph a prefix matches, sorted."""
        return sorted({*self.names, *(name for name in existing if self.serves(name))})

    def collection(self, graph: str) -> str:
        return self.collections.get(graph, graph)


def parse_collections(value: str | Mapping[str, str]) -> dict[str, str]:
    """QDRANT_COLLECTIONS: `graph=collection` pairs, comma-separated; ValueError naming a malformed pair."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        pairs = []
        for part in (p.strip() for p in value.split(",") if p.strip()):
            graph, sep, collection = part.partition("=")
            if not sep:
                raise ValueError(f"{part!r} is not graph=collection")
            pairs.append((graph.strip(), collection.strip()))
    result = {}
    for graph, collection in pairs:
        check_graph_name(graph)
        check_graph_name(collection)
        if graph in result:
            raise ValueError(f"graph {graph!r} is named twice")
        result[graph] = collection
    if len(set(result.values())) != len(result):
        raise ValueError("two graphs share a collection")
    return result
