"""``evalstop watch`` (spec WCH): killed twice mid-stream, it decides as one replay does.

A real writer process appends evaluations to several runs (JSONL, CSV and a rewritten
trainer_state.json) while ``evalstop watch`` follows them in another process. The watcher is
SIGKILLed twice mid-stream and restarted; then the last one is ended with SIGTERM. The JSON
lines of all three, and the marker files, must equal what ``evalstop replay`` decides on the
finished logs: one line per stopped run, none repeated, none lost.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalstop.cli import main

WRITER = r"""
import json, math, os, sys, time
root = sys.argv[1]
ticks = int(sys.argv[2])

PEAKS = {
    "peak-early": 4, "peak-late": 14, "rising": 10**6, "zigzag": 9, "csv-peak": 7,
    "state-peak": 11,
}

def score(run, tick):
    peak = PEAKS[run]
    base = tick / (peak + 1) if tick <= peak else 1.0 - 0.05 * (tick - peak)
    if run == "zigzag" and tick % 3 == 0:
        base -= 0.02
    return round(base, 6)

runs = ["peak-early", "peak-late", "rising", "zigzag", "csv-peak", "state-peak"]
for run in runs:
    os.makedirs(os.path.join(root, run), exist_ok=True)
history = []
for tick in range(1, ticks + 1):
    step = 10 * tick
    for run in runs:
        folder = os.path.join(root, run)
        if run == "csv-peak":
            path = os.path.join(folder, "log.csv")
            first = not os.path.exists(path)
            with open(path, "a") as f:
                f.write(("step,score\n" if first else "") + f"{step},{score(run, tick)}\n")
        elif run == "state-peak":
            history.append({"step": step, "score": score(run, tick)})
            path = os.path.join(folder, "trainer_state.json")
            with open(path + ".tmp", "w") as f:
                json.dump({"log_history": history, "global_step": step}, f)
            os.replace(path + ".tmp", path)
        else:
            with open(os.path.join(folder, "metrics.jsonl"), "a") as f:
                f.write(json.dumps({"step": step, "score": score(run, tick), "loss": 1.0}) + "\n")
    time.sleep(0.08)
