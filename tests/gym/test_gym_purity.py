"""GYM-13: the gym's core imports numpy, attrs and a few pure standard modules only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GYM = Path(__file__).resolve().parents[2] / "src" / "evalstop" / "gym"

PURE = ("task", "proxy", "policy", "run", "config", "labels", "splits", "gao")
"""The modules of the pure core (``GYM-13``)."""

ALLOWED = {
    "__future__",
    "attrs",
    "collections.abc",
    "math",
    "numpy",
    "numpy.typing",
    "typing",
    "evalstop.core.errors",
}


def imports_of(source: str) -> set[str]:
    """Every module a source imports (deferred imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def impure(source: str) -> set[str]:
    """The imports of ``source`` outside the pure core's allowance."""
    return {
        name
        for name in imports_of(source)
        if name not in ALLOWED and not any(name == f"evalstop.gym.{m}" for m in PURE)
    }


@pytest.mark.parametrize("module", PURE)
def test_the_core_is_pure(module: str) -> None:
    """GYM-13: no I/O, clock, process or global-random module in the gym's core."""
    assert impure((GYM / f"{module}.py").read_text(encoding="utf-8")) == set()


def test_every_gym_module_is_classified() -> None:
    """GYM-13: a new gym module is placed in the core or at the edge on purpose."""
    edge = {"__init__", "generate", "writer", "corpora"}
    assert {p.stem for p in GYM.glob("*.py")} == set(PURE) | edge


def test_the_checker_sees_io() -> None:
    """GYM-13: a core module that opens files or reads the clock is caught."""
    assert impure("import os\nfrom pathlib import Path\ndef f():\n    import time\n") == {
        "os",
        "pathlib",
        "time",
    }
    assert impure("import numpy as np\nfrom evalstop.gym.task import LENGTH\n") == set()
    assert impure("from evalstop.gym.writer import write_run\n") == {"evalstop.gym.writer"}
