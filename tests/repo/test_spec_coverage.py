"""Every clause id in spec/ is named by a test, in the one way tests/README.md describes.

The convention: a test names the clauses it checks at the very start of its docstring, ids
separated by ``", "`` and followed by ``":"``, e.g. ``\"\"\"ENG-3, ENG-4: ...\"\"\"``. Only
those leading ids count as coverage. Any other mention of an id in tests/ (a comment, a later
sentence of a docstring) is a cross-reference: it must name a clause spec/ defines, but it
covers nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLAUSE = re.compile(r"\*\*([A-Z]{2,5}-\d+)\b")
MENTION = re.compile(r"\b([A-Z]{2,5}-\d+)\b")
ID = r"[A-Z]{2,5}-\d+"
LEADING = re.compile(rf"^({ID}(?:, {ID})*): \S")
"""The one accepted form: ``ID[, ID ...]: text``."""
LOOKS_LIKE_ID = re.compile(rf"^{ID}")
"""A docstring starting like an id must use the accepted form (not ``MET-1..6``, ``A/B``)."""


def spec_clauses() -> set[str]:
    """Ids defined in spec/: the bold clause headings ``**ENG-3 ...**``."""
    ids: set[str] = set()
    for path in (ROOT / "spec").glob("*.md"):
        ids.update(CLAUSE.findall(path.read_text(encoding="utf-8")))
    return ids


def suite_files() -> list[Path]:
    """The test modules: every ``test_*.py`` under tests/."""
    return sorted((ROOT / "tests").rglob("test_*.py"))


def docstrings(source: str) -> list[tuple[int, str]]:
    """(line, docstring) of every function and class in ``source`` (tests, rules, invariants)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node)
            if doc:
                found.append((node.lineno, doc))
    return found


def leading_ids(doc: str) -> list[str]:
    """The ids a docstring names in the accepted leading form; none if it does not."""
    match = LEADING.match(doc)
    return match.group(1).split(", ") if match else []


def covered() -> set[str]:
    """Every id some test names at the start of its docstring."""
    ids: set[str] = set()
    for path in suite_files():
        for _, doc in docstrings(path.read_text(encoding="utf-8")):
            ids.update(leading_ids(doc))
    return ids


def mentioned() -> set[str]:
    """Every id-shaped word anywhere in tests/ (this file excepted)."""
    named: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == Path(__file__).name:
            continue
        named.update(MENTION.findall(path.read_text(encoding="utf-8")))
    return named


def test_spec_has_clauses() -> None:
    """Sanity: the spec defines clauses (the checks below are not vacuous)."""
    assert len(spec_clauses()) >= 20
    assert len(covered()) >= 20


def test_every_clause_is_named_by_a_test() -> None:
    """Each clause is named at the start of at least one test's docstring."""
    missing = sorted(spec_clauses() - covered())
    assert not missing, f"spec clauses no test names at the start of its docstring: {missing}"


def test_tests_name_only_known_clauses() -> None:
    """No test names or mentions an id that spec/ does not define."""
    prefixes = {clause.split("-")[0] for clause in spec_clauses()}
    unknown = sorted(m for m in mentioned() - spec_clauses() if m.split("-")[0] in prefixes)
    assert not unknown, f"tests name clauses that spec/ does not define: {unknown}"


@pytest.mark.parametrize("path", suite_files(), ids=lambda p: str(p.relative_to(ROOT / "tests")))
def test_ids_are_named_one_way(path: Path) -> None:
    """A docstring that starts with an id uses the form ``ID[, ID ...]: text``."""
    bad = [
        f"{path.name}:{line}: {doc.splitlines()[0]!r}"
        for line, doc in docstrings(path.read_text(encoding="utf-8"))
        if LOOKS_LIKE_ID.match(doc) and not leading_ids(doc)
    ]
    assert not bad, f"write 'ENG-3, ENG-4: ...' (see tests/README.md): {bad}"


@pytest.mark.parametrize(
    ("doc", "ids"),
    [
        ("ENG-3: the clock", ["ENG-3"]),
        ("ENG-3, MET-4: two", ["ENG-3", "MET-4"]),
        ("MET-1..6 on FIFO", []),
        ("REP-4/CLI-1: one line", []),
        ("BND-3 (control): a control", []),
        ("The clock never goes back (ENG-1).", []),
        ("ENG-3:no space", []),
    ],
)
def test_the_convention_parser(doc: str, ids: list[str]) -> None:
    """The leading form is recognised; the older forms and later mentions are not coverage."""
    assert leading_ids(doc) == ids
