"""``evalstop reproduce --trace`` (PHL-5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstop.cli import main
from evalstop.experiments.paper.plan import BASES, MAIN_SYSTEMS, Settings, plan
from evalstop.sim.philly import TraceSpec

SPEC = TraceSpec(window="2017-10-02..", jobs=60, gpus=64, load=0.9)


def test_phl5_the_trace_plan_is_main_and_composability() -> None:
    """PHL-5: on a trace, every seed runs the main systems and EvalStop over every base."""
    sims = plan(Settings(seeds=2, jobs=60, worlds=("paper",), trace=SPEC))
    systems = {sim.system for sim in sims}
    assert systems == {*MAIN_SYSTEMS, *BASES, *(f"evalstop+{b}" for b in BASES)}
    assert {sim.seed for sim in sims} == {0, 1}
    assert len({(s.hacking_share, s.evals, s.k) for s in sims}) == 1


def test_phl5_reproduce_on_philly_writes_main_and_composability(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """PHL-5: results.json has settings, trace, main and composability rows with intervals
    over the attachment seeds, and the same bytes with one or two workers."""
    args = ["reproduce", "--trace", "philly", "--trace-window", "2017-10-02..", "--jobs", "60"]
    args += ["--seeds", "2", "--world", "paper", "--no-progress"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "on trace philly" in out and "Composability" in out
    assert main([*args, "--workers", "2", "--out", str(tmp_path / "b")]) == 0
    one = (tmp_path / "a" / "results.json").read_bytes()
    assert one == (tmp_path / "b" / "results.json").read_bytes()
    results = json.loads(one)
    assert set(results) == {"version", "settings", "worlds", "trace", "paper"}
    assert results["trace"]["jobs"] == 60 and results["trace"]["gpus"] == 64
    paper = results["worlds"]["paper"]
    assert [row["system"] for row in paper["main"]] == list(MAIN_SYSTEMS)
    assert [row["base"] for row in paper["composability"]] == list(BASES)
    assert all(row["jct_change_pct_ci95"] is not None for row in paper["main"][1:])
    assert paper["noise"] == paper["base_rate"] == paper["k"] == paper["density"] == []
    assert not list((tmp_path / "a").glob("*.png"))
