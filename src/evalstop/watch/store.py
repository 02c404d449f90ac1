"""The watcher's state in one SQLite file: read positions, run monitors, decisions (spec ``WCH``).

Everything a poll learns about one run (its sources' new read positions, its monitor, and its
decision when the rule fires) is written in ONE transaction, so a process killed at any moment
(SIGKILL included) restarts from a state in which either all of a poll's reading of that run
was folded and recorded or none of it was (``WCH-3``). Decisions carry a delivery stage,
advanced in its own transaction after each of their two effects (the announcement: marker
file and JSON line; then the action: ``--on-stop``, an MLflow tag), so a decision is never
lost: a restart finishes every delivery still unfinished, redoing only the effect that was
under way (``WCH-4``).

The file is opened in WAL mode with ``synchronous=FULL``: a commit is on disk before any
effect of the decision it records. An advisory lock on ``<resolved state>.lock`` keeps a second
watcher off the same file, however its path is spelled (a symlink, a relative path: ``WCH-5``).
The file records its schema version (:data:`SCHEMA_VERSION`); a file of schema 1 is upgraded
atomically (:mod:`evalstop.watch.migrate`, ``WCH-14``); a file of another version, of another
program, or whose rows do not hold what this module wrote is refused with one line
(``WCH-10``).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import attrs

from evalstop.core.errors import EvalStopError
from evalstop.watch.migrate import MigrationError, migrate_schema_1

__all__ = ["ACTED", "ANNOUNCED", "SCHEMA_VERSION", "Pending", "StateError", "StateStore"]

SCHEMA_VERSION = 2
"""The layout of the state file. 1 (unrecorded) keyed runs by their path as given and saved a
file's position as an offset; 2 keys them by their resolved path (``WCH-11``) and saves a
cursor (``WCH-12``). A file of version 1 is upgraded on a copy, then renamed (``WCH-14``)."""

_TABLES = {"meta", "runs", "positions", "decisions", "sqlite_sequence"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(run TEXT PRIMARY KEY, monitor TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions(
    source TEXT PRIMARY KEY, run TEXT NOT NULL, position TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decisions(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL, delivered INTEGER NOT NULL DEFAULT 0);
"""


class StateError(EvalStopError):
    """The state file cannot be used: locked by another watcher, unreadable, or made by a
    watcher with other settings."""


ANNOUNCED = 1
"""Delivery stage: the marker and the JSON line are done."""
ACTED = 2
"""Delivery stage: the action (the command, the tag) is done too."""


@attrs.frozen(slots=True)
class Pending:
    """A decision whose delivery is unfinished: its sequence number, run, JSON fields and
    stage (0: nothing done, :data:`ANNOUNCED`)."""

    seq: int
    run: str
    body: dict[str, Any]
    stage: int


