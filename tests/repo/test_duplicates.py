"""ARC-9: the ``duplicates`` command lists no pair of places outside the accepted list.

The list is the "Accepted duplicates" section of ``spec/architecture.md``: one pair of files a
line, with why the pair is boilerplate. ``duplicates`` is a developer tool, not a dependency:
where it is not installed the test that runs it is skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "architecture.md"
TREES = ("src", "docs/scripts")
"""The folders ``duplicates`` reads (``--repo``), each on its own."""

_ENTRY = re.compile(r"^- `([^`]+)` ~ `([^`]+)`: \S")
_ROW = re.compile(r"^D\d+ (\S+):\d+-\d+ ~ (\S+):\d+-\d+")

Pair = tuple[str, str]


def accepted(text: str) -> dict[Pair, str]:
    """The accepted pairs of the spec's section (files sorted within a pair) -> the line."""
    section = text.partition("\n## Accepted duplicates")[2]
    pairs: dict[Pair, str] = {}
    for line in section.splitlines():
        if match := _ENTRY.match(line):
            a, b = match.groups()
            pairs[(min(a, b), max(a, b))] = line
    return pairs


def listed(output: str, tree: str) -> set[Pair]:
    """The pairs of files in one ``duplicates --repo tree`` output, as paths from the root."""
    pairs: set[Pair] = set()
    for line in output.splitlines():
        if match := _ROW.match(line):
            a, b = (f"{tree}/{name}" for name in match.groups())
            pairs.add((min(a, b), max(a, b)))
    return pairs


def unaccepted(outputs: dict[str, str], allowed: dict[Pair, str]) -> list[str]:
    """Every problem: an output cut short or incomplete, or a pair not in ``allowed``."""
    problems = [
        f"{tree}: {line}"
        for tree, output in outputs.items()
        for line in output.splitlines()
        if line.startswith("incomplete:") or re.match(r"\(\+\d+ more pairs\)", line)
    ]
    for tree, output in outputs.items():
        problems += [f"{a} ~ {b}" for a, b in sorted(listed(output, tree) - set(allowed))]
    return problems


def test_arc9_the_accepted_list_names_files_that_exist() -> None:
    """ARC-9: every accepted pair names two files of the tree (a deleted one leaves the list)."""
    pairs = accepted(SPEC.read_text(encoding="utf-8"))
    assert len(pairs) > 10
    missing = sorted({name for pair in pairs for name in pair if not (ROOT / name).is_file()})
    assert missing == []


def test_arc9_no_duplicate_pair_but_the_accepted_ones() -> None:
    """ARC-9: ``duplicates`` over ``src/`` and ``docs/scripts/`` lists only accepted pairs."""
    command = shutil.which("duplicates")
    if command is None:
        pytest.skip("needs the duplicates command (a developer tool)")
    outputs = {
        tree: subprocess.run(
            [command, "--repo", tree, "--most", "200", "--seconds", "120"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for tree in TREES
    }
    problems = unaccepted(outputs, accepted(SPEC.read_text(encoding="utf-8")))
    assert problems == [], "share the logic in one helper, or list the pair with why"


def test_arc9_the_check_sees_a_new_pair_and_a_cut_list() -> None:
    """ARC-9: an unlisted pair, an incomplete run and a list cut short are each reported; a
    listed pair is not."""
    allowed = accepted("x\n## Accepted duplicates\n\n- `src/b.py` ~ `src/a.py`: imports.\n")
    assert set(allowed) == {("src/a.py", "src/b.py")}
    output = (
        "2 pairs of places (3 files read)\n"
        "D1 a.py:1-9 ~ b.py:3-11\n"
        "D2 c.py:5-12 ~ a.py:40-47 shape\n"
        "(+3 more pairs)\n"
        "incomplete: time: 20 s\n"
    )
    assert unaccepted({"src": output}, allowed) == [
        "src: (+3 more pairs)",
        "src: incomplete: time: 20 s",
        "src/a.py ~ src/c.py",
    ]
    assert unaccepted({"src": "D1 b.py:1-9 ~ a.py:3-11\n"}, allowed) == []
