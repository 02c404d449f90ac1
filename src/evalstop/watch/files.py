"""Bounded, non-blocking reading of growing log files for ``evalstop watch`` (spec ``WCH-12``).

Every read opens the file with ``O_NONBLOCK`` and checks with ``fstat`` that it is a regular
file before reading a byte, so a named pipe or a device planted under a log's name can never
hang the watcher. A file is identified by its device and inode plus a fingerprint of the bytes
just before the saved offset: when either changes (the log was rotated, copy-truncated,
replaced by a rewrite) or the file is shorter than the offset, the reader starts again at the
new file's first byte instead of skipping it. Before that, :func:`drain` finds the file read
before (renamed beside it, or the copy of a copytruncate) and reads what it still holds after
the saved offset, so rotation loses no line (``WCH-13``). Each read is bounded
(:data:`MAX_READ` bytes a poll), and so is a line (:data:`MAX_LINE`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from evalstop.watch.source import SourceError

__all__ = [
    "MAX_LINE",
    "MAX_READ",
    "Cursor",
    "Tail",
    "cursor_at",
    "drain",
    "opened",
    "pread",
    "read_tail",
]

MAX_READ = 64 * 2**20
"""Most bytes one poll reads from one file (the rest waits for the next poll). Chosen from
memory, not data: a few such buffers at once stay far below a sidecar's memory."""

MAX_LINE = 16 * 2**20
"""Longest JSONL or CSV line accepted: a line without a newline in this many bytes is a
problem, not a wait (a metrics line is a few hundred bytes)."""

_MARK_BYTES = 64

_MAX_COPIES = 64
"""Most siblings fingerprinted when looking for a copytruncate's copy (a bound on the work of
one poll in a folder of many files)."""


@attrs.frozen(slots=True)
class Cursor:
    """Where a reader is in a file: the offset, the file's identity, a fingerprint.

    Attributes:
        offset: the bytes read.
        device: ``st_dev`` of the file read.
        inode: ``st_ino`` of the file read.
        mark: a hash of the bytes before ``offset`` (up to 64 of them, and the file's first 64).
        last: the highest step folded from the file (-1: none), so a file rewritten from its
            start yields only what is new.
        extra: what else the reader keeps (a CSV header).
    """

    offset: int = 0
    device: int = -1
    inode: int = -1
    mark: str = ""
    last: int = -1
    extra: Any = None

    def to_json(self) -> list[Any]:
        """The position saved in the state file."""
        return [self.offset, self.device, self.inode, self.mark, self.last, self.extra]

    @classmethod
    def from_json(cls, position: Any) -> Cursor:
        """The cursor of a saved position (None: a new file).

        An offset (or ``[offset, header]``) saved before cursors existed, with no identity,
        reads the file again from its start: the monitor ignores the steps it folded.
        """
        if position is None or isinstance(position, int) or len(position) == 2:
            return cls()
        offset, device, inode, mark, last, extra = position
        return cls(int(offset), int(device), int(inode), str(mark), int(last), extra)


@contextlib.contextmanager
def opened(path: Path) -> Iterator[tuple[int, os.stat_result]]:
    """A read-only, non-blocking descriptor of a regular file, and its ``fstat``.

    Raises:
        SourceError: the file cannot be opened, or is not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError) as error:
        raise SourceError(f"{path}: cannot read ({_why(error)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"{path}: not a regular file; skipped")
        yield fd, info
    finally:
        os.close(fd)


def cursor_at(path: Path, offset: int, last: int = -1, extra: Any = None) -> Cursor:
    """The cursor of ``path`` read to ``offset``, for a position saved without the file's
    identity (schema 1, ``WCH-14``); when the file is gone or shorter, a cursor that reads it
    again from its start (its steps up to ``last`` skipped)."""
    try:
        with opened(path) as (fd, info):
            if info.st_size >= offset:
                mark = _mark(path, fd, offset)
                return Cursor(offset, info.st_dev, info.st_ino, mark, last, extra)
    except SourceError:
        pass
    return Cursor(last=last)


def _why(error: Exception) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def pread(path: Path, fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` (fewer at the end of the file)."""
    chunks: list[bytes] = []
    try:
        while size > 0:
            chunk = os.pread(fd, min(size, 2**24), offset)
            if not chunk:
                break
            chunks.append(chunk)
            size -= len(chunk)
            offset += len(chunk)
    except OSError as error:
        raise SourceError(f"{path}: cannot read ({_why(error)})") from None
    return b"".join(chunks)


def _fingerprint(head: bytes, window: bytes) -> str:
    return hashlib.sha256(head + b"|" + window).hexdigest()[:32]


def _mark(path: Path, fd: int, offset: int) -> str:
    """The fingerprint of a file read up to ``offset``: its first bytes and the last ones."""
    head = pread(path, fd, min(offset, _MARK_BYTES), 0)
    start = max(0, offset - _MARK_BYTES)
    return _fingerprint(head, pread(path, fd, offset - start, start))


