"""ARC-1: the layering, executable: which layer may import which (see ``evalstop/__init__``).

An ``ast`` walk over every module in ``src/evalstop`` (deferred imports inside functions
included) checks that each import stays inside the layers its own layer may use, that no module
reaches a tool outside the package (``benchmarks/``, ``docs/``), and that no module imports its
own package's ``__init__`` (the loop that a deferred import used to hide).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "evalstop"

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "engine": frozenset({"core", "engine"}),
    "sim": frozenset({"core", "engine", "sim"}),
    "live": frozenset({"core", "live"}),
    "traces": frozenset({"core", "live", "traces"}),
    "adapters": frozenset({"core", "live", "traces", "adapters"}),
    "watch": frozenset({"core", "live", "traces", "watch"}),
    "experiments": frozenset({"core", "engine", "sim", "live", "traces", "gym", "experiments"}),
    "gym": frozenset({"core", "gym"}),
}
"""Layer -> the layers it may import. ``cli`` and the package root may import every layer."""

TOOLS = ("benchmarks", "real_traces", "docs")
"""Top-level names that belong to tools outside the wheel."""


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def layer_of(path: Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else "<root>"


def imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_every_layer_is_known() -> None:
    """ARC-1: each subpackage is a layer of the map (a new package must be placed in it)."""
    layers = {layer_of(path) for path in modules()} - {"<root>", "cli"}
    assert layers == set(ALLOWED)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_respect_the_layers(path: Path) -> None:
    """ARC-1: a module imports only from the layers its own layer may use, and never a tool."""
    layer = layer_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad: list[str] = []
    for name in imported(tree):
        top = name.split(".")[0]
        if top in TOOLS:
            bad.append(f"{name} (a tool outside the package)")
        if top != "evalstop" or layer in ("<root>", "cli"):
            continue
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else "<root>"
        if target not in ALLOWED[layer]:
            bad.append(f"{name} (layer {layer!r} may import {sorted(ALLOWED[layer])})")
    assert not bad, f"{path.relative_to(SRC)} imports against the layering: {bad}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_its_own_package_init(path: Path) -> None:
    """ARC-1: ``evalstop.cli.options`` must not import ``evalstop.cli``: that is an import loop."""
    parts = path.relative_to(SRC).with_suffix("").parts
    if len(parts) < 2 or parts[-1] in ("__init__", "__main__"):
        return
    package = "evalstop." + ".".join(parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert package not in imported(tree), f"{path.relative_to(SRC)} imports {package}"


def test_the_checker_catches_a_violation(tmp_path: Path) -> None:
    """ARC-1: the walk sees deferred imports (a core module importing the engine in a function)."""
    tree = ast.parse("def f():\n    from evalstop.engine import step\n    return step\n")
    assert "evalstop.engine" in imported(tree)


KNOWN_CIRCLES: dict[frozenset[str], str] = {}
"""ARC-6: the import circles left, each with the issue that removes it; the list only shrinks."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports (``from m import x``: ``m.x`` when that
    is a module of ``sources``, else ``m``); deferred and ``TYPE_CHECKING`` imports count."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in sources)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in sources:
                        edges.add(full)
                    elif node.module in sources:
                        edges.add(node.module)
        graph[name] = edges - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_import_circles_are_only_the_known_ones() -> None:
    """ARC-6: no import circle but the listed ones, and every listed one still exists."""
    sources = {module_name(path): path.read_text(encoding="utf-8") for path in modules()}
    found = set(circles(import_graph(sources)))
    assert not found - set(KNOWN_CIRCLES), f"new import circles: {found - set(KNOWN_CIRCLES)}"
    stale = set(KNOWN_CIRCLES) - found
    assert not stale, f"no longer circles, remove them from KNOWN_CIRCLES: {stale}"


def test_the_circle_count_sees_a_circle() -> None:
    """ARC-6: a TYPE_CHECKING import back closes a circle; a one-way chain is none."""
    sources = {
        "p.a": "from p.b import f\n",
        "p.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p import a\n",
        "p": "",
        "p.c": "import p.a\n",
    }
    assert circles(import_graph(sources)) == [frozenset({"p.a", "p.b"})]
    assert circles(import_graph({"p.a": "import p.b\n", "p.b": ""})) == []
