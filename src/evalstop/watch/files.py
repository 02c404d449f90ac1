"""Bounded, non-blocking reading of growing log files for ``evalstop watch`` (spec ``WCH-12``).

Every read opens the file with ``O_NONBLOCK`` and checks with ``fstat`` that it is a regular
file before reading a byte, so a named pipe or a device planted under a log's name can never
hang the watcher. A file is identified by its device and inode plus a fingerprint of the bytes
just before the saved offset: when either changes (the log was rotated, copy-truncated,
replaced by a rewrite) or the file is shorter than the offset, the reader starts again at the
new file's first byte instead of skipping it. Each read is bounded (:data:`MAX_READ` bytes a
poll), and so is a line (:data:`MAX_LINE`).
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

__all__ = ["MAX_LINE", "MAX_READ", "Cursor", "Tail", "opened", "pread", "read_tail"]

MAX_READ = 64 * 2**20
"""Most bytes one poll reads from one file (the rest waits for the next poll). Chosen from
memory, not data: a few such buffers at once stay far below a sidecar's memory."""

MAX_LINE = 16 * 2**20
"""Longest JSONL or CSV line accepted: a line without a newline in this many bytes is a
problem, not a wait (a metrics line is a few hundred bytes)."""

_MARK_BYTES = 64


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
        """The cursor of a saved position (None: a new file)."""
        if position is None:
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
    """

    data: bytes
    start: Cursor
    device: int
    inode: int
    head: bytes
    before: bytes

    def cursor(self, consumed: int, last: int, extra: Any = None) -> Cursor:
        """The cursor after the first ``consumed`` bytes of :attr:`data`, with the last step
        folded and the reader's ``extra``."""
        offset = self.start.offset + consumed
        size = min(offset, _MARK_BYTES)
        window = (self.before + self.data[:consumed])[len(self.before) + consumed - size :]
        head = (self.head + self.data[:consumed])[:size] if self.start.offset == 0 else self.head
        mark = _fingerprint(head[:size], window)
        return Cursor(offset, self.device, self.inode, mark, last, extra)


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
        if saved.offset > 0 and (
            (saved.device, saved.inode) != (info.st_dev, info.st_ino)
            or info.st_size < saved.offset
            or _mark(path, fd, saved.offset) != saved.mark
        ):
            start = attrs.evolve(saved, offset=0, extra=None)
        data = pread(path, fd, min(info.st_size - start.offset, MAX_READ), start.offset)
        head = pread(path, fd, _MARK_BYTES, 0) if start.offset else b""
        low = max(0, start.offset - _MARK_BYTES)
        before = pread(path, fd, start.offset - low, low)
    if lines:
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) >= MAX_LINE:
            raise SourceError(f"{path}: a line longer than {MAX_LINE} bytes")
        data = data[:cut]
    return Tail(data, start, info.st_dev, info.st_ino, head, before)
