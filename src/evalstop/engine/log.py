"""The event log: what a simulation writes, the only output besides its final state.

The fast engine writes it into columns (spec ``ENG-16``): a :class:`LogWriter` takes rows as
plain tuples and packs them into typed arrays in chunks; an :class:`EventLog` is an immutable
sequence over those columns that builds a :class:`LogRecord` only when one is read.
"""

from __future__ import annotations

import bisect
import enum
import math
import operator
import struct
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

from evalstop.core.model import JobId

__all__ = ["KIND_CODES", "EventLog", "LogColumns", "LogKind", "LogRecord", "LogWriter", "Row"]


class LogKind(enum.Enum):
    """What happened, as written to the event log."""

    ARRIVE = "arrive"
    START = "start"
    CHECKPOINT = "checkpoint"
    PREEMPT = "preempt"
    FINISH = "finish"
    STOP = "stop"


class LogRecord(NamedTuple):
    """One line of the event log: the only output of a simulation besides its final state.

    An immutable named tuple rather than a frozen attrs class, the one exception to the house
    rule: a run writes about eleven per job, and a named tuple is built about 4x faster
    (0.7 us against 3.2 us, measured for issue 12) at the same size.

    Attributes:
        time: when it happened.
        kind: what happened.
        job_id: to which job.
        gpus: GPUs the job holds (START, PREEMPT, FINISH, STOP) or asks for (ARRIVE).
        index: checkpoint index (CHECKPOINT; the last one for FINISH).
        step: training step of that checkpoint, or of the saved checkpoint (STOP).
        score: observed eval score at that checkpoint, or of the saved checkpoint (STOP).
        reason: why a job was stopped (STOP).
    """

    time: int
    kind: LogKind
    job_id: JobId
    gpus: int = 0
    index: int = 0  # type: ignore[assignment]  # shadows tuple.index, on purpose
    step: int | None = None
    score: float | None = None
    reason: str = ""


# A row as the engine writes it: (time, kind code, job id, gpus, index, step, score). Kinds
# without a step and a score (ARRIVE, START, PREEMPT) carry 0 and 0.0 there.
Row = tuple[int, int, int, int, int, int, float]

_KINDS = tuple(LogKind)
KIND_CODES: dict[LogKind, int] = {kind: code for code, kind in enumerate(_KINDS)}
"""Each kind's code in a :data:`Row`."""
_CODE = KIND_CODES
_SCORED = frozenset({_CODE[LogKind.CHECKPOINT], _CODE[LogKind.FINISH]})
_STOP = LogKind.STOP
_STOP_CODE = _CODE[_STOP]  # a STOP's code without hashing its kind (Enum.__hash__: ~100 ns)
_TYPECODES = ("q", "b", "q", "i", "i", "q", "d")  # time, kind, job, gpus, index, step, score
_LIMITS = (2**63, 0, 2**63, 2**31, 2**31, 2**63)
_CHUNK = 1024
_CHECKED = (0, 2, 3, 4, 5)  # the integer columns but the kind's, which reads back as a LogKind
_TIME_AND_STEP = (0, 5)  # those the engine's promise (LogWriter.exact) does not cover
_count, _pack = operator.countOf, struct.pack


def _fits(row: Row) -> bool:
    """Whether ``row`` reads back exactly from the columns (types and ranges)."""
    if type(row[6]) is not float:
        return False
    for value, limit in zip(row[:6], _LIMITS, strict=True):
        if type(value) is not int or (limit and not -limit <= value < limit):
            return False
    return True


def _row_of(record: LogRecord) -> tuple[Row, bool]:
    """The row for ``record``, and whether the row alone reads back as ``record``."""
    code = _CODE[record.kind]
    scored = code in _SCORED
    row: Any = (
        record.time,
        code,
        record.job_id,
        record.gpus,
        record.index,
        record.step if scored else 0,
        record.score if scored else 0.0,
    )
    plain = record.reason == "" and (scored or (record.step is None and record.score is None))
    return row, plain and _fits(row)


