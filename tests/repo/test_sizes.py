"""ARC-7: size rules: a module in src/ is at most 400 lines unless it says why, a function at
most 60 lines unless it is on the exception list (tests/README.md).

A function's length runs from its ``def`` line to its last line, docstring and comments
included (decorators excluded). Methods and nested functions are measured on their own, and a
nested function also counts towards its enclosing one.

The exception list below is the only way past the function limit. Each entry gives the
current length as a ceiling (growing past it fails), the reason, and the issue that removes
it; an entry whose function has shrunk under the limit, or no longer exists, fails too, so the
list cannot go stale.

The module limit is soft: a module is split where a seam is, not where the count falls. A
module over 400 lines names its reason in its docstring, in a paragraph that starts
``Longer than 400 lines:`` (the reason, like an exception's); a module under the limit that
still carries such a paragraph fails, so the reasons cannot go stale either.
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


LONGER = "Longer than 400 lines:"


def size_reason(source: str) -> str | None:
    """The module docstring's ``Longer than 400 lines:`` paragraph, without its label."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    for paragraph in docstring.split("\n\n"):
        if paragraph.startswith(LONGER):
            reason = " ".join(paragraph.removeprefix(LONGER).split())
            return reason or None
    return None


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_module_is_at_most_400_lines_or_says_why(path: Path) -> None:
    """ARC-7: a module over 400 lines names its reason in its docstring, and only then."""
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    reason = size_reason(source)
    name = path.relative_to(SRC)
    assert lines <= MAX_MODULE_LINES or reason, f"{name} has {lines} lines and no {LONGER!r}"
    assert lines > MAX_MODULE_LINES or not reason, f"{name} has {lines} lines: drop its reason"


def test_the_size_reason_is_read_from_the_docstring() -> None:
    """ARC-7: the reason is a docstring paragraph with its label; a bare label is none."""
    reason = '"""Summary.\n\nLonger than 400 lines: one state machine,\nread top down.\n"""\n'
    assert size_reason(reason) == "one state machine, read top down."
    assert size_reason('"""Summary.\n\nLonger than 400 lines:\n"""\n') is None
    assert size_reason('"""Summary."""\n# Longer than 400 lines: a comment\n') is None


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
