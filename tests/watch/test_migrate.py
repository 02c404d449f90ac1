"""A state file of schema 1, written by the last evalstop before the watch wing, is upgraded
atomically (spec WCH-14)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from evalstop.watch import migrate
from evalstop.watch.files import Cursor
from evalstop.watch.store import SCHEMA_VERSION
from watch_builders import cli

OLD = Path(__file__).parent.parent / "data" / "watch-schema-1"
ARGS = ["runs", "--metric", "score", "--mode", "max", "--detector", "evalstop", "--k", "2"]
ARGS += ["--state", "state.sqlite", "--once"]


def _old_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str | None = None) -> Path:
    """The old watcher's folder: its runs and its state file, rebuilt from the committed dump;
    the current directory is the one it ran in."""
    shutil.copytree(OLD / "runs", tmp_path / "runs")
    state = tmp_path / "state.sqlite"
    db = sqlite3.connect(state)
    db.executescript((OLD / "state.sql").read_text() if sql is None else sql)
    db.close()
    monkeypatch.chdir(tmp_path)
    return state


def _rows(state: Path, query: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(state)
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write("".join(line + "\n" for line in lines))


def test_wch14_a_schema_1_state_is_upgraded_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-14: the old file's stop (run a) is not delivered again; runs b (JSONL) and c (CSV)
    go on from their positions: only the new lines are folded (evals 3 + 2), and the file is
    of schema 2, keyed by resolved paths, with nothing left beside it."""
    state = _old_state(tmp_path, monkeypatch)
    code, out, err = cli(capsys, *ARGS)
    assert (code, out, err) == (0, "", "")
    assert _rows(state, "SELECT value FROM meta WHERE key='version'") == [(str(SCHEMA_VERSION),)]
    runs = tmp_path.resolve() / "runs"
    assert _rows(state, "SELECT run FROM decisions") == [(str(runs / "a"),)]
    keys = {str(key) for (key,) in _rows(state, "SELECT source FROM positions")}
    assert keys == {str(runs / "a" / "metrics.jsonl"), str(runs / "b" / "metrics.jsonl"),
                    str(runs / "c" / "log.csv")}  # fmt: skip
    assert not (tmp_path / "state.sqlite.migrating").exists()
    lines = [json.dumps({"step": s, "score": v}) for s, v in ((40, 0.35), (50, 0.3))]
    _append(tmp_path / "runs" / "b" / "metrics.jsonl", lines)
    _append(tmp_path / "runs" / "c" / "log.csv", ["40,0.35", "50,0.3"])
    code, out, err = cli(capsys, *ARGS)
    assert (code, err) == (0, "")
    stops = sorted((json.loads(line) for line in out.splitlines()), key=lambda d: d["run"])
    assert [(d["run"], d["stop_step"], d["best_step"], d["evals"]) for d in stops] == [
        (str(runs / "b"), 50, 30, 5),
        (str(runs / "c"), 50, 30, 5),
    ]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("UPDATE positions SET position='{\"x\": 1}'", "damaged state file of schema 1"),
        ("UPDATE runs SET monitor='[1'", "damaged state file of schema 1"),
        ("UPDATE positions SET position='[1, 2, 3, 4, 5, 6]'", "did not write"),
    ],
)
def test_wch14_a_tampered_schema_1_state_is_one_line_and_untouched(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
    problem: str,
) -> None:
    """WCH-14: rows schema 1 never wrote: one line naming the file, exit 2; the file is byte
    for byte what it was, and no copy is left."""
    sql = (OLD / "state.sql").read_text().replace("COMMIT;", f"{damage};\nCOMMIT;")
    state = _old_state(tmp_path, monkeypatch, sql)
    before = _sha(state)
    code, out, err = cli(capsys, *ARGS)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "state.sqlite" in err and problem in err
    assert _sha(state) == before
    assert not (tmp_path / "state.sqlite.migrating").exists()


def test_wch14_a_full_disk_during_the_upgrade_leaves_the_file_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-14: the copy cannot be written (a full disk) or renamed: one line, exit 2, the
    original unchanged; with room again the upgrade succeeds."""
    state = _old_state(tmp_path, monkeypatch)
    before = _sha(state)

    def full(db: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    def no_rename(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    for owner, name, failure in ((migrate, "_upgrade", full), (os, "replace", no_rename)):
        with monkeypatch.context() as patch:
            patch.setattr(owner, name, failure)
            code, out, err = cli(capsys, *ARGS)
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and "cannot upgrade" in err and "unchanged" in err
        assert _sha(state) == before
        assert not (tmp_path / "state.sqlite.migrating").exists()
    assert cli(capsys, *ARGS) == (0, "", "")


def test_wch14_two_old_keys_of_one_run_keep_the_earliest_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-14: the old watcher ran once with the root relative, once absolute, and decided
    run a twice: the upgraded file has one decision, the first."""
    absolute = str(tmp_path.resolve() / "runs" / "a")
    twin = (
        f"INSERT INTO decisions VALUES(2,'{absolute}','{{\"run\": \"{absolute}\"}}',2);\n"
        f"INSERT INTO runs SELECT '{absolute}', monitor FROM runs WHERE run='runs/a';\n"
    )
    sql = (OLD / "state.sql").read_text().replace("COMMIT;", f"{twin}COMMIT;")
    state = _old_state(tmp_path, monkeypatch, sql)
    assert cli(capsys, *ARGS) == (0, "", "")
    assert _rows(state, "SELECT seq, run FROM decisions") == [(1, absolute)]
    assert _rows(state, "SELECT run FROM runs ORDER BY run")[0] == (absolute,)


def test_wch14_an_offset_saved_before_cursors_reads_the_file_again() -> None:
    """WCH-14, WCH-12: a bare offset (a state written between schema 2 and cursors) is a
    cursor without identity: the file is read from its start, never a crash."""
    assert Cursor.from_json(137) == Cursor()
    assert Cursor.from_json([32, ["step", "score"]]) == Cursor()