@attrs.frozen(slots=True)
class Tail:
    """What one read found.

    Attributes:
        data: the bytes read.
        start: the cursor they start at (offset 0, no ``extra``, for a file read anew).
        device: the file's ``st_dev``.
        inode: the file's ``st_ino``.
        head: the file's first bytes (up to 64).
        before: the bytes just before ``start.offset`` (up to 64).
        whole: the read reached the end of the file (before a partial last line was cut).
    """

    data: bytes
    start: Cursor
    device: int
    inode: int
    head: bytes
    before: bytes
    whole: bool = True

    def cursor(self, consumed: int, last: int, extra: Any = None) -> Cursor:
        """The cursor after the first ``consumed`` bytes of :attr:`data`, with the last step
        folded and the reader's ``extra``."""
        offset = self.start.offset + consumed
        size = min(offset, _MARK_BYTES)
        window = (self.before + self.data[:consumed])[len(self.before) + consumed - size :]
        head = (self.head + self.data[:consumed])[:size] if self.start.offset == 0 else self.head
        mark = _fingerprint(head[:size], window)
        return Cursor(offset, self.device, self.inode, mark, last, extra)


def _unchanged(path: Path, fd: int, info: os.stat_result, saved: Cursor) -> bool:
    """The file is the one ``saved`` was read from, and still holds what was read."""
    return (
        (saved.device, saved.inode) == (info.st_dev, info.st_ino)
        and info.st_size >= saved.offset
        and _mark(path, fd, saved.offset) == saved.mark
    )


def _read(path: Path, fd: int, info: os.stat_result, start: Cursor, *, lines: bool) -> Tail:
    data = pread(path, fd, min(info.st_size - start.offset, MAX_READ), start.offset)
    whole = start.offset + len(data) >= info.st_size
    head = pread(path, fd, _MARK_BYTES, 0) if start.offset else b""
    low = max(0, start.offset - _MARK_BYTES)
    before = pread(path, fd, start.offset - low, low)
    if lines:
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) >= MAX_LINE:
            raise SourceError(f"{path}: a line longer than {MAX_LINE} bytes")
        data = data[:cut]
    return Tail(data, start, info.st_dev, info.st_ino, head, before, whole)


def read_tail(path: Path, saved: Cursor, *, lines: bool) -> Tail:
    """The bytes after ``saved`` (from the start of a rotated, truncated or rewritten file).

    Args:
        path: the file.
        saved: the cursor after the last read.
        lines: keep only complete lines (a partly written last line waits); refuse a line
            longer than :data:`MAX_LINE`.

    Raises:
        SourceError: unreadable, not a regular file, or a line too long.
    """
    with opened(path) as (fd, info):
        start = saved
        if saved.offset > 0 and not _unchanged(path, fd, info, saved):
            start = attrs.evolve(saved, offset=0, extra=None)
        return _read(path, fd, info, start, lines=lines)


def drain(path: Path, saved: Cursor, *, lines: bool) -> Tail | None:
    """What the file read before still holds after ``saved``, when ``path`` now names
    another file or was truncated (``WCH-13``); None when there is nothing to drain.

    The previous file is looked for among ``path``'s siblings: by its device and inode (a
    rename-and-create rotation), else, when ``path`` is the same file truncated, among the
    siblings whose name starts with ``path``'s (a copytruncate's copy); either must still
    match the saved fingerprint.

    Raises:
        SourceError: the previous file is found but cannot be read, or a line too long.
    """
    if saved.inode < 0:
        return None  # never read
    try:
        with opened(path) as (fd, info):
            if _unchanged(path, fd, info, saved):
                return None
            same = (saved.device, saved.inode) == (info.st_dev, info.st_ino)
    except SourceError:
        same = False  # renamed away and not created again yet
    for sibling in _candidates(path, saved, same=same):
        with opened(sibling) as (fd, info):
            if same:  # a copy: another file holding what was read
                copy = attrs.evolve(saved, device=info.st_dev, inode=info.st_ino)
                found = _unchanged(sibling, fd, info, copy)
            else:  # the very file read before, renamed
                found = _unchanged(sibling, fd, info, saved)
            if found:
                return _read(sibling, fd, info, saved, lines=lines)
    return None


def _candidates(path: Path, saved: Cursor, *, same: bool) -> list[Path]:
    """Siblings that may be the previous file: its inode (rotated), or a copy (``same``)."""
    try:
        entries = sorted(os.scandir(path.parent), key=lambda entry: entry.name)
    except OSError:
        return []
    found: list[Path] = []
    for entry in entries:
        if entry.name == path.name:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if not same and entry.inode() == saved.inode:
                return [Path(entry.path)]
        except OSError:
            continue
        if same and entry.name.startswith(path.name) and len(found) < _MAX_COPIES:
            found.append(Path(entry.path))
    return found
