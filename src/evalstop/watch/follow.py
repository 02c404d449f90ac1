"""Incremental readers for ``evalstop watch``: new evaluations of growing logs (spec ``WCH-1``).

Each reader is a :class:`~evalstop.watch.source.Source`: given the position saved after its
last read, it reads only what follows and returns the new position, so a watcher never re-reads
what it folded. Every reader is bounded against hostile input (``WCH-12``): files are opened
non-blocking and must be regular (:mod:`evalstop.watch.files`), reads and lines are capped,
JSON nesting and number length are checked as replay checks them
(``evalstop.traces.source.parse_json``), and a TensorBoard record's length and a tensor's
size are checked before anything is allocated.

- JSONL and CSV files grow by appending lines: the position is a
  :class:`~evalstop.watch.files.Cursor` (byte offset, file identity, fingerprint, last step,
  and for CSV the header). Only complete lines are read; a partly written last line waits. A
  rotated, truncated or rewritten file is read again from its first byte, and only its steps
  after the last one folded count; before that, the previous file (renamed beside it, or a
  copytruncate's copy) is drained to its end (``WCH-13``).
- TensorBoard event files grow by appending records, followed the same way; only complete
  records are read, each checked against its CRC-32C checksums (a mismatch is corruption,
  reported; a record cut short is the end of a log being written, and waits).
- A ``trainer_state.json`` is rewritten whole at each save (in the run folder or in its latest
  ``checkpoint-<step>`` folder): the position is the last step folded, and entries at or
  before it are skipped; the file is parsed again only when its size or time changed.

Values are read as ``evalstop.traces.parse.parse_value`` reads them for replay; a missing
value is no evaluation; a step is ``parse_step``'s. Beside the metric each reader reads the
side signals (:class:`~evalstop.watch.source.Sides`: the proxy reward and the KL, ``WCH-16``)
logged with it: in the same JSONL or CSV record, in an entry of the same step of a trainer
state, in a record of the same step read in the same poll of an event file.
"""

from __future__ import annotations

import csv
import math
import stat
import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from evalstop.traces.errors import ReaderUnavailableError, TraceError
from evalstop.traces.parse import STEP_CANDIDATES, Bad, parse_step, parse_value
from evalstop.traces.source import MAX_JSON_BYTES, parse_json
from evalstop.traces.tensorboard import _checksum, _modules
from evalstop.traces.tfrecord import header_ok
from evalstop.watch.files import MAX_READ, Cursor, Tail, drain, opened, pread, read_tail
from evalstop.watch.source import Point, Sides, SourceError

__all__ = [
    "MAX_RECORD",
    "CsvSource",
    "EventFileSource",
    "JsonlSource",
    "TrainerStateSource",
    "latest_trainer_state",
    "regular",
]

MAX_RECORD = MAX_READ
"""Largest TensorBoard record read (its length is checked before it is read): a record that
claims more is a problem line, not a wait for bytes that never come."""


_DEFAULT = Sides()


def _value(label: str, line: int, metric: str, raw: object) -> float | None:
    value = parse_value(raw)
    if isinstance(value, Bad):
        raise SourceError(f"{label}: line {line}: {metric!r} is {value.text!r}, not a number")
    return value


def _step(label: str, line: int, cells: dict[str, Any], column: str | None) -> int | None:
    if column is None:
        column = next((c for c in STEP_CANDIDATES if c in cells), None)
        if column is None:
            raise SourceError(f"{label}: line {line}: no step key (one of {STEP_CANDIDATES})")
    try:
        return parse_step(cells.get(column), label, line, column)
    except TraceError as error:
        raise SourceError(str(error)) from None


def _decode(path: Path, chunk: bytes) -> list[str]:
    try:
        return chunk.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text") from None


def _side(
    label: str, line: int, sides: Sides, name: str | None, cells: dict[str, Any]
) -> float | None:
    """A side signal's value in one record (``WCH-16``): None when absent, or when not a
    number under a default key; a problem when not a number under a key given."""
    if name is None:
        return None
    value = parse_value(cells.get(name))
    if isinstance(value, Bad):
        if name in sides.given:
            raise SourceError(f"{label}: line {line}: {name!r} is {value.text!r}, not a number")
        return None
    return value


def _sides(
    label: str, line: int, sides: Sides, cells: dict[str, Any]
) -> tuple[float | None, float | None]:
    return (
        _side(label, line, sides, sides.proxy_reward, cells),
        _side(label, line, sides, sides.kl, cells),
    )


def _json(label: str, text: str, where: str) -> Any:
    try:
        return parse_json(label, text, where)
    except TraceError as error:
        raise SourceError(str(error)) from None


def _keep(
    points: list[Point], tail: Tail, consumed: int, extra: Any = None
) -> tuple[list[Point], Cursor]:
    """The points, less those at or before the last step folded when the file is read again
    from its start (rotated, rewritten), and the cursor after ``consumed`` bytes."""
    last = tail.start.last
    if tail.start.offset == 0 and last >= 0:
        points = [point for point in points if point.step > last]
    last = max([last, *(point.step for point in points)])
    return points, tail.cursor(consumed, last, extra)


