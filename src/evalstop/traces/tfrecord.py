"""TFRecord framing of TensorBoard event files, read with every declared size checked.

A record is ``length (u64) | masked CRC-32C of length (u32) | data | masked CRC-32C of data
(u32)``. Reading stops at the size the file had when it was opened. A record cut short by the
end of the file -- the normal state of a log still being written -- ends the read and is
reported; a checksum that does not match anywhere is corruption, an error naming the file and
the byte offset, because every later record is in doubt (spec ``TRC-14``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from evalstop.traces.errors import MalformedTraceError, UnreadableTraceError

__all__ = ["HEADER", "RecordFile", "header_ok"]

HEADER = 12
"""Bytes before a record's data: its length and the length's checksum."""

_FOOTER = 4
Checksum = Callable[[bytes], int]


def header_ok(header: bytes, crc: Checksum) -> bool:
    """Whether 12 bytes are a record header: a length and its matching checksum."""
    if len(header) < HEADER:
        return False
    expected: int = struct.unpack("<I", header[8:HEADER])[0]
    return crc(header[:8]) == expected


class RecordFile:
    """The records of one file; after iterating, ``truncated_at`` is the offset of an
    incomplete last record, or None.

    Args:
        path: a regular file.
        label: how messages name the trace (a directory, or the file itself).
        crc: the masked CRC-32C function.
    """

    def __init__(self, path: Path, label: str, crc: Checksum) -> None:
        self.path = path
        self.label = label
        self.crc = crc
        self.truncated_at: int | None = None

    def _corrupt(self, offset: int, what: str) -> MalformedTraceError:
        where = "" if str(self.path) == self.label else f"{self.path.name}: "
        if offset == 0:
            return MalformedTraceError(
                self.label, f"{where}not a TensorBoard event file ({what} at byte 0)"
            )
        return MalformedTraceError(
            self.label,
            f"{where}record at byte {offset}: {what}; the file is corrupt from there on "
            "(not the incomplete end of a log being written)",
        )

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        """``(offset, data)`` for each complete, checksummed record."""
        try:
            with self.path.open("rb") as handle:
                size = self.path.stat().st_size
                yield from self._records(handle.read, size)
        except OSError as error:
            raise UnreadableTraceError(
                self.label, f"cannot read {self.path.name}: {error.strerror or error}"
            ) from None

    def _records(self, read: Callable[[int], bytes], size: int) -> Iterator[tuple[int, bytes]]:
        offset = 0
        while offset < size:
            header = read(min(HEADER, size - offset))
            if len(header) < HEADER:
                self.truncated_at = offset
                return
            if not header_ok(header, self.crc):
                raise self._corrupt(offset, "bad length checksum")
            (length,) = struct.unpack("<Q", header[:8])
            end = offset + HEADER + length + _FOOTER
            if end > size:  # declared beyond the end: checked before anything is allocated
                self.truncated_at = offset
                return
            data = read(length)
            footer = read(_FOOTER)
            if len(data) < length or len(footer) < _FOOTER:
                self.truncated_at = offset  # the file shrank while being read
                return
            if self.crc(data) != struct.unpack("<I", footer)[0]:
                raise self._corrupt(offset, "bad data checksum")
            yield offset, data
            offset = end
