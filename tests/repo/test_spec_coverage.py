"""Every clause id in spec/ is named by at least one test, and tests name no unknown id."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAUSE = re.compile(r"\*\*([A-Z]{2,5}-\d+)\b")
MENTION = re.compile(r"\b([A-Z]{2,5}-\d+)\b")


def spec_clauses() -> set[str]:
    """Ids defined in spec/: the bold clause headings ``**ENG-3 ...**``."""
    ids: set[str] = set()
    for path in (ROOT / "spec").glob("*.md"):
        ids.update(CLAUSE.findall(path.read_text(encoding="utf-8")))
    return ids


def named_ids() -> set[str]:
    named: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == Path(__file__).name:
            continue
        named.update(MENTION.findall(path.read_text(encoding="utf-8")))
    return named


def test_spec_has_clauses() -> None:
    assert len(spec_clauses()) >= 20


def test_every_clause_is_named_by_a_test() -> None:
    missing = sorted(spec_clauses() - named_ids())
    assert not missing, f"spec clauses no test names: {missing}"


def test_tests_name_only_known_clauses() -> None:
    prefixes = {clause.split("-")[0] for clause in spec_clauses()}
    unknown = sorted(m for m in named_ids() - spec_clauses() if m.split("-")[0] in prefixes)
    assert not unknown, f"tests name clauses that spec/ does not define: {unknown}"