Parse = Callable[[Tail], tuple[list[Point], int, Any]]
"""A reader's parsing of one tail: its points, the bytes consumed, the cursor's ``extra``."""


def _parsed(tail: Tail, parse: Parse) -> tuple[list[Point], Cursor]:
    points, consumed, extra = parse(tail)
    return _keep(points, tail, consumed, extra)


def _follow(path: Path, position: Any, *, lines: bool, parse: Parse) -> tuple[list[Point], Any]:
    """The points after ``position``: first what a rotated or copy-truncated previous file
    still holds (``WCH-13``), then the file's own, and the position after them."""
    saved = Cursor.from_json(position)
    points: list[Point] = []
    old = drain(path, saved, lines=lines)
    if old is not None:
        points, cursor = _parsed(old, parse)
        if not old.whole:
            return points, cursor.to_json()  # the rest of the previous file at the next poll
        saved = Cursor(last=cursor.last)
        try:
            tail = read_tail(path, saved, lines=lines)
        except SourceError:
            return points, cursor.to_json()  # renamed away, not created again yet
    else:
        tail = read_tail(path, saved, lines=lines)
    new, cursor = _parsed(tail, parse)
    return points + new, cursor.to_json()


class JsonlSource:
    """New records of a JSONL file (one JSON object per line); position: a cursor."""

    def __init__(
        self, path: Path, metric: str, step_column: str | None = None, sides: Sides = _DEFAULT
    ) -> None:
        self._path, self._metric, self._step_column = path, metric, step_column
        self._sides = sides

    @property
    def key(self) -> str:
        return str(self._path)

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        return _follow(self._path, position, lines=True, parse=self._parse)

    def _parse(self, tail: Tail) -> tuple[list[Point], int, Any]:
        points: list[Point] = []
        for number, line in enumerate(_decode(self._path, tail.data), 1):
            if not line.strip():
                continue
            cells = _json(self.key, line, f"line {number}")
            if not isinstance(cells, dict):
                raise SourceError(f"{self._path}: a line is not a JSON object")
            self._add(points, number, cells)
        return points, len(tail.data), None

    def _add(self, points: list[Point], number: int, cells: dict[str, Any]) -> None:
        value = _value(self.key, number, self._metric, cells.get(self._metric))
        if value is not None:
            step = _step(self.key, number, cells, self._step_column)
            if step is not None:
                points.append(Point(step, value, *_sides(self.key, number, self._sides, cells)))


class CsvSource(JsonlSource):
    """New rows of a CSV file with a header line; position: a cursor holding the header."""

    def _parse(self, tail: Tail) -> tuple[list[Point], int, Any]:
        header = tail.start.extra
        points: list[Point] = []
        rows = csv.reader(_decode(self._path, tail.data))
        try:
            for number, cells in enumerate(rows, 1):
                if not cells or not "".join(cells).strip():
                    continue
                if header is None:
                    header = [cell.strip() for cell in cells]
                    continue
                self._add(points, number, dict(zip(header, cells, strict=False)))
        except csv.Error as error:
            raise SourceError(f"{self._path}: not CSV ({error})") from None
        return points, len(tail.data), header


_HEADER = struct.Struct("<QI")
_CRC = 4


class EventFileSource:
    """New scalars of one TensorBoard event file; position: a cursor (``tensorboard`` extra
    needed)."""

    def __init__(self, path: Path, metric: str, sides: Sides = _DEFAULT) -> None:
        self._path, self._metric, self._sides = path, metric, sides
        self._tags = {metric, *sides.names()}

    @property
    def key(self) -> str:
        return str(self._path)

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        return _follow(self._path, position, lines=False, parse=self._parse)

    def _parse(self, tail: Tail) -> tuple[list[Point], int, Any]:
        data, base = tail.data, tail.start.offset
        event_pb2, tensor_util = _tensorboard(self.key)
        crc = _checksum()
        scalars: list[tuple[str, int, float]] = []
        at = 0
        while at + _HEADER.size <= len(data):
            if not header_ok(data[at : at + _HEADER.size], crc):
                raise self._corrupt(base + at, "its length's checksum does not match")
            (length, _crc) = _HEADER.unpack_from(data, at)
            if length > MAX_RECORD:
                raise self._corrupt(base + at, f"it claims {length} bytes (limit {MAX_RECORD})")
            end = at + _HEADER.size + length + _CRC
            if end > len(data):
                break  # the incomplete end of a log being written: wait for the rest
            payload = data[at + _HEADER.size : end - _CRC]
            if crc(payload) != struct.unpack_from("<I", data, end - _CRC)[0]:
                raise self._corrupt(base + at, "its data's checksum does not match")
            event = event_pb2.Event()
            try:
                event.ParseFromString(payload)
            except Exception as error:  # protobuf's DecodeError
                raise SourceError(f"{self._path}: a broken event record ({error})") from None
            scalars.extend(self._scalars(event, tensor_util))
            at = end
        return self._points(scalars), at, None

    def _points(self, scalars: list[tuple[str, int, float]]) -> list[Point]:
        """The metric's scalars, each with the side signals of its step read with it."""
        side = {(tag, step): value for tag, step, value in scalars}
        return [
            Point(step, value, side.get((self._sides.proxy_reward or "", step)),
                  side.get((self._sides.kl or "", step)))
            for tag, step, value in scalars
            if tag == self._metric
        ]  # fmt: skip

    def _corrupt(self, at: int, what: str) -> SourceError:
        return SourceError(f"{self._path}: record at byte {at}: {what}; the file is corrupt")

    def _scalars(self, event: Any, tensor_util: Any) -> Iterable[tuple[str, int, float]]:
        if not event.HasField("summary"):
            return
        for value in event.summary.value:
            if value.tag not in self._tags:
                continue
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                yield value.tag, int(event.step), float(value.simple_value)
            elif kind == "tensor" and _one_element(value.tensor):
                array = tensor_util.make_ndarray(value.tensor)
                if array.size == 1 and array.dtype.kind in "fiu":
                    yield value.tag, int(event.step), float(array.reshape(()))


