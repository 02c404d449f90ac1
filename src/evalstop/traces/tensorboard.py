"""TensorBoard event files, read with TensorBoard's own ``EventAccumulator`` (optional extra).

The path is an event file or a directory of them. Both summary styles are read: legacy
``simple_value`` scalars (PyTorch's ``SummaryWriter``) and scalar tensors (TF2 and
``tensorboard.summary.Writer``). The accumulator drops the records orphaned by a restart, so
its series is already a log in the sense of ``order="log"`` (spec ``TRC-11``).

``tensorboard`` is imported lazily, on the first read: the core library does not need it, and
a missing install raises :class:`~evalstop.traces.errors.ReaderUnavailableError` saying how to
add it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from evalstop.traces.errors import (
    EmptyTraceError,
    ReaderUnavailableError,
    TraceOptionError,
    UnreadableTraceError,
)
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options, Record, build_trace, choose_metric

__all__ = ["INSTALL_HINT", "is_event_file", "read_tensorboard", "tensorboard_runs"]

INSTALL_HINT = "pip install 'evalstop[tensorboard]' (or: pip install tensorboard)"


def is_event_file(path: Path) -> bool:
    """TensorBoard names its files ``events.out.tfevents.<time>.<host>...``."""
    return "tfevents" in path.name


def _has_events(folder: Path) -> bool:
    return any(is_event_file(p) and p.is_file() for p in folder.iterdir())


def tensorboard_runs(path: Path) -> list[Path]:
    """The runs of a TensorBoard log directory (spec ``TRC-11``).

    ``[path]`` when ``path`` is a file or holds event files itself; else, as TensorBoard does,
    every folder below it (at any depth) that holds event files, in path order; ``[]`` when
    there is none.
    """
    if not path.is_dir() or _has_events(path):
        return [path]
    return sorted(folder for folder in path.rglob("*") if folder.is_dir() and _has_events(folder))


def _modules(label: str) -> tuple[ModuleType, ModuleType]:
    try:
        accumulator = importlib.import_module(
            "tensorboard.backend.event_processing.event_accumulator"
        )
        tensor_util = importlib.import_module("tensorboard.util.tensor_util")
    except ImportError:
        raise ReaderUnavailableError(
            label, f"reading TensorBoard event files needs the optional extra: {INSTALL_HINT}"
        ) from None
    return accumulator, tensor_util


def _scalar_tensor(tensor_util: ModuleType, event: Any) -> float | None:
    array = tensor_util.make_ndarray(event.tensor_proto)
    if array.size != 1 or array.dtype.kind not in "fiub":
        return None
    return float(array.reshape(()))


def _series(accumulator: Any, tensor_util: ModuleType) -> dict[str, list[tuple[int, float]]]:
    tags = accumulator.Tags()
    series: dict[str, list[tuple[int, float]]] = {}
    for tag in tags.get("scalars", []):
        series[str(tag)] = [(int(e.step), float(e.value)) for e in accumulator.Scalars(tag)]
    for tag in tags.get("tensors", []):
        points: list[tuple[int, float]] = []
        for event in accumulator.Tensors(tag):
            value = _scalar_tensor(tensor_util, event)
            if value is None:
                break
            points.append((int(event.step), value))
        else:
            series.setdefault(str(tag), points)
    return series


def read_tensorboard(path: Path, label: str, options: Options) -> Trace:
    """Read one scalar tag of a TensorBoard event file or directory."""
    if options.where or options.step_column is not None:
        raise TraceOptionError(label, "where and step_column do not apply to TensorBoard files")
    if not path.exists():
        raise UnreadableTraceError(label, "cannot read: No such file or directory")
    if path.is_dir() and not _has_events(path):
        runs = tensorboard_runs(path)
        hint = f"; it is a log directory of {len(runs)} runs: read each one" if runs else ""
        raise EmptyTraceError(
            label, f"no TensorBoard event files (events.out.tfevents.*) here{hint}"
        )
    module, tensor_util = _modules(label)
    guidance = {module.SCALARS: 0, module.TENSORS: 0}
    accumulator = module.EventAccumulator(str(path), size_guidance=guidance)
    try:
        accumulator.Reload()
    except Exception as error:  # the reader raises its own types for broken files
        raise UnreadableTraceError(label, f"cannot read the event file: {error}") from None
    series = {tag: points for tag, points in _series(accumulator, tensor_util).items() if points}
    if not series:
        raise EmptyTraceError(label, "no scalar summaries in the event file(s)")
    metric = choose_metric(label, options.metric, sorted(series))
    records: list[Record] = [
        (step, value, index) for index, (step, value) in enumerate(series[metric], 1)
    ]
    return build_trace(
        label,
        TraceFormat.TENSORBOARD,
        metric,
        records,
        bad=None,
        order=options.order,
        unit="event",
    )
