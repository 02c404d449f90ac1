"""Size rules: no module in src/ over 400 lines, no function over 60 lines (tests/README.md).

A function's length runs from its ``def`` line to its last line, docstring and comments
included (decorators excluded). Methods and nested functions are measured on their own, and a
nested function also counts towards its enclosing one.

The exception list below is the only way past the function limit. Each entry gives the
current length as a ceiling (growing past it fails), the reason, and the issue that removes
it; an entry whose function has shrunk under the limit, or no longer exists, fails too, so the
list cannot go stale. There is no exception to the module limit: split the module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "evalstop"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


@attrs.frozen
class Allowance:
    """A function allowed past the limit: its ceiling, why, and the issue that removes it."""

    ceiling: int
    reason: str
    issue: int


EXCEPTIONS: dict[str, Allowance] = {}
"""Key: ``<path under src/evalstop>::<qualified name>``."""


def modules() -> list[Path]:
    """Every module of the package."""
    return sorted(SRC.rglob("*.py"))


def key(path: Path, qualname: str) -> str:
    """The exception-list key of ``qualname`` in ``path``."""
    return f"{path.relative_to(SRC).as_posix()}::{qualname}"


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name -> length in lines, for every function and method in ``source``."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                name = prefix + child.name
                lengths[name] = max(lengths.get(name, 0), child.end_lineno - child.lineno + 1)
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


def all_lengths() -> dict[str, int]:
    """Exception-list key -> length, over the whole package."""
    return {
        key(path, name): length
        for path in modules()
        for name, length in function_lengths(path.read_text(encoding="utf-8")).items()
    }


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_module_is_at_most_400_lines(path: Path) -> None:
    """A module over 400 lines is split (there is no exception list for modules)."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(SRC)} has {lines} lines"


def test_functions_are_at_most_60_lines() -> None:
    """Every function over 60 lines is on the exception list, within its ceiling."""
    too_long = {
        name: length
        for name, length in all_lengths().items()
        if length > MAX_FUNCTION_LINES
        and (name not in EXCEPTIONS or length > EXCEPTIONS[name].ceiling)
    }
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


def test_exceptions_are_current() -> None:
    """Each exception names a function that exists and is still over the limit."""
    lengths = all_lengths()
    stale = sorted(name for name in EXCEPTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES)
    assert not stale, f"remove these from EXCEPTIONS in {Path(__file__).name}: {stale}"
    for name, entry in EXCEPTIONS.items():
        assert entry.reason and entry.issue > 0, name


def test_the_measure() -> None:
    """Def line to last line; methods and nested functions by qualified name."""
    source = (
        "def f():\n"
        "    '''Doc.'''\n"
        "    def g():\n"
        "        return 1\n"
        "    return g\n"
        "class C:\n"
        "    @property\n"
        "    def m(self):\n"
        "        return 2\n"
    )
    assert function_lengths(source) == {"f": 5, "f.g": 2, "C.m": 2}
