"""``evalstop simulate`` (CLI-1 to CLI-3, CLI-8)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from evalstop.cli import main

SMALL = ["--jobs", "80", "--gpus", "16"]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli2_same_seed_identical_json_other_seed_differs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CLI-2: determinism of the whole command."""
    first = run_cli(capsys, "simulate", "--json", "--seed", "1", *SMALL)
    second = run_cli(capsys, "simulate", "--json", "--seed", "1", *SMALL)
    third = run_cli(capsys, "simulate", "--json", "--seed", "2", *SMALL)
    assert first[0] == 0 and first[1] == second[1]
    assert first[1] != third[1]


def test_cli3_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-3: the documented keys, with values in range."""
    code, out, _ = run_cli(capsys, "simulate", "--json", "--policy", "fifo", *SMALL)
    assert code == 0
    summary = json.loads(out)
    for key in (
        "policy",
        "seed",
        "jobs",
        "jct_mean",
        "jct_p95",
        "makespan",
        "utilization",
        "wasted_gpu_time",
        "detection",
    ):
        assert key in summary
    assert summary["policy"] == "fifo"
    assert summary["jobs"] == 80
    assert 0.0 <= summary["utilization"] <= 1.0
    assert summary["detection"]["precision"] is None  # nothing stopped: undefined
    assert summary["jct_p95"] >= summary["jct_median"]


def test_wld2_simulate_takes_a_world(capsys: pytest.CaptureFixture[str]) -> None:
    """WLD-2: --world selects the world (default paper); the two give different runs."""
    default = run_cli(capsys, "simulate", "--json", *SMALL)
    paper = run_cli(capsys, "simulate", "--json", "--world", "paper", *SMALL)
    calibrated = run_cli(capsys, "simulate", "--json", "--world", "calibrated", *SMALL)
    assert default[0] == paper[0] == calibrated[0] == 0
    assert default[1] == paper[1]
    assert json.loads(calibrated[1])["jobs"] == 80
    assert calibrated[1] != paper[1]


def test_cli2_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-2: the default output is a readable table."""
    code, out, _ = run_cli(capsys, "simulate", *SMALL)
    assert code == 0
    assert "evalstop(k=2)+srtf-est" in out
    assert "JCT p95" in out and "precision" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--policy", "nope"], "unknown policy 'nope'"),
        (["--gpus", "-3"], "--gpus must be >= 1"),
        (["--hacking-share", "2"], "--hacking-share"),
        (["--noise", "-1"], "--noise"),
        (["--world", "real"], "--world"),
        (["--evals-per-run", "0"], "--evals-per-run"),
        (["--mix", "rlhf=x"], "--mix"),
        (["--mix", "ppo=1"], "--mix"),
        (["--k", "0"], "--k"),
        (["--jobs", "many"], "--jobs"),
    ],
)
def test_cli1_bad_options_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    """CLI-1: one line on stderr naming the problem, exit code 2."""
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("evalstop: error:")
    assert needle in err


def test_cli1_no_traceback_from_the_console_entry() -> None:
    """CLI-1: through a real process: exit 2 and no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "evalstop.cli", "simulate", "--gpus", "-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("evalstop: error:")


def test_cli1_closed_pipe_ends_quietly() -> None:
    """CLI-1: a reader that goes away (``evalstop simulate | head``) ends it without a traceback.

    The pipe is closed before the command has printed anything, so its first write fails.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstop.cli", "simulate", "--jobs", "300", "--gpus", "16"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err


def test_cli4_version(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-4: --version prints the one version and exits 0."""
    import evalstop
    from evalstop.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"evalstop {evalstop.__version__}"


def test_cli5_json_and_title_name_the_world(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-5: the JSON and the table say which world, noise and density produced the run."""
    _, out, _ = run_cli(capsys, "simulate", "--json", *SMALL)
    assert json.loads(out)["world"] == {"name": "paper", "sigma": 0.02, "evals_per_run": 10}
    _, out, _ = run_cli(
        capsys, "simulate", "--json", "--world", "calibrated", "--evals-per-run", "20", *SMALL
    )
    world = json.loads(out)["world"]
    assert world["name"] == "calibrated" and world["evals_per_run"] == 20
    assert world["sigma"] > 0.02  # the calibrated world's own, larger noise
    _, out, _ = run_cli(capsys, "simulate", "--json", "--noise", "0.07", *SMALL)
    assert json.loads(out)["world"]["sigma"] == 0.07
    _, table, _ = run_cli(capsys, "simulate", "--world", "calibrated", *SMALL)
    assert "world calibrated (sigma " in table.splitlines()[0] + table


def test_cli8_a_line_on_stderr_as_each_step_ends(capsys: pytest.CaptureFixture[str]) -> None:
    """CLI-8: the workload's and the run's lines on stderr, with their figures; stdout the
    JSON object alone; none with --no-progress; none before an error in the workload."""
    code, out, err = run_cli(capsys, "simulate", "--json", "--policy", "evalstop+fifo", *SMALL)
    assert code == 0
    summary = json.loads(out)
    built, ran = err.splitlines()
    assert re.fullmatch(r"simulate: 80 jobs on 16 GPUs built in \d+\.\d s", built)
    events = f"{summary['events']:,}"
    assert re.fullmatch(
        rf"simulate: {re.escape(summary['policy'])}, {events} events in \d+\.\d s", ran
    )
    quiet = run_cli(capsys, "simulate", "--json", "--no-progress", *SMALL)
    assert quiet[0] == 0 and quiet[2] == "" and json.loads(quiet[1])["jobs"] == 80
    code, out, err = run_cli(capsys, "simulate", "--trace", "no-such-file.csv", *SMALL)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("evalstop: error:")
