"""Runs, their files, workers and interruptions (GYM-1, GYM-7, GYM-9, GYM-10)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from evalstop.gym import generate_split, write_runs
from evalstop.gym.config import draw_config
from evalstop.gym.corpora import GymError
from evalstop.gym.run import simulate_run
from evalstop.gym.writer import metrics_lines, truth_json
from evalstop.traces import read_trace

SMALL = {"steps": 30, "evals": 5, "proxy_samples": 40, "eval_samples": 8}
"""Knobs that make a run take a few milliseconds."""

FIELDS = ["step", "eval_score", "proxy_reward", "kl", "loss", "entropy"]


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "summary.json"
    }


def _summary_without_time(folder: Path) -> dict[str, object]:
    data = json.loads((folder / "summary.json").read_text())
    del data["time"]
    return dict(data)


def test_a_run_is_its_config() -> None:
    """GYM-1: the same config gives the same floats; another seed other ones."""
    a = simulate_run(draw_config(3, SMALL))
    assert a == simulate_run(draw_config(3, SMALL))
    assert a != simulate_run(draw_config(4, SMALL))


def test_the_log_holds_observables_only() -> None:
    """GYM-7: each line has exactly the six observable fields, in order; the writer refuses
    a hidden value; eval_score is a mean of sampled gold (noisy around the exact value)."""
    run = simulate_run(draw_config(0, SMALL))
    lines = metrics_lines(run.checkpoints).splitlines()
    assert [list(json.loads(line)) for line in lines] == [FIELDS] * 5
    with pytest.raises(TypeError):
        metrics_lines([run.truth])  # type: ignore[list-item]
    steps = [json.loads(line)["step"] for line in lines]
    assert steps == draw_config(0, SMALL).checkpoints()
    errors = [c.eval_score - q for c, q in zip(run.checkpoints, run.truth.quality, strict=True)]
    assert any(e != 0 for e in errors)
    assert run.checkpoints[0].kl == 0.0 and run.truth.kl[0] == 0.0


def test_eval_noise_comes_from_sampling() -> None:
    """GYM-7: over 40 seeds the eval score's error at step 0 shrinks with the sample size
    (256 samples: a quarter of the spread of 16, within sampling error)."""

    def spread(samples: int) -> float:
        runs = [simulate_run(draw_config(s, {**SMALL, "eval_samples": samples})) for s in range(40)]
        return float(np.std([r.checkpoints[0].eval_score - r.truth.quality[0] for r in runs]))

    ratio = spread(16) / spread(256)
    assert 2.5 < ratio < 6.5  # sqrt(256 / 16) = 4


def test_files_are_the_same_whatever_the_workers(tmp_path: Path) -> None:
    """GYM-9, GYM-7: 1 and 2 workers write the same bytes (summary apart from its time);
    the metrics read as a JSONL trace; truth.json carries the label and the parameters."""
    one, two = tmp_path / "one", tmp_path / "two"
    write_runs(range(6), one, overrides=SMALL, workers=1)
    write_runs(range(6), two, overrides=SMALL, workers=2)
    assert _files(one) == _files(two) and len(_files(one)) == 12
    assert _summary_without_time(one) == _summary_without_time(two)
    trace = read_trace(one / "run-0000" / "metrics.jsonl", metric="eval_score")
    assert list(trace.steps) == draw_config(0, SMALL).checkpoints()
    truth = json.loads((one / "run-0000" / "truth.json").read_text())
    assert truth["label"] in ("hacking", "healthy") and truth["params"]["seed"] == 0
    memory = generate_split("dev", 6, overrides=SMALL)
    assert [truth_json(run)["label"] for run in memory] == [
        json.loads((one / f"run-{i:04d}" / "truth.json").read_text())["label"] for i in range(6)
    ]
    summary = json.loads((one / "summary.json").read_text())
    assert summary["runs"] == 6 and summary["split"] == "dev"
    assert sum(summary["labels"].values()) == 6


def test_an_interrupted_generation_keeps_finished_runs(tmp_path: Path) -> None:
    """GYM-10: a leftover staging folder is removed, finished runs are not rerun, a folder with
    another run is refused, and a failing write leaves no partial run."""
    out = tmp_path / "out"
    write_runs(range(4), out, overrides=SMALL)
    before = _files(out)
    shutil.rmtree(out / "run-0003")
    (out / ".run-0003.tmp").mkdir()
    (out / ".run-0003.tmp" / "metrics.jsonl").write_text('{"step": 0')
    stamp = os.stat(out / "run-0000" / "truth.json").st_mtime_ns
    write_runs(range(4), out, overrides=SMALL)
    assert _files(out) == before
    assert os.stat(out / "run-0000" / "truth.json").st_mtime_ns == stamp  # not rewritten
    with pytest.raises(GymError, match="run-0000 holds another run"):
        write_runs(range(10, 14), out, overrides=SMALL)


def test_a_write_that_fails_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GYM-10: a disk that fills at the third run keeps runs 0 and 1 whole, leaves no staging
    folder and no run-0002, and is one GymError naming --out."""
    calls = {"n": 0}
    real = Path.write_text

    def full_disk(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.name == "truth.json":
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(28, "No space left on device")
        return real(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full_disk)
    out = tmp_path / "out"
    with pytest.raises(GymError, match=r"--out .*No space left"):
        write_runs(range(4), out, overrides=SMALL)
    assert sorted(p.name for p in out.iterdir()) == ["run-0000", "run-0001"]
