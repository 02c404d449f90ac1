"""Side signals at replay (SIG-10, SIG-8): the proxy and the KL read beside the metric."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalstop.core.divergence import DivergenceDetector
from evalstop.core.kl_budget import KlBudgetDetector
from evalstop.traces import read_trace
from evalstop.traces.replay import replay


def _log(path: Path, *, side: bool) -> Path:
    """A run whose eval score rises then falls while its proxy and KL keep rising."""
    rows = []
    for i in range(20):
        t = (i + 1) / 20
        row: dict[str, float] = {"step": 10 * i, "eval_score": (t if t < 0.5 else 1 - t)}
        row["eval_score"] += 0.02 * (-1) ** i
        if side:
            row |= {"proxy_reward": t + 0.01 * (-1) ** (i // 2), "kl": (3 * t) ** 2}
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _evalstop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalstop", *args], capture_output=True, text=True, check=False
    )


def test_sig10_replay_reads_the_side_signals(tmp_path: Path) -> None:
    """SIG-10: replay's reports carry the proxy and KL of their step: the divergence rule that
    needs the proxy to corroborate a small drop stops earlier with it than without it."""
    path = _log(tmp_path / "m.jsonl", side=True)
    trace = read_trace(path, "eval_score")
    proxy, kl = read_trace(path, "proxy_reward"), read_trace(path, "kl")
    detector = DivergenceDetector(z=0.5, side_z=0.5, fallback_z=6.0, signal="proxy_reward")
    with_side = replay(trace, detector, "max", None, proxy, kl)
    without = replay(trace, detector, "max")
    assert with_side.stopped
    assert without.stop_step is None or without.stop_step > (with_side.stop_step or 0)
    fitted = replay(trace, KlBudgetDetector(), "max", None, proxy, kl)
    assert fitted.stopped


def test_sig10_sig8_cli_defaults_and_the_fallback_note(tmp_path: Path) -> None:
    """SIG-10, SIG-8: by default replay reads proxy_reward and kl when the log has them and
    is silent; on a log without them it says which fallback judges; a named side metric the
    log lacks is a one-line error, exit 2; the table and JSON do not change."""
    full = _log(tmp_path / "full.jsonl", side=True)
    bare = _log(tmp_path / "bare.jsonl", side=False)
    done = _evalstop("replay", str(full), "--metric", "eval_score", "--detector", "kl-budget")
    assert done.returncode == 0 and done.stderr == ""
    note = _evalstop("replay", str(bare), "--detector", "kl-budget", "--json")
    assert note.returncode == 0
    assert note.stderr.count("\n") == 1 and "no kl to read" in note.stderr
    assert "SIG-8" in note.stderr and "bare.jsonl" in note.stderr
    json.loads(note.stdout)
    plain = _evalstop("replay", str(bare), "--detector", "noise-aware")
    assert plain.stderr == ""
    missing = _evalstop("replay", str(bare), "--detector", "divergence", "--proxy-metric", "rm")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "'rm' not found" in missing.stderr
