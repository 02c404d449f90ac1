"""The adapter pages' complete examples (docs/examples/adapters/*.py) run against the real
libraries and stop where their pages say (spec ADP-10, ADP-11, ADP-13)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "adapters"


def run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", [name, str(tmp_path)])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def test_adp10_optuna_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ADP-10: the Optuna page's study prunes the trials whose score declines."""
    pytest.importorskip("optuna")
    run("optuna_pruner.py", tmp_path, monkeypatch)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert any("PRUNED" in line for line in lines)
    assert any("COMPLETE" in line for line in lines)


def test_adp11_lightning_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ADP-11: the Lightning page's run stops at step 24 and keeps step 16's checkpoint."""
    pytest.importorskip("lightning")
    run("lightning_callback.py", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "stopped at step 24 of 40; best step 16 (0.700," in out
    assert "step=16.ckpt" in out


def test_adp13_trl_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ADP-13: the TRL page's GRPO run stops at step 6 on the logged reward."""
    pytest.importorskip("trl")
    run("trl_grpo.py", tmp_path, monkeypatch)
    assert (
        "stopped at step 6 of 10; best BestCheckpoint(step=4, score=0.6" in capsys.readouterr().out
    )
