"""GYM-8: no tuning script names the gym's test split (it is for the scoreboard and the docs)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TUNING = (
    "docs/scripts/tune_*.py",
    "docs/scripts/calibrat*.py",
    "docs/scripts/gym_distribution.py",
    "benchmarks/tune_*.py",
)
"""Where tuning scripts live (``GYM-8``)."""

_TEST_SPLIT = re.compile(
    r"""(split\s*\(\s*["']test["'])"""  # generate_split("test", ...), write_split("test", ...)
    r"""|(["']--split["']\s*,\s*["']test["'])"""  # ["--split", "test"]
    r"""|(--split[ =]test\b)"""  # a command line
    r"""|(SPLITS\s*\[\s*["']test["']\s*\])"""  # SPLITS["test"]
    r"""|(\b1_?000_?000\b)"""  # the test split's first seed
)


def names_test_split(source: str) -> list[str]:
    """The places where ``source`` names the gym's test split."""
    return [match.group(0) for match in _TEST_SPLIT.finditer(source)]


def tuning_scripts() -> list[Path]:
    return sorted(path for pattern in TUNING for path in ROOT.glob(pattern))


def test_no_tuning_script_names_the_test_split() -> None:
    """GYM-8: tuning reads the dev split only."""
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in tuning_scripts()
        if (found := names_test_split(path.read_text(encoding="utf-8")))
    }
    assert not offenders, f"tuning scripts that name the gym's test split: {offenders}"


def test_the_checker_refuses_a_script_that_names_it() -> None:
    """GYM-8: each way of naming the test split is caught; the dev split is not."""
    bad = [
        'runs = generate_split("test", 500)',
        "write_split('test', 10, out)",
        'main(["gym", "--split", "test", "--out", d])',
        "evalstop gym --split test --out d",
        'seeds = range(SPLITS["test"], SPLITS["test"] + 10)',
        "seeds = range(1_000_000, 1_000_500)",
    ]
    for source in bad:
        assert names_test_split(source), source
    assert names_test_split('runs = generate_split("dev", 500)\nseed = 10_000') == []
    assert tuning_scripts(), "the tuning scripts moved: update TUNING"
