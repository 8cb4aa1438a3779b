"""The package's imports: no cycle, and no module importing one of a higher layer (docs/architecture.md)."""

from __future__ import annotations

import ast
import graphlib
import sys
import threading
import types
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
    {"tasks", "ingest", "importing", "recall", "reports", "clusters", "reembedding"},
    {"lifecycle", "vector_space"},
    {"stores", "heartbeat", "demand"},
    # Pure rules (a module of a folder above may be named here: the lifecycle's state table is one).
    {"hygiene", "entities", "summaries", "embedding", "neighbours", "similarity", "episodes", "scoring", "rules",
     "passes", "cadence", "revisits", "subjects", "scopes", "identifiers", "memory", "validation", "json_input",
     "other_engine", "lifecycle.states"},
    {"settings", "graphs", "errors", "timeutil", "logs", "heap", "slices", "__init__"},
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


# What may call back into a module already on the stack: a generator it handed down (consumed below) and the
# progress reporter the engine hands its tasks. Anything else is a layer reaching back up.
HANDED_DOWN = ("<genexpr>", "<lambda>", "ProgressWriter.__call__")


def reentries(act) -> list[str]:
    """Run `act`, noting each call into a module of the package that is already on the call stack with another
    module between (A -> B -> A), and not through something A handed down."""
    found: list[str] = []

    def module_of(frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.startswith("consolidation") else None

    def profile(frame, event, _arg):
        callee = module_of(frame) if event == "call" else None
        if callee is None or any(mark in frame.f_code.co_qualname for mark in HANDED_DOWN):
            return
        stack, caller = [], frame.f_back
        while caller is not None:
            module = module_of(caller)
            if module and (not stack or stack[-1] != module):
                stack.append(module)
            caller = caller.f_back
        if stack and stack[0] != callee and callee in stack[1:]:
            found.append(f"{frame.f_code.co_qualname} in {callee}, called back by {stack[0]}")

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        act()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return sorted(set(found))


def test_a_run_asked_over_http_and_a_scheduled_one_enter_each_module_once_on_the_way_in(client, auth, services):
    for number in range(12):
        assert client.post("/memory", json={"content": f"note {number} on topic {number % 3}"},
                           headers=auth).status_code == 201
    scheduled = []
    assert reentries(lambda: scheduled.extend(services.scheduler.run_once())) == []
    assert scheduled, "nothing was due: the scheduled path went untraced"
    asked = []
    assert reentries(lambda: asked.append(client.post("/consolidate", json={"wait": True}, headers=auth))) == []
    assert asked[0].json["state"] == "succeeded"


def test_the_trace_sees_a_module_called_back_by_one_below_it():
    """Two modules of the package made for the test: `upper.run` hands `lower.each` its plain function `step`
    (a re-entry), then a generator expression (handed down: allowed)."""
    lower, upper = types.ModuleType("consolidation.trace_lower"), types.ModuleType("consolidation.trace_upper")
    exec("def each(function, items):\n    return [function(item) for item in items]", lower.__dict__)
    upper.lower = lower
    exec("def step(item):\n    return item + 1\n"
         "def run():\n    return lower.each(step, [1, 2])\n"
         "def run_handed_down():\n    return list(lower.each(int, (item for item in [1, 2])))", upper.__dict__)
    assert reentries(upper.run) == ["step in consolidation.trace_upper, called back by consolidation.trace_lower"]
    assert reentries(upper.run_handed_down) == []
