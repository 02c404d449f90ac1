"""Upgrade a state file of schema 1 to schema 2, atomically (spec ``WCH-14``).

Schema 1 (evalstop before the watch wing) had the tables of schema 2 but recorded no version;
it keyed runs and sources by their path as given (``runs/a``, ``runs/a/m.jsonl``), and saved a
JSONL or TensorBoard file's position as a byte offset and a CSV file's as ``[offset, header]``.
Schema 2 keys them by the resolved folder (``WCH-11``) and saves a file's position as a
:class:`~evalstop.watch.files.Cursor` (offset, identity, fingerprint: ``WCH-12``).

The upgrade works on a copy (``<state>.migrating`` beside it, taken with SQLite's backup, so a
write-ahead log is included): every key is resolved against the current directory (where the
old watcher ran, for a relative root), every file position becomes the cursor of the file now
at that path when it still holds the offset's bytes (else a cursor that reads it again from
its start, whose steps already folded the monitor skips), and the version is recorded; then
the copy replaces the file by a rename. Until that rename the original is untouched: a failed
upgrade leaves it as it was and removes the copy. Two old keys that resolve to one run (a root
given once relative, once absolute) keep the earliest decision and that run's rows.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from evalstop.core.errors import EvalStopError
from evalstop.watch.files import cursor_at

__all__ = ["MigrationError", "migrate_schema_1"]

_MLFLOW = "mlflow:"


class MigrationError(EvalStopError, ValueError):
    """A schema-1 file whose rows are not what schema 1 wrote."""


def migrate_schema_1(path: Path, version: int) -> None:
    """Upgrade the schema-1 state file ``path`` (resolved, locked by the caller, closed) to
    ``version``, in place by rename, or leave it untouched.

    Raises:
        MigrationError: a row is not what a schema-1 watcher wrote.
        sqlite3.Error: the copy cannot be made or written (a full disk).
        OSError: the rename fails.
    """
    copy = path.with_name(path.name + ".migrating")
    with contextlib.suppress(FileNotFoundError):
        copy.unlink()
    try:
        source = sqlite3.connect(path)
        target = sqlite3.connect(copy, isolation_level=None)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            target.execute("BEGIN IMMEDIATE")
            _upgrade(target)
            target.execute("INSERT INTO meta VALUES('version', ?)", (str(version),))
            target.execute("COMMIT")
        finally:
            source.close()
            target.close()
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise OSError(f"{wal} was not checkpointed")
        _fsync(copy)
        os.replace(copy, path)
        _fsync(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            copy.unlink()
        raise


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _run_key(key: str) -> str:
    return key if key.startswith(_MLFLOW) else str(Path(key).resolve())


def _source_key(key: str) -> str:
    if key.startswith(_MLFLOW):
        return key
    given = Path(key)
    return str(given.parent.resolve() / given.name)


def _upgrade(db: sqlite3.Connection) -> None:
    """Re-key every row and turn file positions into cursors (inside the open transaction)."""
    query = "SELECT seq, run, body, delivered FROM decisions ORDER BY seq"
    decisions = db.execute(query).fetchall()
    db.execute("DELETE FROM decisions")
    kept: set[str] = set()
    for seq, run, body, delivered in decisions:
        key = _run_key(_text(run))
        if key not in kept:
            kept.add(key)
            db.execute("INSERT INTO decisions VALUES(?, ?, ?, ?)", (seq, key, body, delivered))
    decided_old = {_text(run) for _, run, _, _ in decisions}
    runs = db.execute("SELECT run, monitor FROM runs").fetchall()
    db.execute("DELETE FROM runs")
    lasts: dict[str, int] = {}
    for run, monitor in sorted(runs, key=lambda row: (row[0] not in decided_old, row[0])):
        key = _run_key(_text(run))
        if key not in lasts:
            lasts[key] = _last_step(monitor)
            db.execute("INSERT INTO runs VALUES(?, ?)", (key, monitor))
    positions = db.execute("SELECT source, run, position FROM positions").fetchall()
    db.execute("DELETE FROM positions")
    for source, run, position in sorted(positions, key=lambda row: (row[1] not in decided_old,)):
        key, run_key = _source_key(_text(source)), _run_key(_text(run))
        moved = _position(key, _json(position), lasts.get(run_key, -1))
        db.execute(
            "INSERT OR IGNORE INTO positions VALUES(?, ?, ?)", (key, run_key, json.dumps(moved))
        )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise MigrationError(f"a key is {type(value).__name__}, not text")
    return value


def _json(text: object) -> Any:
    try:
        return json.loads(_text(text))
    except ValueError:
        raise MigrationError("a saved value is not JSON") from None


def _last_step(monitor: object) -> int:
    """The highest step a schema-1 monitor folded (-1: none), from its saved JSON."""
    data = _json(monitor)
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise MigrationError("a saved monitor has no jobs")
    steps = [job.get("last_step") for job in jobs if isinstance(job, dict)]
    return max([-1, *(step for step in steps if isinstance(step, int))])


def _position(key: str, position: Any, last: int) -> Any:
    """A schema-1 position in schema 2: a file's offset (and CSV header) becomes a cursor; a
    trainer state's ``[last, size, mtime]`` and an MLflow run's last step are unchanged."""
    if key.startswith(_MLFLOW):
        if not isinstance(position, int):
            raise MigrationError(f"{key}: a position that is not a step")
        return position
    if isinstance(position, int) and position >= 0:
        return cursor_at(Path(key), position, last, None).to_json()
    if isinstance(position, list) and len(position) == 2:
        offset, header = position
        if isinstance(offset, int) and offset >= 0 and _header(header):
            return cursor_at(Path(key), offset, last, header).to_json()
    if (
        isinstance(position, list)
        and len(position) == 3
        and all(isinstance(item, int) for item in position)
    ):
        return position
    raise MigrationError(f"{key}: a position schema 1 did not write ({position!r:.60})")


def _header(header: object) -> bool:
    return header is None or (
        isinstance(header, list) and all(isinstance(cell, str) for cell in header)
    )
