"""TensorBoard event files: the TFRecord framing read here, events decoded with TensorBoard's
own protocol buffers (optional extra).

The path is an event file or a directory of them (read in name order, as TensorBoard does).
Both summary styles are read: legacy ``simple_value`` scalars (PyTorch's ``SummaryWriter``)
and scalar tensors (TF2 and ``tensorboard.summary.Writer``); a tag holding any non-scalar
tensor is not a scalar tag. Records orphaned by a restart are dropped as TensorBoard's
``EventAccumulator`` drops them, so the series is already a log in the sense of
``order="log"`` (spec ``TRC-11``). Every declared size is checked against the file before it
is used, a tensor's shape included, and a corrupt record is an error naming the file and its
offset (``TRC-14``).

``tensorboard`` is imported lazily, on the first read: the core library does not need it, and
a missing install raises :class:`~evalstop.traces.errors.ReaderUnavailableError` saying how to
add it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from evalstop.traces.errors import (
    EmptyTraceError,
    MalformedTraceError,
    ReaderUnavailableError,
    TraceOptionError,
    UnreadableTraceError,
)
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options, Records, build_trace, choose_metric
from evalstop.traces.tfrecord import HEADER, RecordFile, header_ok

__all__ = [
    "INSTALL_HINT",
    "is_event_file",
    "read_tensorboard",
    "starts_like_event_file",
    "tensorboard_runs",
]

INSTALL_HINT = "pip install 'evalstop[tensorboard]' (or: pip install tensorboard)"
_NUMERIC_DTYPES = frozenset({1, 2, 3, 4, 5, 6, 9, 10, 17, 19, 22, 23})
"""TensorFlow DataType numbers of real numbers and booleans (float, double, ints, bool)."""


def is_event_file(path: Path) -> bool:
    """TensorBoard names its files ``events.out.tfevents.<time>.<host>...``."""
    return "tfevents" in path.name


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _checksum() -> Callable[[bytes], int]:
    """The masked CRC-32C: ``google_crc32c`` (C) when installed, else TensorBoard's own."""
    try:
        fast: Any = importlib.import_module("google_crc32c")
    except ImportError:
        slow: Any = importlib.import_module("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
        return slow.masked_crc32c  # type: ignore[no-any-return]
    return lambda data: _masked(fast.value(data))


def starts_like_event_file(path: Path) -> bool:
    """Whether the file opens with a checksummed record header (a renamed event file)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER)
        return len(head) == HEADER and header_ok(head, _checksum())
    except (OSError, ImportError):
        return False


def _modules(label: str) -> tuple[ModuleType, ModuleType]:
    try:
        event_pb2 = importlib.import_module("tensorboard.compat.proto.event_pb2")
        tensor_util = importlib.import_module("tensorboard.util.tensor_util")
    except ImportError:
        raise ReaderUnavailableError(
            label, f"reading TensorBoard event files needs the optional extra: {INSTALL_HINT}"
        ) from None
    return event_pb2, tensor_util


def _scalar_tensor(tensor_util: ModuleType, proto: Any) -> float | None:
    """The value of a one-element numeric tensor; None for anything else, decided from the
    declared shape before numpy allocates."""
    size = 1
    for dim in proto.tensor_shape.dim:
        if dim.size != 1:
            return None
        size *= dim.size
    if proto.dtype not in _NUMERIC_DTYPES or size != 1:
        return None
    try:
        array = tensor_util.make_ndarray(proto)
        return float(array.reshape(()))
    except (ValueError, TypeError, OverflowError):
        return None


@attrs.define
class _Series:
    """What the events hold so far, and TensorBoard's purge state."""

    wanted: str | None
    simple: dict[str, Records] = attrs.Factory(dict)
    tensor: dict[str, Records] = attrs.Factory(dict)
    tags: dict[str, None] = attrs.Factory(dict)
    non_scalar: set[str] = attrs.Factory(set)
    file_version: float | None = None
    latest: int = -1
    events: int = 0

    def add(self, kind: dict[str, Records], tag: str, step: int, value: float) -> None:
        self.tags[tag] = None
        if self.wanted is None or tag == self.wanted:
            kind.setdefault(tag, Records()).append(step, value, self.events)

    def purge(self, step: int, tags: list[str] | None) -> None:
        for kind in (self.simple, self.tensor):
            for tag in list(kind) if tags is None else [t for t in tags if t in kind]:
                old = kind[tag]
                kept = Records()
                for s, v, line in zip(old.steps, old.values, old.lines, strict=True):
                    if s < step:
                        kept.append(s, v, line)
                kind[tag] = kept

    def scalar_tags(self) -> dict[str, Records]:
        found = {t: r for t, r in self.tensor.items() if t not in self.non_scalar and r}
        found.update((t, r) for t, r in self.simple.items() if r)
        return found


def _version(text: str) -> float:
    try:
        return float(text.rsplit("brain.Event:", maxsplit=1)[-1])
    except ValueError:
        return -1.0


def _event(series: _Series, event: Any, tensor_util: ModuleType, where: str, label: str) -> None:
    series.events += 1
    if event.HasField("file_version"):
        series.file_version = _version(event.file_version)
    step = int(event.step)
    if step < 0:
        raise MalformedTraceError(label, f"{where}: step {step} is negative")
    if series.file_version is not None and series.file_version >= 2:
        if event.HasField("session_log") and event.session_log.status == 1:  # START
            series.purge(step, None)
    elif event.HasField("summary"):
        if step < series.latest:
            series.purge(step, [value.tag for value in event.summary.value])
        else:
            series.latest = step
    if not event.HasField("summary"):
        return
    for value in event.summary.value:
        if value.HasField("tensor"):
            tag = value.tag or value.node_name
            number = _scalar_tensor(tensor_util, value.tensor)
            if number is None:
                series.tags[tag] = None
                series.non_scalar.add(tag)
            else:
                series.add(series.tensor, tag, step, number)
        elif value.HasField("simple_value"):
            series.add(series.simple, value.tag, step, float(value.simple_value))


def _files(path: Path, label: str) -> list[Path]:
    if not path.is_dir():
        return [path]
    try:
        files = sorted(p for p in path.iterdir() if is_event_file(p) and p.is_file())
    except OSError as error:
        raise UnreadableTraceError(label, f"cannot read: {error.strerror or error}") from None
    if not files:
        runs = tensorboard_runs(path)
        hint = f"; it is a log directory of {len(runs)} runs: read each one" if runs else ""
        raise EmptyTraceError(
            label, f"no TensorBoard event files (events.out.tfevents.*) here{hint}"
        )
    return files


def _has_events(folder: Path) -> bool:
    return any(is_event_file(p) and p.is_file() for p in folder.iterdir())


def tensorboard_runs(path: Path) -> list[Path]:
    """The runs of a TensorBoard log directory (spec ``TRC-11``).

    ``[path]`` when ``path`` is a file or holds event files itself; else, as TensorBoard does,
    every folder below it (at any depth) that holds event files, in path order; ``[]`` when
    there is none (or it cannot be listed).
    """
    try:
        if not path.is_dir() or _has_events(path):
            return [path]
        return sorted(p for p in path.rglob("*") if p.is_dir() and _has_events(p))
    except OSError:
        return []


def _read_all(path: Path, label: str, wanted: str | None) -> tuple[_Series, str | None]:
    event_pb2, tensor_util = _modules(label)
    series = _Series(wanted=wanted)
    truncated: str | None = None
    crc = _checksum()
    for file in _files(path, label):
        records = RecordFile(file, label, crc)
        for offset, data in records:
            where = (
                f"{file.name}: event at byte {offset}"
                if file != path
                else f"event at byte {offset}"
            )
            try:
                event = event_pb2.Event.FromString(data)
            except Exception:  # protobuf's DecodeError; its module path varies by version
                raise MalformedTraceError(label, f"{where}: not a TensorBoard event") from None
            _event(series, event, tensor_util, where, label)
        if records.truncated_at is not None:
            truncated = f"{file.name}: incomplete last record at byte {records.truncated_at}"
    return series, truncated


def read_tensorboard(path: Path, label: str, options: Options) -> Trace:
    """Read one scalar tag of a TensorBoard event file or directory."""
    if options.where or options.step_column is not None:
        raise TraceOptionError(label, "where and step_column do not apply to TensorBoard files")
    if not path.exists():
        raise UnreadableTraceError(label, "cannot read: No such file or directory")
    series, truncated = _read_all(path, label, options.metric)
    scalars = series.scalar_tags()
    if not scalars and options.metric is None:
        note = "" if truncated is None else f" ({truncated})"
        raise EmptyTraceError(label, f"no scalar summaries in the event file(s){note}")
    available = (
        sorted(scalars)
        if options.metric is None
        else sorted(t for t in series.tags if t not in series.non_scalar or t in series.simple)
    )
    metric = choose_metric(label, options.metric, available)
    if metric not in scalars:
        raise EmptyTraceError(label, f"tag {metric!r} has no scalar values")
    return build_trace(
        label,
        TraceFormat.TENSORBOARD,
        metric,
        scalars[metric],
        bad=None,
        order=options.order,
        unit="event",
        truncated=truncated,
    )