class LogColumns(NamedTuple):
    """A log's columns as read by :meth:`EventLog.columns`, one entry per record (``ENG-21``).

    Each column is a typed ``array.array`` (a copy: writing to it changes no log), so a
    reader can take it into numpy without a copy (``numpy.frombuffer``, the dtype named by
    its ``typecode``). At a position of ``odd`` the columns hold the record's kind code and
    zeros; the record itself, kept whole, is ``odd[position]``.

    Attributes:
        time: when each record happened.
        kind: each record's kind code (:data:`KIND_CODES`), at every position.
        job_id: to which job.
        gpus: GPUs held or asked for.
        index: checkpoint index.
        step: training step (0 for a kind that carries none).
        score: observed eval score (0.0 for a kind that carries none).
        odd: the records the columns cannot hold exactly, by position.
    """

    time: array[int]
    kind: array[int]
    job_id: array[int]
    gpus: array[int]
    index: array[int]  # type: ignore[assignment]  # shadows tuple.index, as LogRecord's
    step: array[int]
    score: array[float]
    odd: dict[int, LogRecord]


def _same_scores(a: array[float], b: array[float]) -> bool:
    if a.tobytes() == b.tobytes():
        return True
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


class EventLog(Sequence[LogRecord]):
    """An immutable sequence of :class:`LogRecord` stored in columns (``ENG-16``).

    Built by a :class:`LogWriter` (or :meth:`of`); reading a record builds it. 41 bytes per
    record in a finished run's log against about 140 for a stored named tuple; the records
    kept whole are held by ascending position (a typed array of positions beside a tuple of
    records: 16 bytes each beyond the record, where a dict keyed by position took about 70).
    """

    __slots__ = ("_columns", "_length", "_odd", "_places")

    def __init__(
        self, columns: Sequence[array[Any]], odd: dict[int, LogRecord], length: int
    ) -> None:
        self._columns = tuple(columns)
        places = sorted(odd)  # records kept whole: their positions (all below length) ...
        self._places = array("q", places)
        self._odd = tuple(map(odd.__getitem__, places))  # ... and the records, in that order
        self._length = length

    @classmethod
    def of(cls, records: Sequence[LogRecord] | Iterator[LogRecord]) -> EventLog:
        """A log of ``records``, in order."""
        writer = LogWriter()
        for record in records:
            writer.append(record)
        return writer.log()

    def __len__(self) -> int:
        return self._length

    def _record(self, position: int) -> LogRecord:
        places = self._places
        if places:
            at = bisect.bisect_left(places, position)
            if at < len(places) and places[at] == position:
                return self._odd[at]
        time, code, job, gpus, index, step, score = (c[position] for c in self._columns)
        if code in _SCORED:
            return LogRecord(time, _KINDS[code], job, gpus, index, step, score)
        return LogRecord(time, _KINDS[code], job, gpus, index)

    @overload
    def __getitem__(self, key: int) -> LogRecord: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[LogRecord, ...]: ...
    def __getitem__(self, key: int | slice) -> LogRecord | tuple[LogRecord, ...]:
        if isinstance(key, slice):
            return tuple(self._record(p) for p in range(*key.indices(self._length)))
        position = key + self._length if key < 0 else key
        if not 0 <= position < self._length:
            raise IndexError(f"log index {key} out of range ({self._length} records)")
        return self._record(position)

    def __iter__(self) -> Iterator[LogRecord]:
        kinds, scored = _KINDS, _SCORED
        odd = iter(zip(self._places, self._odd, strict=True))
        place, kept = next(odd, (-1, None))
        rows = zip(*(column[: self._length] for column in self._columns), strict=True)
        for position, (time, code, job, gpus, index, step, score) in enumerate(rows):
            if position == place and kept is not None:
                yield kept
                place, kept = next(odd, (-1, None))
            elif code in scored:
                yield LogRecord(time, kinds[code], job, gpus, index, step, score)
            else:
                yield LogRecord(time, kinds[code], job, gpus, index)

    def _odd_records(self) -> dict[int, LogRecord]:
        return dict(zip(self._places, self._odd, strict=True))

    def columns(self) -> LogColumns:
        """The log as columns (``ENG-21``): for readers that want a few fields of many records
        without building a :class:`LogRecord` for each. O(length), copies of typed arrays."""
        time, kind, job_id, gpus, index, step, score = self._trimmed()
        return LogColumns(time, kind, job_id, gpus, index, step, score, self._odd_records())

    def _trimmed(self) -> tuple[array[Any], ...]:
        return tuple(column[: self._length] for column in self._columns)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | tuple):
            return len(other) == self._length and all(
                a == b or repr(a) == repr(b) for a, b in zip(self, other, strict=True)
            )
        if not isinstance(other, EventLog):
            return NotImplemented
        if self._length != other._length or self._places != other._places:
            return False
        mine, theirs = self._trimmed(), other._trimmed()
        if mine[:6] != theirs[:6] or not _same_scores(mine[6], theirs[6]):
            return False
        return all(a == b or repr(a) == repr(b) for a, b in zip(self._odd, other._odd, strict=True))

    def __hash__(self) -> int:
        return hash((self._length, *(c.tobytes() for c in self._trimmed()[:6])))

    def __repr__(self) -> str:
        return f"EventLog({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (EventLog, (self._trimmed(), self._odd_records(), self._length))


