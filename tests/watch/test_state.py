"""The state file: its lock, version and contents are checked; a failed write loses nothing
(spec WCH-5, WCH-10)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from evalstop.watch.store import SCHEMA_VERSION, StateError, StateStore
from watch_builders import cli, jsonl_run, once

SETTINGS = {"metric": "score", "mode": "max", "detector": "evalstop-k2"}


def test_wch5_the_lock_is_on_the_resolved_file(tmp_path: Path) -> None:
    """WCH-5: a second watcher reaching the state through a symlink or a relative path is
    refused while the first runs."""
    store = StateStore(tmp_path / "s.db", SETTINGS)
    (tmp_path / "link.db").symlink_to(tmp_path / "s.db")
    (tmp_path / "sub").mkdir()
    for other in (tmp_path / "link.db", tmp_path / "sub" / ".." / "s.db"):
        with pytest.raises(StateError, match="another watcher"):
            StateStore(other, SETTINGS)
    store.close()
    StateStore(tmp_path / "link.db", SETTINGS).close()


def _damage(path: Path, statement: str) -> None:
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("DELETE FROM meta WHERE key='version'", "a damaged state file of schema 1"),
        ("UPDATE meta SET value='99' WHERE key='version'", "made by schema '99'"),
        ("CREATE TABLE users(id INTEGER)", "not an evalstop watch state file"),
        ("UPDATE decisions SET body='[1'", "a damaged state file"),
        ("UPDATE decisions SET delivered=7", "a damaged state file"),
        ("UPDATE runs SET monitor='3'", "a damaged state file"),
        ("UPDATE positions SET position='{'", "a damaged state file"),
    ],
)
def test_wch10_a_foreign_old_or_tampered_state_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str, problem: str
) -> None:
    """WCH-10: each bad state file is one line naming it, exit 2, no traceback."""
    jsonl_run(tmp_path / "runs" / "a")
    jsonl_run(tmp_path / "runs" / "b", [0.1, 0.2])
    state = tmp_path / "s.db"
    assert cli(capsys, str(tmp_path / "runs"), *once(state))[0] == 0
    _damage(state, damage)
    code, out, err = cli(capsys, str(tmp_path / "runs"), *once(state))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and str(state) in err and problem in err


def test_wch10_a_monitor_that_does_not_decode_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-10: a saved monitor that is JSON but not a monitor: one line, exit 2."""
    jsonl_run(tmp_path / "runs" / "b", [0.1, 0.2])
    state = tmp_path / "s.db"
    assert cli(capsys, str(tmp_path / "runs"), *once(state))[0] == 0
    _damage(state, """UPDATE runs SET monitor='{"format": "nope"}'""")
    (tmp_path / "runs" / "b" / "m.jsonl").open("a").write('{"step": 90, "score": 0.3}\n')
    code, out, err = cli(capsys, str(tmp_path / "runs"), *once(state))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "damaged" in err


def test_wch10_not_sqlite_and_version_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-10: a file that is not SQLite is one line; a new file records its version."""
    (tmp_path / "junk.db").write_bytes(b"\x00garbage" * 500)
    code, _, err = cli(capsys, str(tmp_path), *once(tmp_path / "junk.db"))
    assert code == 2 and err.count("\n") == 1 and "not a usable state file" in err
    StateStore(tmp_path / "new.db", SETTINGS).close()
    db = sqlite3.connect(tmp_path / "new.db")
    assert db.execute("SELECT value FROM meta WHERE key='version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    db.close()


def test_wch10_a_full_disk_is_one_line_and_nothing_is_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-10: a write that fails (SQLite's "database or disk is full") ends the watcher with
    one line, exit 2; restarted with room, it decides the run: nothing was lost."""
    jsonl_run(tmp_path / "runs" / "a")
    state = tmp_path / "s.db"

    def full(self: StateStore, run: str, monitor: str) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(StateStore, "save_monitor", full)
        code, out, err = cli(capsys, str(tmp_path / "runs"), *once(state))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "disk is full" in err and str(state) in err
    assert not (tmp_path / "runs" / "a" / "evalstop-stop.json").exists()
    code, out, err = cli(capsys, str(tmp_path / "runs"), *once(state))
    assert (code, err) == (0, "")
    assert json.loads(out)["stop_step"] == 30
