"""The engine speed page repeats a committed benchmark output (CLI-7): these tests check that
its goals table says what that output says, so a new output cannot leave a stale table."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "performance.md"
OUTPUT = ROOT / "docs" / "data" / "bench" / "engine.out"
FIGURE = re.compile(r"\d[\d,.]*(?:x|k| s| B)(?![\w])")
"""A figure the table repeats: a ratio (0.69x), a rate (470k), seconds (4.20 s), bytes."""


def _verdicts(output: str) -> list[tuple[bool, str]]:
    """Each ``goal: ...: met (figures)`` line of the output: whether met, and its figures."""
    found = re.findall(r"^goal: .*: (met|NOT met) \((.*)\)$", output, re.MULTILINE)
    return [(state == "met", figures) for state, figures in found]


def _rows(page: str) -> list[tuple[bool, str]]:
    """Each row of the page's goals table: whether it says met, and its figures cell."""
    section = page.split("## The goals and where they stand", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("goal", "---"):
            rows.append((cells[2] == "met", cells[1]))
    return rows


def test_cli7_the_page_names_the_commit_of_its_output() -> None:
    """CLI-7: the page's commit is the one the output opens with, and the page includes it."""
    output = OUTPUT.read_text(encoding="utf-8")
    page = PAGE.read_text(encoding="utf-8")
    commit = re.match(r"evalstop \S+, commit (\w+);", output)
    assert commit, "the output does not open with its provenance line"
    assert f"Measured on commit `{commit.group(1)}`" in " ".join(page.split())
    assert '--8<-- "bench/engine.out"' in page


def test_cli7_each_goal_row_says_what_the_output_says() -> None:
    """CLI-7: one row per goal, in the output's order; met as the output judges it; every
    figure of the row printed in the output's verdict on that goal."""
    verdicts = _verdicts(OUTPUT.read_text(encoding="utf-8"))
    rows = _rows(PAGE.read_text(encoding="utf-8"))
    assert len(verdicts) == 5 and len(rows) == len(verdicts)
    for (met, printed), (says_met, cell) in zip(verdicts, rows, strict=True):
        assert says_met == met, (cell, printed)
        figures = FIGURE.findall(cell)
        assert figures, cell
        missing = [f for f in figures if f not in FIGURE.findall(printed)]
        assert not missing, (missing, printed)


def test_the_figure_pattern_reads_each_kind() -> None:
    """The pattern the row check relies on finds each kind of figure, and no bare count."""
    text = "fifo 0.69x; las 147k; 4.20 s at 100,000 jobs; 465 B per job; 12 of 5"
    assert FIGURE.findall(text) == ["0.69x", "147k", "4.20 s", "465 B"]
