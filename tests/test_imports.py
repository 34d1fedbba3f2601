"""Every module of the package imports, and no two modules import each other (even lazily).

The import graph is read from the source (every ``import`` statement, at module level or
inside a function: a lazy import that closes a cycle is still a cycle in the design), so a
cycle is found whether or not Python would trip on it at run time.
"""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

import pytest

import sharpness

SRC = Path(sharpness.__file__).resolve().parent
PACKAGE = "sharpness"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The package modules that module ``name`` imports (``from pkg import mod`` → pkg.mod)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES and m != name}


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports (read once a worker: four tests ask; none
    changes it)."""
    return {name: _imports(name, path) for name, path in MODULES.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component larger than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_from_imports():
    graph = import_graph()
    assert "sharpness.data.registry" in graph["sharpness.data.fetch"]  # from-import of names
    assert "sharpness.data.arrays" in graph["sharpness.data.composite"]
    # a function-level import counts (Grad-CAM loads its data lazily)
    assert "sharpness.data" in graph["sharpness.gradcam.study"]


def test_no_import_cycle_in_the_package():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


#: the commands whose jobs draw figures and tables (each rule's `sharpness <paper> ...`)
DRAWING_COMMANDS = [f"sharpness.commands.{name}"
                    for name in ("minorfirst", "eos", "lesam", "gradcam", "bridges")]


def test_no_figure_or_table_producer_reaches_the_claims_package():
    """The claims job computes every predicate once: a module that draws a figure or a table
    (it imports sharpness.plots), and every command a figure job runs, never imports
    sharpness.claims, not even through another module or inside a function."""
    graph = import_graph()
    drawers = sorted({m for m, deps in graph.items()
                      if m.startswith("sharpness.plots") or any(
                          d.startswith("sharpness.plots") for d in deps)})
    assert "sharpness.minorfirst.fig_margin" in drawers and "sharpness.lesam.tables" in drawers
    found = {m: sorted(d for d in _reach(graph, m) if d.startswith("sharpness.claims"))
             for m in [*drawers, *DRAWING_COMMANDS]}
    assert not {m: d for m, d in found.items() if d}


def test_the_claims_check_sees_a_planted_import():
    graph = {"sharpness.lesam.tables": {"sharpness.runs.seal"},
             "sharpness.runs.seal": {"sharpness.claims.ledger"}}
    assert "sharpness.claims.ledger" in _reach(graph, "sharpness.lesam.tables")


PAPERS = ("minorfirst", "lesam", "eos", "gradcam", "bridges")


def test_the_config_and_the_plan_import_no_paper():
    """The config is read and checked as data (sharpness.config) and the plan lists the
    papers' jobs (sharpness.jobs) without importing a paper's module by name: each paper
    checks its own section and lists its jobs, reached through sharpness.jobs.PROVIDERS, so
    no arrow runs from these low packages up to the papers."""
    def part(module: str) -> str:
        return (module.split(".") + [""])[1]

    graph = import_graph()
    low = [m for m in graph if part(m) in ("config", "jobs")]
    assert "sharpness.config.check" in low and "sharpness.jobs" in low
    found = {m: sorted(d for d in graph[m] if part(d) in PAPERS) for m in low}
    assert not {m: d for m, d in found.items() if d}


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph with each subpackage of ``sharpness`` one node (``sharpness.config``
    for all of ``sharpness.config.*``); a top-level module stays its own node."""
    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        out.setdefault(part(module), set()).update(part(d) for d in deps)
    return {node: deps - {node} for node, deps in out.items()}


def test_no_package_imports_one_that_imports_it():
    """The packages stand in floors (each above all it imports, the config below the plan
    below the papers): no chain of imports leads from a package back to itself, even when
    no two modules close a loop."""
    cycles = find_cycles(package_graph(import_graph()))
    assert not cycles, "packages in a loop: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_package_graph_sees_a_loop_of_modules_that_is_no_module_cycle():
    graph = {"sharpness.config.check": {"sharpness.jobs"},
             "sharpness.jobs.files": {"sharpness.runs.signing"},
             "sharpness.runs.provenance": {"sharpness.config.variant"}}
    assert find_cycles(graph) == []
    assert find_cycles(package_graph(graph)) == [
        ["sharpness.config", "sharpness.jobs", "sharpness.runs"]]
