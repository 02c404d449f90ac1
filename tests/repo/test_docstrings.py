"""Docstrings in src/ use one dialect: Google style, as CONTRIBUTING.md describes.

Sections are ``Args:``, ``Returns:``, ``Yields:``, ``Raises:``, ``Attributes:`` (and
``Examples:``), each a header line alone, entries indented below it. The other dialects are
refused: reST field lists (``:param x:``, ``:returns:``), NumPy headers underlined with dashes,
and Google-like headers under another name (``Parameters:``, ``Fields:``). Sphinx roles for
cross-references (``:class:`Job```) are part of the dialect (docs/hooks/docstrings.py renders
them), so they are not field lists. ``mkdocs build --strict`` checks the rest: an ``Args:``
entry that names no parameter fails the docs build.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "evalstop"
SECTIONS = {"Args", "Returns", "Yields", "Raises", "Attributes", "Examples"}
SECTION_LIKE = re.compile(r"^\s*([A-Z][a-z]+(?: [A-Za-z]+)?):\s*$")
"""A line that is only a capitalised word or two and a colon: a section header."""
OTHER_DIALECTS = {
    "a reST field list": re.compile(
        r"^\s*:(?:param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|"
        r"except|exception|var|ivar|cvar|vartype|yields?)\b[^:`]*:"
    ),
    "a NumPy section underline": re.compile(r"^\s*-{3,}\s*$"),
}


def docstrings(source: str) -> list[tuple[str, str]]:
    """(name, docstring) of the module and of every class and function in ``source``."""
    tree = ast.parse(source)
    found = [("<module>", ast.get_docstring(tree) or "")]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append((node.name, ast.get_docstring(node) or ""))
    return found


def problems(name: str, doc: str) -> list[str]:
    """Lines of ``doc`` written in another dialect, as ``name: line``."""
    found: list[str] = []
    for line in doc.splitlines():
        header = SECTION_LIKE.match(line)
        if header and header.group(1) not in SECTIONS:
            found.append(f"{name}: section {header.group(1)!r} (use {sorted(SECTIONS)})")
        found.extend(
            f"{name}: {what}: {line.strip()!r}"
            for what, pattern in OTHER_DIALECTS.items()
            if pattern.match(line)
        )
    return found


@pytest.mark.parametrize(
    "path", sorted(SRC.rglob("*.py")), ids=lambda p: p.relative_to(SRC).as_posix()
)
def test_one_docstring_dialect(path: Path) -> None:
    """Every docstring of the module is Google style (no other section names or field lists)."""
    found = [
        problem
        for name, doc in docstrings(path.read_text(encoding="utf-8"))
        for problem in problems(name, doc)
    ]
    assert not found, f"{path.relative_to(SRC)}: {found}"


@pytest.mark.parametrize(
    ("doc", "count"),
    [
        ("Sum.\n\nArgs:\n    x: a number.\n\nReturns:\n    The sum.\n", 0),
        ("Sum.\n\nRaises:\n    ValueError: negative.\n", 0),
        ("A :class:`Job` and :func:`~evalstop.sim.run.simulate` are roles, not fields.", 0),
        ("Sum.\n\n:param x: a number.\n:returns: the sum.\n", 2),
        ("Sum.\n\nParameters\n----------\nx : int\n", 1),
        ("Sum.\n\nParameters:\n    x: a number.\n", 1),
        ("A job.\n\nFields:\n    x: a number.\n", 1),
    ],
)
def test_the_checker(doc: str, count: int) -> None:
    """Google sections and Sphinx roles pass; field lists and other headers are found."""
    assert len(problems("f", doc)) == count