"""

TICKS = 45


def _watch(root: Path, state: Path, out: Path, marker_dir: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "evalstop",
        "watch",
        str(root),
        "--metric",
        "score",
        "--detector",
        "evalstop",  # the rule the replay below is given too: the two must decide alike
        "--state",
        str(state),
        "--interval",
        "0.05",
        "--on-stop",
        f"touch {marker_dir}/{{stop_step}}-{{name}}",
    ]
    with out.open("ab") as stdout:
        return subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE)


def _wait_for_lock(lock: Path, pid: int) -> None:
    """Until process ``pid`` holds the state file's lock, so its SIGTERM handler is in place
    (read from /proc/locks: probing the lock would race with the watcher taking it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.exists():
            inode = f":{lock.stat().st_ino} "
            held = Path("/proc/locks").read_text().splitlines()
            if any(f" {pid} " in line and inode in line for line in held):
                return
        time.sleep(0.05)
    raise AssertionError("the watcher never took the state file's lock")


def _replay(path: Path) -> dict[str, Any]:
    rule = ["--detector", "evalstop"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalstop",
            "replay",
            str(path),
            "--metric",
            "score",
            "--json",
            *rule,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_killed_twice_decides_as_one_replay_wch_3(tmp_path: Path) -> None:
    """WCH-3, WCH-4, WCH-7: SIGKILLed twice mid-stream, then SIGTERM: replay's decisions."""
    root, commands = tmp_path / "runs", tmp_path / "commands"
    root.mkdir()
    commands.mkdir()
    state, out = tmp_path / "state.sqlite", tmp_path / "decisions.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(TICKS)])
    watcher = _watch(root, state, out, commands)
    decided_at_kills = []
    for delay in (1.2, 1.0):
        time.sleep(delay)
        assert writer.poll() is None, "the writer ended before the kill: not mid-stream"
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
        decided_at_kills.append(len(out.read_text().splitlines()))
        watcher = _watch(root, state, out, commands)
    assert writer.wait(timeout=60) == 0
    expected = {}
    for folder in sorted(root.iterdir()):
        log = next(
            p
            for p in folder.iterdir()
            if p.name in ("metrics.jsonl", "log.csv", "trainer_state.json")
        )
        result = _replay(log)
        if result["stopped"]:
            expected[str(folder)] = (result["stop_step"], result["best_step"], result["best_value"])
    assert len(expected) == 5
    assert decided_at_kills[0] < len(expected), "every run was decided before the first kill"
    deadline = time.monotonic() + 60
    while len(out.read_text().splitlines()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # a few more polls: nothing more may be printed
    _wait_for_lock(Path(f"{state}.lock"), watcher.pid)
    watcher.send_signal(signal.SIGTERM)
    _, errors = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, errors
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    got = {
        line["run"]: (line["stop_step"], line["best_step"], line["best_value"]) for line in lines
    }
    assert len(lines) == len(got), "a decision was printed twice"
    assert got == expected
    for folder in root.iterdir():
        marker = folder / "evalstop-stop.json"
        if str(folder) in expected:
            assert json.loads(marker.read_text()) == next(
                line for line in lines if line["run"] == str(folder)
            )
        else:
            assert not marker.exists()
    assert sorted(p.name for p in commands.iterdir()) == sorted(
        f"{stop}-{Path(run).name}" for run, (stop, _, _) in expected.items()
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["watch", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_once_on_finished_logs_and_on_stop_fields_wch_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-4, WCH-7, WCH-9: --once decides finished runs; --on-stop gets each field as one
    argument (a quote in a run's name is text) and in its environment."""
    root = tmp_path / "runs"
    (root / "it's").mkdir(parents=True)
    scores = [0.1, 0.5, 0.4, 0.3, 0.2]
    (root / "it's" / "m.jsonl").write_text(
        "".join(json.dumps({"step": 10 * i, "score": s}) + "\n" for i, s in enumerate(scores))
    )
    state = str(tmp_path / "s.db")
    record = tmp_path / "record.txt"
    options = ["--metric", "score", "--detector", "evalstop", "--state", state, "--once"]
    script = f'printf "%s|%s|%s|%s" "$1" "$2" "$3" "$EVALSTOP_BEST_STEP" > {record}'
    command = f"sh -c '{script}' sh {{name}} {{stop_step}} {{best_value}}"
    code, out, err = cli(capsys, str(root), *options, "--on-stop", command)
    assert (code, err) == (0, "")
    body = json.loads(out)
    assert (body["name"], body["stop_step"], body["best_step"]) == ("it's", 30, 10)
    assert record.read_text() == "it's|30|0.5|10"
    assert json.loads((root / "it's" / "evalstop-stop.json").read_text()) == body
    assert cli(capsys, str(root), *options) == (0, "", "")


def test_wch2_knobs_build_the_detector_as_replay_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-2: --warmup-evals and the other knobs set the watcher's detector, as for replay."""
    root = tmp_path / "runs"
    (root / "a").mkdir(parents=True)
    scores = [1.0, 1.02, 0.6, 0.2, -0.2, -0.6]
    (root / "a" / "m.jsonl").write_text(
        "".join(json.dumps({"step": 10 * (i + 1), "score": s}) + "\n" for i, s in enumerate(scores))
    )
    stops = {}
    for warmup in ("4", "5"):
        state = str(tmp_path / f"s{warmup}.db")
        argv = [str(root), "--metric", "score", "--mode", "max", "--state", state, "--once"]
        code, out, err = cli(capsys, *argv, "--warmup-evals", warmup)
        assert (code, err) == (0, "")
        body = json.loads(out)
        assert body["detector"] == f"noise-aware(z=2,memory=0.3,warmup={warmup})"
        stops[warmup] = body["stop_step"]
        (root / "a" / "evalstop-stop.json").unlink()
    assert stops == {"4": 40, "5": 50}


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["{root}", "--metric", "s", "--k", "0"], "--k must be >= 1"),
        (["{root}/missing", "--metric", "s"], "not a directory"),
        (["--metric", "s"], "give at least one DIR or --mlflow"),
        (["{root}", "--metric", "s", "--experiment", "e"], "--experiment needs --mlflow"),
        (["{root}", "--metric", "s", "--interval", "0"], "--interval must be > 0"),
        (["{root}", "--metric", "s", "--on-stop", "echo {nope}"], "bad placeholder"),
        (["{root}", "--metric", "s", "--detector", "stopat"], "invalid choice"),
        (["{root}", "--metric", "s", "--k", "2", "--warmup-evals", "3"], "noise-aware"),
        (["{root}", "--metric", "s", "--warmup-evals", "-1"], "warmup_evals"),
        (["{root}"], "--metric"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_wch_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    """WCH-6: bad command-line input is one line on stderr and exit code 2."""
    argv = [a.replace("{root}", str(tmp_path)) for a in argv]
    code, _, err = cli(capsys, *argv, "--state", str(tmp_path / "s.db"), "--once")
    assert code == 2
    assert problem in err
    assert err.count("\n") == 1


def test_state_of_other_settings_is_refused_wch_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-5: a state file written with another metric is refused with one line, exit 2."""
    state = str(tmp_path / "s.db")
    options = ["--mode", "max", "--state", state, "--once"]
    assert cli(capsys, str(tmp_path), "--metric", "a", *options)[0] == 0
    code, _, err = cli(capsys, str(tmp_path), "--metric", "b", *options)
    assert code == 2
    assert "other settings" in err


def test_unreadable_run_is_reported_and_others_decided_wch_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-6: one stderr line for the broken run; the good run is still decided."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "m.jsonl").write_text('{"step": 1, "score": "x"}\n')
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "m.jsonl").write_text(
        "".join(json.dumps({"step": i, "score": 1 - i / 10}) + "\n" for i in range(4))
    )
    state = str(tmp_path / "s.db")
    options = ["--metric", "score", "--detector", "evalstop", "--state", state, "--once"]
    code, out, err = cli(capsys, str(tmp_path), *options)
    assert code == 0
    assert json.loads(out)["name"] == "good"
    assert err.count("\n") == 1
    assert "bad" in err and "not a number" in err
