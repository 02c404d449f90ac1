"""Output folders whose files are all or nothing (spec ``REP-6``).

A command stages every file it writes in a hidden folder inside the output folder, then moves
them into place with ``os.replace`` -- an atomic rename on the same file system -- while
SIGINT and SIGTERM are held back, so an interrupt, a full disk or a crash leaves either the
previous files or the complete new set, never a truncated one. A file that already exists is
kept beside the new one as ``<name>.prev`` (the choice over refusing without ``--force``: a
rerun never needs a flag and never loses the last results). Because the rename replaces a
symlink rather than following it, no write lands outside the folder through a symlink
(``REP-6``). Every problem is a one-line :class:`~evalstop.cli.errors.CliError`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType

from evalstop.cli.errors import CliError

__all__ = ["BACKUP_SUFFIX", "OutputDir"]

BACKUP_SUFFIX = ".prev"
"""Suffix of the previous version of a file an output folder replaces."""

_HELD = {signal.SIGINT, signal.SIGTERM}


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (then arrive as usual)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class OutputDir:
    """An output folder whose files appear together, each whole, or not at all.

    Use as a context manager: ``stage(name)`` gives the path to write ``name`` to,
    ``commit()`` moves every staged file into the folder; leaving the block without a commit
    (an error, an interrupt) removes what was staged and leaves the folder as it was.

    Args:
        folder: the output folder; created when missing.
        option: how messages name it (the command-line option).
        names: files the command will write, checked before any work starts.
    """

    def __init__(self, folder: Path, option: str = "--out", names: Iterable[str] = ()) -> None:
        self.folder = folder
        self.option = option
        self._staging: Path | None = None
        if folder.exists() and not folder.is_dir():
            raise CliError(f"{option} {folder}: exists and is not a directory")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CliError(f"{option} {folder}: cannot create it ({_reason(error)})") from None
        for name in names:
            self._check_target(name)

    def _check_target(self, name: str) -> Path:
        if not name or name != Path(name).name or name.startswith("."):
            raise ValueError(f"output file names are plain names, got {name!r}")
        target = self.folder / name
        if target.is_dir() and not target.is_symlink():
            raise CliError(f"{self.option} {target}: is a directory, cannot write a file there")
        return target

    def __enter__(self) -> OutputDir:
        try:
            self._staging = Path(tempfile.mkdtemp(prefix=".evalstop-staging-", dir=self.folder))
        except OSError as error:
            raise CliError(
                f"{self.option} {self.folder}: cannot write ({_reason(error)})"
            ) from None
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    @property
    def staging(self) -> Path:
        """The hidden folder files are staged in (for writers that take a folder)."""
        if self._staging is None:
            raise RuntimeError("staging outside the output folder's with block")
        return self._staging

    def stage(self, name: str) -> Path:
        """Where to write file ``name`` now; it reaches the folder at :meth:`commit`."""
        self._check_target(name)
        return self.staging / name

    def write_text(self, name: str, text: str) -> None:
        """Stage ``name`` with ``text`` (UTF-8); a full disk is a one-line CliError."""
        path = self.stage(name)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            raise CliError(
                f"{self.option} {self.folder / name}: cannot write ({_reason(error)})"
            ) from None

    def commit(self) -> list[Path]:
        """Move every staged file into the folder, keeping replaced ones as ``.prev``."""
        if self._staging is None:
            raise RuntimeError("commit() outside the output folder's with block")
        staged = sorted(self._staging.iterdir())
        written: list[Path] = []
        with _signals_held():
            for source in staged:
                target = self._check_target(source.name)
                try:
                    if os.path.lexists(target):
                        os.replace(target, target.with_name(target.name + BACKUP_SUFFIX))
                    os.replace(source, target)
                except OSError as error:
                    raise CliError(
                        f"{self.option} {target}: cannot write ({_reason(error)})"
                    ) from None
                written.append(target)
        return written
