"""The numbers the docs give for defaults are the code's (CLI-6)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from evalstop.cli import build_parser
from evalstop.core.noise_aware import NoiseAwareDetector

ROOT = Path(__file__).resolve().parents[2]


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return str(sub.choices[command].format_help())


@pytest.mark.parametrize("command", ["replay", "watch"])
def test_cli6_warmup_evals_default_in_help_and_docs(command: str) -> None:
    """CLI-6: ``--warmup-evals``' documented default is NoiseAwareDetector's (5; the docs said
    4); docs/cli.md's replay table says the same number."""
    default = NoiseAwareDetector().warmup_evals
    text = " ".join(_help(command).split())
    assert f"no stop before this many valid evaluations ({default})" in text
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    said = re.findall(r"no stop before N valid evaluations \((\d+)\)", page)
    assert said and all(int(n) == default for n in said)


def test_cli6_readme_installs_torch_before_the_adapter_extras() -> None:
    """CLI-6: the README says to install torch before the extras that need it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.index("install torch first")
    assert first < readme.index("'evalstop[hf]'", first)