def _one_element(tensor: Any) -> bool:
    """A tensor whose shape holds one element: checked before any array is made, so a tensor
    claiming gigabytes is skipped, never allocated."""
    sizes = [int(dim.size) for dim in tensor.tensor_shape.dim]
    return all(size == 1 for size in sizes) and math.prod(sizes) == 1


def _tensorboard(label: str) -> tuple[Any, Any]:
    """The reader's TensorBoard modules (``traces/tensorboard.py``); a source's error without."""
    try:
        return _modules(label)
    except ReaderUnavailableError as error:
        raise SourceError(str(error)) from None


class TrainerStateSource:
    """New ``log_history`` entries of a run's latest ``trainer_state.json``; position:
    ``[last step folded, file size, file mtime_ns]``."""

    def __init__(self, folder: Path, metric: str, sides: Sides = _DEFAULT) -> None:
        self._folder, self._metric, self._sides = folder, metric, sides

    @property
    def key(self) -> str:
        return str(self._folder / "trainer_state.json")

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        last, size, mtime = (-1, -1, -1) if position is None else position
        path = latest_trainer_state(self._folder)
        if path is None:
            return [], position
        with opened(path) as (fd, info):
            if (info.st_size, info.st_mtime_ns) == (size, mtime):
                return [], position
            if info.st_size > MAX_JSON_BYTES:
                raise SourceError(f"{path}: over the {MAX_JSON_BYTES} byte limit of a JSON file")
            raw = pread(path, fd, info.st_size, 0)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SourceError(f"{path}: not UTF-8 text") from None
        data = _json(str(path), text, "line 1")
        history = data.get("log_history") if isinstance(data, dict) else None
        if not isinstance(history, list):
            raise SourceError(f"{path}: expected an object whose log_history is a list")
        points: list[Point] = []
        side: dict[int, list[float | None]] = {}
        for index, entry in enumerate(history):
            if not isinstance(entry, dict):
                raise SourceError(f"{path}: log_history[{index}] is not an object")
            values = _sides(str(path), index, self._sides, entry)
            if values != (None, None) and isinstance(entry.get("step"), int):
                known = side.setdefault(entry["step"], [None, None])
                known[:] = [
                    new if new is not None else old for old, new in zip(known, values, strict=True)
                ]
            value = _value(str(path), index, self._metric, entry.get(self._metric))
            step = None if value is None else _step(str(path), index, entry, "step")
            if value is not None and step is not None and step > last:
                points.append(Point(step, value))
                last = step
        # HF logs a step's eval and train entries apart: a step's side signals from any of them
        points = [Point(p.step, p.value, *side.get(p.step, (None, None))) for p in points]
        return points, [last, info.st_size, info.st_mtime_ns]


def regular(path: Path) -> bool:
    """A regular file (through symlinks), without opening it."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def latest_trainer_state(folder: Path) -> Path | None:
    """``folder/trainer_state.json``, else the one in the highest ``checkpoint-<step>``
    (regular files only: a pipe under that name is no trainer state)."""
    direct = folder / "trainer_state.json"
    if regular(direct):
        return direct
    best: tuple[int, Path] | None = None
    for child in folder.glob("checkpoint-*/trainer_state.json"):
        suffix = child.parent.name.removeprefix("checkpoint-")
        newer = suffix.isdigit() and len(suffix) < 20 and (best is None or int(suffix) > best[0])
        if newer and regular(child):
            best = (int(suffix), child)
    return None if best is None else best[1]
