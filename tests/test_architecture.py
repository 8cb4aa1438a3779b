"""The package's imports: no cycle, and no module importing one of a higher layer (docs/architecture.md)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "consolidation"
# Top down: a module may import its own layer and those below, never one above. Each name is a top-level module
# or folder of the package; every module is in one layer (a new one must be placed here).
LAYERS = [
    {"wsgi", "gunicorn_conf", "__main__", "cli", "remote", "terminal"},
    {"api", "dashboard"},
    {"service"},
    {"worker"},
    {"registry", "engine", "metrics"},
    {"tasks", "ingest", "importing", "recall", "reports", "clusters"},
    {"lifecycle"},
    {"stores", "heartbeat"},
    # Pure rules (a module of a folder above may be named here: the lifecycle's state table is one).
    {"hygiene", "entities", "summaries", "embedding", "neighbours", "similarity", "scoring", "rules", "passes",
     "cadence", "revisits", "scopes", "identifiers", "memory", "validation", "json_input", "other_engine",
     "lifecycle.states"},
    {"settings", "graphs", "errors", "timeutil", "logs", "heap", "__init__"},
]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports() -> dict[str, set[str]]:
    """Each module's imports of the package's modules: at module level, in functions and for typing alike."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                prefix = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{prefix}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def layer_of(module: str) -> int:
    """The layer of the longest name in LAYERS the module is or is inside (`lifecycle.states`, then `lifecycle`)."""
    parts = module.split(".")[1:] or ["__init__"]
    for length in range(len(parts), 0, -1):
        named = ".".join(parts[:length])
        for rank, names in enumerate(LAYERS):
            if named in names:
                return rank
    raise AssertionError(f"{module} has no layer in LAYERS")


def test_the_package_imports_no_cycle():
    try:
        graphlib.TopologicalSorter(imports()).prepare()
    except graphlib.CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None


def test_every_module_has_a_layer_and_imports_none_above_its_own():
    graph = imports()
    upward = sorted(f"{module} imports {target}" for module, targets in graph.items() for target in targets
                    if layer_of(target) < layer_of(module))
    assert not upward, "\n".join(upward)


def test_the_checks_see_a_cycle_and_an_upward_import():
    """The walk itself: an import inside a function and one for typing count (both made cycles here before)."""
    graph = imports()
    assert "consolidation.scoring" in graph["consolidation.tasks.decay"]  # a module-level import
    assert "consolidation.service" in graph["consolidation.cli"]  # inside a function (the worker command's main)
    assert layer_of("consolidation.api.recall") < layer_of("consolidation.stores.graph")
    assert layer_of("consolidation.lifecycle.states") > layer_of("consolidation.lifecycle.service")
    graph["consolidation.scoring"].add("consolidation.tasks.decay")
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        return
    raise AssertionError("a cycle went unseen")


def test_no_cypher_outside_the_stores():
    """Queries are the stores' job: a string that reads as Cypher anywhere else is a store method waiting."""
    cypher = ("MATCH (", "UNWIND $", "MERGE (", "DETACH DELETE")
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "stores":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(c in node.value for c in cypher):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found
