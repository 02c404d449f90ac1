"""The proxy reward and the KL, read beside the metric and passed to the monitor (WCH-16)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalstop.cli import main
from evalstop.core.divergence import DivergenceDetector
from evalstop.watch.follow import CsvSource, EventFileSource, JsonlSource, TrainerStateSource
from evalstop.watch.source import Point, Sides, SourceError
from watch_builders import cli, tfwrite


def test_wch16_jsonl_and_csv_read_the_sides_of_the_same_record(tmp_path: Path) -> None:
    """WCH-16: the side values of the evaluation's own line; absent: None; a default key's
    bad value: None; other keys given."""
    path = tmp_path / "m.jsonl"
    lines = [
        {"step": 1, "score": 0.5, "proxy_reward": 0.25, "kl": 2},
        {"step": 2, "score": 0.4},
        {"step": 3, "score": 0.3, "proxy_reward": "n/a", "kl": "NaN"},
        {"step": 4, "score": 0.2, "rm": 1.5, "kl_coef_kl": 0.125},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    points, _ = JsonlSource(path, "score").read(None)
    assert points[:2] == [Point(1, 0.5, 0.25, 2.0), Point(2, 0.4)]
    assert points[2][:3] == (3, 0.3, None) and points[2].kl != points[2].kl  # NaN kept
    given = Sides("rm", "kl_coef_kl", frozenset({"rm", "kl_coef_kl"}))
    points, _ = JsonlSource(path, "score", sides=given).read(None)
    assert points[3] == Point(4, 0.2, 1.5, 0.125) and points[0] == Point(1, 0.5)
    csv = tmp_path / "log.csv"
    csv.write_text("step,score,proxy_reward,kl\n10,0.1,0.5,\n20,0.2,,0.75\n")
    points, _ = CsvSource(csv, "score").read(None)
    assert points == [Point(10, 0.1, 0.5, None), Point(20, 0.2, None, 0.75)]


def test_wch16_a_bad_value_under_a_given_key_is_a_problem(tmp_path: Path) -> None:
    """WCH-16, WCH-6: a side value that is not a number, under a key given: one line naming
    the file and the key."""
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "score": 0.5, "rm": "high"}\n')
    with pytest.raises(SourceError, match=r"'rm' is .*high.*, not a number") as caught:
        JsonlSource(path, "score", sides=Sides("rm", "kl", frozenset({"rm"}))).read(None)
    assert str(path) in str(caught.value)


def test_wch16_a_trainer_state_joins_a_steps_entries(tmp_path: Path) -> None:
    """WCH-16: Hugging Face logs a step's train entry (with the KL and reward) and its eval
    entry apart: the eval point carries both."""
    history: list[dict[str, Any]] = [
        {"step": 10, "kl": 0.5, "proxy_reward": 1.0},
        {"step": 10, "eval_score": 0.3},
        {"step": 20, "eval_score": 0.4},
        {"step": 20, "kl": 0.75},
    ]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    points, _ = TrainerStateSource(tmp_path, "eval_score").read(None)
    assert points == [Point(10, 0.3, 1.0, 0.5), Point(20, 0.4, None, 0.75)]


def test_wch16_an_event_file_joins_the_tags_of_a_step(tmp_path: Path) -> None:
    """WCH-16: TensorBoard writes each tag as its own record: the records of the
    evaluation's step read in the same poll give its side values."""
    pytest.importorskip("tensorboard")
    tf = tfwrite()
    events = [
        tf.scalar_event(5, "kl", 0.5),
        tf.scalar_event(5, "score", 0.25),
        tf.scalar_event(5, "proxy_reward", 2.0),
        tf.scalar_event(6, "score", 0.125),
    ]
    data, _ = tf.tf_file(events)
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(data)
    points, _ = EventFileSource(path, "score").read(None)
    assert points == [Point(5, 0.25, 2.0, 0.5), Point(6, 0.125)]


def _decisions(out: str) -> dict[str, tuple[int, int | None]]:
    bodies = [json.loads(line) for line in out.splitlines()]
    return {body["name"]: (body["stop_step"], body["best_step"]) for body in bodies}


def test_wch16_divergence_on_a_gym_run_folder_decides_as_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-16, WCH-2: ``evalstop gym --runs 3`` writes run folders; watch with only
    ``--metric`` and the divergence detector stops what replay stops, where replay stops
    (which needs its side signal: without it, the eval-only fallback stops fewer)."""
    gym = tmp_path / "gym"
    assert main(["gym", "--runs", "3", "--out", str(gym)]) == 0
    capsys.readouterr()
    logs = sorted(str(p) for p in gym.glob("run-*/metrics.jsonl"))
    assert main(["replay", *logs, "--metric", "eval_score", "--detector", "divergence",
                 "--json"]) == 0  # fmt: skip
    replayed = json.loads(capsys.readouterr().out)
    expected = {
        Path(r["path"]).parent.name: (r["stop_step"], r["best_step"])
        for r in replayed
        if r["stopped"]
    }
    assert expected, "the gym's hacking runs stop under replay"
    options = ["--metric", "eval_score", "--detector", "divergence", "--once"]
    code, out, err = cli(capsys, str(gym), *options, "--state", str(tmp_path / "s.db"))
    assert (code, err) == (0, "")
    assert _decisions(out) == expected
    bare = tmp_path / "bare"
    shutil.copytree(gym, bare)
    for log in bare.glob("run-*/metrics.jsonl"):
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        log.write_text("".join(json.dumps({k: r[k] for k in ("step", "eval_score")}) + "\n"
                               for r in rows))  # fmt: skip
    code, out, err = cli(capsys, str(bare), *options, "--state", str(tmp_path / "b.db"))
    assert code == 0 and _decisions(out) != expected
    notes = err.splitlines()
    (signal,) = DivergenceDetector().needs  # the side signal its defaults read
    assert len(notes) == 3
    assert all(f"no {signal} to read" in line and "SIG-8" in line for line in notes)