class LogWriter:
    """The engine's side of an :class:`EventLog`: rows appended as tuples, packed in chunks.

    ``rows`` is the pending list (the engine appends :data:`Row` tuples to it directly and
    calls :meth:`pack` when it holds ``chunk`` rows or more); a record that the columns cannot
    hold exactly goes through :meth:`append`, or is found when packed, and is kept whole. A
    row's kind code reads back as its :class:`LogKind` whatever its integer type, so only its
    range is checked when packed; its other values are checked to be exact.

    Args:
        chunk: pending rows worth packing (a bound on the pending list, not on the log).
        exact: the engine's promise that the job id, GPUs and index of every row it appends
            are exactly ``int``s, so that a pack checks only the types of the times, steps
            and scores (``ENG-16``: the fast engine keeps it while the id and the GPUs of each
            job it was given are ``int``s, and sets the attribute to False when they are not;
            it writes no other index than its own counts).
    """

    __slots__ = ("_columns", "_odd", "chunk", "exact", "rows")

    def __init__(self, chunk: int = _CHUNK, *, exact: bool = False) -> None:
        self.chunk = chunk
        self.exact = exact
        self._columns: tuple[array[Any], ...] = tuple(array(code) for code in _TYPECODES)
        self._odd: dict[int, LogRecord] = {}
        self.rows: list[Row] = []

    def __len__(self) -> int:
        return len(self._columns[0]) + len(self.rows)

    def append(self, record: LogRecord) -> None:
        """Append any record (kept whole when the columns cannot hold it exactly)."""
        if record.reason:  # a reason is never held in the columns (a STOP's, ENG-16)
            rows, kind = self.rows, record.kind
            self._odd[len(self._columns[0]) + len(rows)] = record
            rows.append((0, _STOP_CODE if kind is _STOP else _CODE[kind], 0, 0, 0, 0, 0.0))
            return
        row, plain = _row_of(record)
        if not plain:
            self._odd[len(self)] = record
            row = (0, row[1], 0, 0, 0, 0, 0.0)
        self.rows.append(row)

    def pack(self) -> None:
        """Move the pending rows into the columns."""
        rows = self.rows
        if not rows:
            return
        n = len(rows)
        columns = list(zip(*rows, strict=True))
        # exact types only (a bool or a numpy integer would read back as an int; a kind code
        # reads back as its LogKind), in the columns the engine did not promise (exact);
        # packed through struct, a few times faster than array(code, values), to the same
        # bytes, which also checks the ranges
        if _count(map(type, columns[6]), float) == n and all(
            _count(map(type, columns[c]), int) == n
            for c in (_TIME_AND_STEP if self.exact else _CHECKED)
        ):
            try:
                packed = [
                    _pack(f"{n}{code}", *c) for code, c in zip(_TYPECODES, columns, strict=True)
                ]
            except struct.error:  # a value beyond its column's range
                packed = []
            if packed:
                for column, part in zip(self._columns, packed, strict=True):
                    column.frombytes(part)
                rows.clear()
                return
        self._pack_slowly()

    def _pack_slowly(self) -> None:
        base = len(self._columns[0])
        for offset, pending in enumerate(self.rows):
            row = pending
            if not _fits(row):
                code = row[1]
                step, score = (row[5], row[6]) if code in _SCORED else (None, None)
                time, _, job, gpus, index = row[:5]
                self._odd[base + offset] = LogRecord(
                    time, _KINDS[code], job, gpus, index, step, score
                )
                row = (0, code, 0, 0, 0, 0, 0.0)
            for column, value in zip(self._columns, row, strict=True):
                column.append(value)
        self.rows.clear()

    def settle(self) -> None:
        """Pack the pending rows and drop the columns' spare capacity (``ENG-16``: an array
        grows by about 1/16 ahead of its length, 2-3 bytes a record): for a finished run,
        whose log is kept while the writer is not. O(length), a copy of each column."""
        self.pack()
        self._columns = tuple(column[:] for column in self._columns)

    def log(self) -> EventLog:
        """The log written so far (O(1) plus the odd records; later rows do not change it)."""
        self.pack()
        return EventLog(self._columns, self._odd, len(self._columns[0]))
