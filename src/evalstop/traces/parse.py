"""Helpers every reader shares: load text, parse cells, choose the metric, build the trace.

Readers turn a file into *records* ``(step, value, line)`` in file order; :func:`build_trace`
orders them (spec ``TRC-6``) and checks that something numeric is left (``TRC-5``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from evalstop.traces.errors import (
    EmptyTraceError,
    MalformedTraceError,
    MetricNotFoundError,
    NoNumericValuesError,
    UnreadableTraceError,
)
from evalstop.traces.model import Order, Trace, TraceFormat

__all__ = [
    "STEP_CANDIDATES",
    "Bad",
    "Options",
    "Record",
    "build_trace",
    "check_where",
    "choose_metric",
    "choose_step_column",
    "parse_step",
    "parse_value",
    "read_text",
]

STEP_CANDIDATES: tuple[str, ...] = ("step", "Step", "global_step", "_step")
"""Step columns tried, in order, when none is named (spec ``TRC-9``)."""

Record = tuple[int, float, int]
"""``(step, value, line)``: one numeric reading and the line (or entry) it came from."""


@attrs.frozen(slots=True)
class Options:
    """What the caller asked a reader for.

    Attributes:
        metric: the metric to read, or None for the file's only metric.
        step_column: the column or key holding the step (CSV, W&B CSV, JSONL), or None for
            the first of :data:`STEP_CANDIDATES` present.
        where: ``column -> value`` filters a row must match to be read (CSV, JSONL).
        order: ``sort`` or ``log`` (spec ``TRC-6``).
    """

    metric: str | None = None
    step_column: str | None = None
    where: tuple[tuple[str, str], ...] = ()
    order: Order = "sort"


@attrs.frozen(slots=True)
class Bad:
    """The first cell of the metric that was neither empty nor a number."""

    line: int
    text: str


def read_text(path: Path, label: str) -> str:
    """The file's text; Unreadable if it cannot be read as UTF-8, Empty if blank."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableTraceError(label, "cannot read: not UTF-8 text") from None
    except OSError as error:
        raise UnreadableTraceError(label, f"cannot read: {error.strerror or error}") from None
    if not text.strip():
        raise EmptyTraceError(label, "the file is empty")
    return text


def parse_step(raw: object, label: str, line: int, column: str, unit: str = "line") -> int | None:
    """An integer step, None for a missing one; Malformed for anything else (``TRC-6``)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        try:
            number: float = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
    elif isinstance(raw, bool) or not isinstance(raw, int | float):
        number = math.nan
    else:
        number = raw
    if not (math.isfinite(number) and number == int(number) and number >= 0):
        raise MalformedTraceError(
            label, f"{unit} {line}: step {column!r} is {raw!r}, not a non-negative integer"
        )
    return int(number)


def parse_value(raw: object) -> float | Bad | None:
    """A float (NaN and infinities included), None for an empty cell, or the bad text."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return Bad(0, text)
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return Bad(0, repr(raw))
    return float(raw)


def choose_step_column(label: str, requested: str | None, columns: Iterable[str]) -> str:
    """The step column: the requested one, or the first candidate present."""
    present = set(columns)
    if requested is not None:
        if requested not in present:
            raise MalformedTraceError(
                label, f"no step column {requested!r}; columns: {', '.join(sorted(present))}"
            )
        return requested
    for candidate in STEP_CANDIDATES:
        if candidate in present:
            return candidate
    raise MalformedTraceError(
        label,
        f"no step column (tried {', '.join(STEP_CANDIDATES)}); "
        "name one with step_column (--step-column); "
        f"columns: {', '.join(sorted(present))}",
    )


def choose_metric(label: str, requested: str | None, available: Sequence[str]) -> str:
    """The requested metric, or the only one; MetricNotFound lists the choices (``TRC-4``)."""
    if requested is None:
        if len(available) == 1:
            return available[0]
        if not available:
            raise NoNumericValuesError(label, "no numeric metric in the file")
        raise MetricNotFoundError(label, "no metric chosen and the file has several", available)
    if requested not in available:
        raise MetricNotFoundError(label, f"metric {requested!r} not found", available)
    return requested


def check_where(label: str, where: Mapping[str, str], columns: Iterable[str]) -> None:
    """Malformed when a filter names a column the file does not have."""
    present = set(columns)
    for column in where:
        if column not in present:
            raise MalformedTraceError(
                label, f"no column {column!r} to filter on; columns: {', '.join(sorted(present))}"
            )


def _ordered(label: str, records: Sequence[Record], order: Order, unit: str) -> list[Record]:
    if order == "log":
        kept: list[Record] = []
        for record in records:
            while kept and kept[-1][0] >= record[0]:
                kept.pop()
            kept.append(record)
        return kept
    ordered = sorted(records, key=lambda r: r[0])
    for before, after in itertools.pairwise(ordered):
        if before[0] == after[0]:
            first, second = sorted((before[2], after[2]))
            raise MalformedTraceError(
                label,
                f"step {after[0]} appears twice ({unit} {first} and {unit} {second}): select "
                "one run with where (--where) or read the file as a restarted log with order "
                "'log' (--order log)",
            )
    return ordered


def build_trace(
    label: str,
    fmt: TraceFormat,
    metric: str,
    records: Sequence[Record],
    *,
    bad: Bad | None,
    order: Order,
    unit: str = "line",
) -> Trace:
    """Order the records and check the metric has numbers (``TRC-5``, ``TRC-6``)."""
    if not records:
        example = f" ({unit} {bad.line}: {bad.text!r})" if bad is not None else ""
        raise NoNumericValuesError(label, f"metric {metric!r} has no numeric values{example}")
    if bad is not None:
        raise MalformedTraceError(
            label, f"{unit} {bad.line}: metric {metric!r} value {bad.text!r} is not a number"
        )
    kept = _ordered(label, records, order, unit)
    if not any(math.isfinite(value) for _, value, _ in kept):
        raise NoNumericValuesError(label, f"metric {metric!r} has no finite values")
    return Trace(
        path=label,
        metric=metric,
        format=fmt,
        steps=[step for step, _, _ in kept],
        values=[value for _, value, _ in kept],
    )