class StateStore:
    """The watcher's SQLite state file (one per watcher; see the module docstring).

    Args:
        path: the state file, created if absent.
        settings: the watcher's settings (metric, mode, detector, ...); a file made with other
            settings raises :class:`StateError` (its decisions would not be this rule's).
    """

    def __init__(self, path: str | os.PathLike[str], settings: Mapping[str, Any]) -> None:
        self._path = Path(path)
        resolved = self._path.resolve()
        if resolved.exists() and not resolved.is_file():
            raise StateError(f"{self._path}: not a regular file")
        self._lock = self._acquire(Path(f"{resolved}.lock"))
        try:
            self._db = sqlite3.connect(resolved, isolation_level=None)  # read, not written
            self._check_tables()
            if self._schema_one():
                self._db.close()
                self._migrate(resolved)
                self._db = sqlite3.connect(resolved, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._check_settings(json.dumps(dict(settings), sort_keys=True))
            self._check_rows()
        except sqlite3.Error as error:
            self.close()
            raise StateError(f"{self._path}: not a usable state file ({error})") from None
        except StateError:
            self.close()
            raise

    def _schema_one(self) -> bool:
        """A file of schema 1: settings recorded, no version (``WCH-14``)."""
        tables = self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        if "meta" not in {str(name) for (name,) in tables}:
            return False
        keys = {str(key) for (key,) in self._db.execute("SELECT key FROM meta")}
        return "settings" in keys and "version" not in keys

    def _migrate(self, resolved: Path) -> None:
        try:
            migrate_schema_1(resolved, SCHEMA_VERSION)
        except MigrationError as error:
            raise StateError(
                f"{self._path}: a damaged state file of schema 1 ({error}); use another "
                "--state file"
            ) from None
        except (OSError, sqlite3.Error) as error:
            raise StateError(
                f"{self._path}: cannot upgrade it from schema 1 ({error}); the file is unchanged"
            ) from None

    @staticmethod
    def _acquire(lock_path: Path) -> int:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise StateError(f"{lock_path}: cannot open ({error.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StateError(f"{lock_path}: another watcher holds this state file") from None
        return fd

    def _check_tables(self) -> None:
        rows = self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        foreign = {str(name) for (name,) in rows} - _TABLES
        if foreign:
            raise StateError(
                f"{self._path}: not an evalstop watch state file (it has tables "
                f"{sorted(foreign)}); use another --state file"
            )

    def _check_rows(self) -> None:
        """Every saved row is what this module writes: JSON of the right shape."""
        try:
            for (text,) in self._db.execute("SELECT position FROM positions"):
                json.loads(text)
            for (text,) in self._db.execute("SELECT monitor FROM runs"):
                if not isinstance(json.loads(text), dict):
                    raise ValueError("a monitor is not an object")
            for seq, body, stage in self._db.execute("SELECT seq, body, delivered FROM decisions"):
                if not isinstance(json.loads(body), dict) or stage not in (0, ANNOUNCED, ACTED):
                    raise ValueError(f"decision {seq} is malformed")
        except (TypeError, ValueError, RecursionError) as error:
            raise StateError(
                f"{self._path}: a damaged state file ({error}); use another --state file"
            ) from None

    def _check_settings(self, text: str) -> None:
        with self.transaction():
            version = self._db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            row = self._db.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
            if version is None and row is None:
                self._db.execute("INSERT INTO meta VALUES('version', ?)", (str(SCHEMA_VERSION),))
            elif version is None or version[0] != str(SCHEMA_VERSION):
                found = "an older evalstop" if version is None else f"schema {version[0]!r}"
                raise StateError(
                    f"{self._path}: made by {found}, this evalstop writes schema "
                    f"{SCHEMA_VERSION}; use another --state file"
                )
            if row is None:
                self._db.execute("INSERT INTO meta VALUES('settings', ?)", (text,))
            elif row[0] != text:
                raise StateError(
                    f"{self._path}: made by a watcher with other settings ({row[0]}); "
                    "use another --state file"
                )

    @property
    def path(self) -> Path:
        """The state file, as given."""
        return self._path

    def close(self) -> None:
        """Close the database and release the lock."""
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()
        os.close(self._lock)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic transaction: all writes inside it are committed together, or none."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    # -- reads -----------------------------------------------------------------------------

    def monitor(self, run: str) -> str | None:
        """The run's saved monitor (JSON text), or None for a run never folded."""
        row = self._db.execute("SELECT monitor FROM runs WHERE run=?", (run,)).fetchone()
        return None if row is None else str(row[0])

    def position(self, source: str) -> Any:
        """The saved read position of a source (JSON value), or None for a new source."""
        row = self._db.execute(
            "SELECT position FROM positions WHERE source=?", (source,)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    def decided(self) -> set[str]:
        """The runs with a decision (delivered or not): they are never read again."""
        return {str(row[0]) for row in self._db.execute("SELECT run FROM decisions")}

    def pending(self) -> list[Pending]:
        """Recorded decisions whose delivery is unfinished, in decision order."""
        rows = self._db.execute(
            "SELECT seq, run, body, delivered FROM decisions WHERE delivered<? ORDER BY seq",
            (ACTED,),
        )
        return [
            Pending(int(seq), str(run), json.loads(body), int(stage))
            for seq, run, body, stage in rows
        ]

    def decisions(self) -> list[dict[str, Any]]:
        """Every recorded decision's fields, in decision order."""
        rows = self._db.execute("SELECT body FROM decisions ORDER BY seq")
        return [json.loads(body) for (body,) in rows]

    # -- writes (inside :meth:`transaction`) -----------------------------------------------

    def save_monitor(self, run: str, monitor: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO runs VALUES(?, ?)", (run, monitor))

    def save_position(self, source: str, run: str, position: Any) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO positions VALUES(?, ?, ?)",
            (source, run, json.dumps(position)),
        )

    def record(self, run: str, body: Mapping[str, Any]) -> None:
        """Record the run's decision (once: a second decision for a run is an error)."""
        self._db.execute(
            "INSERT INTO decisions(run, body) VALUES(?, ?)",
            (run, json.dumps(dict(body), allow_nan=False)),
        )

    def mark_delivered(self, seq: int, stage: int) -> None:
        """Record that a decision reached a delivery stage (its own committed transaction)."""
        with self.transaction():
            self._db.execute("UPDATE decisions SET delivered=? WHERE seq=?", (stage, seq))
