"""``--on-stop`` without a shell, off the polling loop (spec WCH-9)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from evalstop.watch.actions import ActionRunner, CommandError, argv_template, substitute
from watch_builders import cli, jsonl_run, once

BODY = {
    "run": "/r/a",
    "name": "a",
    "path": "/r/a",
    "metric": "score",
    "detector": "evalstop(k=2)",
    "stop_step": 30,
    "best_step": 10,
    "best_value": 0.5,
    "evals": 4,
}


def test_wch9_a_field_is_one_argument_never_parsed() -> None:
    """WCH-9: each placeholder is replaced inside its own argument; braces and bad names."""
    argv = argv_template("scancel --name={name} '{path} x' {{literal}}")
    hostile = {**BODY, "name": "$(touch x);rm -rf ~", "path": "a b"}
    assert substitute(argv, hostile) == [
        "scancel",
        "--name=$(touch x);rm -rf ~",
        "a b x",
        "{literal}",
    ]
    for bad in ("echo {nope}", "echo {", "echo 'open", "", "echo {name!r}"):
        with pytest.raises(CommandError):
            argv_template(bad)


def test_wch9_run_folders_named_like_shell_code_run_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-9: runs named ``$(touch x)`` and ``a;touch x``: the command gets the names as text,
    quoted in the template or not, and no ``x`` is created anywhere."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "runs"
    for name in ("$(touch x)", "a;touch x", "`touch x`"):
        jsonl_run(root / name)
    log = tmp_path / "names.txt"
    script = f'printf "%s\\n" "$1" >> {log}'
    for template in (f"sh -c '{script}' sh {{name}}", f"sh -c '{script}' sh \"{{name}}\""):
        log.unlink(missing_ok=True)
        state = tmp_path / f"s{len(template)}.db"
        code, _out, err = cli(capsys, str(root), *once(state), "--on-stop", template)
        assert (code, err) == (0, "")
        assert sorted(log.read_text().splitlines()) == ["$(touch x)", "`touch x`", "a;touch x"]
        for folder in root.iterdir():
            (folder / "evalstop-stop.json").unlink()
    assert not list(tmp_path.rglob("x")), "a run name was run as a command"


def test_wch9_facts_in_the_environment_output_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """WCH-9: the fields are EVALSTOP_* variables; the command's output is not on stdout."""
    jsonl_run(tmp_path / "runs" / "a")
    command = "sh -c 'echo from-the-command $EVALSTOP_NAME $EVALSTOP_STOP_STEP $EVALSTOP_EVALS'"
    code = cli_fd(tmp_path, command)
    out, err = capfd.readouterr()
    assert code == 0
    assert out.count("\n") == 1 and '"stop_step": 30' in out
    assert "from-the-command a 30 4" in err


def cli_fd(tmp_path: Path, command: str) -> int:
    from evalstop.cli import main

    state = tmp_path / "s.db"
    return main(["watch", str(tmp_path / "runs"), *once(state), "--on-stop", command])


def test_wch9_timeout_kills_the_command_and_its_children() -> None:
    """WCH-9: a command past its timeout is killed with its process group, and reported."""
    problems: list[str] = []
    runner = ActionRunner(argv=("sh", "-c", "sleep 30 & sleep 30"), timeout=0.5, jobs=1,
                          report=problems.append)  # fmt: skip
    began = time.monotonic()
    assert runner.start(1, BODY)
    while runner.busy():
        time.sleep(0.02)
    assert time.monotonic() - began < 5
    assert runner.finished() == [1]
    assert problems == ["/r/a: --on-stop killed after 0.5 s"]


def test_wch9_at_most_jobs_at_once_and_close_leaves_them_undone(tmp_path: Path) -> None:
    """WCH-9: a third decision waits while two commands run; closing kills running commands
    and does not report them finished (a restart runs them again)."""
    runner = ActionRunner(argv=(sys.executable, "-c", "import time; time.sleep(30)"), jobs=2)
    assert runner.start(1, BODY) and runner.start(2, BODY)
    assert not runner.start(3, BODY)
    assert runner.start(1, BODY), "a running decision is not started twice"
    began = time.monotonic()
    runner.close(grace=0.2)
    assert time.monotonic() - began < 5
    time.sleep(0.2)
    assert runner.finished() == []
    assert not runner.start(3, BODY), "a closed runner starts nothing"


def test_wch9_a_failing_command_is_one_line(tmp_path: Path) -> None:
    """WCH-9: a non-zero exit and a missing program are reported, and count as done."""
    problems: list[str] = []
    for argv in (("false",), (str(tmp_path / "no-such-program"),)):
        runner = ActionRunner(argv=argv, report=problems.append)
        runner.start(7, BODY)
        while runner.busy():
            time.sleep(0.02)
        assert runner.finished() == [7]
    assert problems[0] == "/r/a: --on-stop exited with 1"
    assert problems[1].startswith("/r/a: --on-stop cannot start")
    assert os.environ.get("EVALSTOP_RUN") is None, "the watcher's own environment changed"
