"""Shared helpers of the watch tests: a run folder with a JSONL log, the command in-process."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evalstop.cli import main

PEAK = [0.1, 0.5, 0.4, 0.3, 0.2]
"""Best at step 10, declines at 20 and 30: the evalstop rule (k=2) stops at 30."""


def jsonl_run(folder: Path, scores: Sequence[float] = PEAK, metric: str = "score") -> Path:
    """A run folder holding ``m.jsonl`` with one evaluation per ``10 * i``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"step": 10 * i, metric: s}) for i, s in enumerate(scores)]
    (folder / "m.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``evalstop watch ARGV``: exit code, stdout, stderr."""
    code = main(["watch", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def once(state: Path, metric: str = "score") -> list[str]:
    """The options of one ``--once`` pass with replay's default rule."""
    return ["--metric", metric, "--detector", "evalstop", "--state", str(state), "--once"]


def tfwrite() -> Any:
    """``tests/traces/tfwrite.py`` (TensorBoard records written byte by byte)."""
    path = Path(__file__).parent / "traces" / "tfwrite.py"
    spec = importlib.util.spec_from_file_location("tfwrite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
