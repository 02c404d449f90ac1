"""``replay`` reads the run folders ``watch`` reads, with the same default rule (RPL-10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalstop.cli import main

# Rises for ten evaluations, then falls far beyond its noise: every default rule stops it
# before its last point, so replay (which ignores a fire at the last point, RPL-9) and watch
# must name the same stop.
CURVE = [0.1 * i for i in range(1, 11)] + [0.6, 0.3, 0.1, 0.0, -0.1, -0.2, -0.3, -0.4]


def _runs(root: Path) -> None:
    (root / "jsonl").mkdir(parents=True)
    lines = [json.dumps({"step": 10 * i, "score": v}) for i, v in enumerate(CURVE, 1)]
    (root / "jsonl" / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
    history = [{"step": 10 * i, "score": v} for i, v in enumerate(CURVE, 1)]
    for last in (90, 180):  # the HF layout: the highest checkpoint's trainer state is the log
        folder = root / "hf" / f"checkpoint-{last}"
        folder.mkdir(parents=True)
        state = {"log_history": [h for h in history if h["step"] <= last]}
        (folder / "trainer_state.json").write_text(json.dumps(state))


def _replay(capsys: pytest.CaptureFixture[str], *paths: Path) -> list[dict[str, Any]]:
    assert main(["replay", *map(str, paths), "--metric", "score", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return out if isinstance(out, list) else [out]


def test_rpl10_replay_reads_watchs_run_folders_with_its_default_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-10: a JSONL run folder, an HF run folder (checkpoint-N) and their parent folder
    replay as watch reads them; with no rule given, both use the monitor's default and
    agree on every stop."""
    root = tmp_path / "runs"
    _runs(root)
    by_folder = _replay(capsys, root / "hf", root / "jsonl")
    by_root = _replay(capsys, root)
    assert [Path(r["path"]).relative_to(root).as_posix() for r in by_root] == [
        "hf/checkpoint-180/trainer_state.json",
        "jsonl/metrics.jsonl",
    ]
    assert by_folder == by_root
    assert all(r["stopped"] for r in by_root)
    state = tmp_path / "watch.sqlite"  # the default --state would land in the working folder
    code = main(["watch", str(root), "--metric", "score", "--once", "--state", str(state)])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(Path(line["run"]).name for line in lines) == ["hf", "jsonl"]
    for line, result in zip(sorted(lines, key=lambda x: x["run"]), by_root, strict=True):
        assert line["detector"] == result["detector"]
        assert line["stop_step"] == result["stop_step"]
        assert line["best_step"] == result["best_step"]


def test_rpl10_k_alone_is_the_evalstop_rule_and_a_knob_alone_noise_aware(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-10: --k 3 alone is evalstop(k=3); --warmup-evals 7 alone builds noise-aware."""
    _runs(tmp_path)
    folder = str(tmp_path / "jsonl")
    for extra, name in (
        (["--k", "3"], "evalstop(k=3)"),
        (["--warmup-evals", "7"], "noise-aware(z=2,memory=0.3,warmup=7)"),
    ):
        assert main(["replay", folder, "--metric", "score", "--json", *extra]) == 0
        assert json.loads(capsys.readouterr().out)["detector"] == name
