"""Helpers every reader shares: load text, parse cells, choose the metric, build the trace.

Readers turn a file into *records* ``(step, value, line)`` in file order; :func:`build_trace`
orders them (spec ``TRC-6``) and checks that something numeric is left (``TRC-5``).
"""

from __future__ import annotations

import itertools
import math
import reprlib
from array import array
from collections.abc import Iterable, Mapping, Sequence

import attrs

from evalstop.traces.errors import (
    MalformedTraceError,
    MetricNotFoundError,
    NoNumericValuesError,
    listing,
)
from evalstop.traces.model import Order, Trace, TraceFormat

__all__ = [
    "MAX_STEP",
    "STEP_CANDIDATES",
    "Bad",
    "Options",
    "Record",
    "Records",
    "build_trace",
    "check_where",
    "choose_metric",
    "choose_step_column",
    "describe",
    "parse_step",
    "parse_value",
]

STEP_CANDIDATES: tuple[str, ...] = ("step", "Step", "global_step", "_step")
"""Step columns tried, in order, when none is named (spec ``TRC-9``)."""

Record = tuple[int, float, int]
"""``(step, value, line)``: one numeric reading and the line (or entry) it came from."""

MAX_STEP = 2**63 - 1
"""Largest step accepted: TensorBoard's int64, and far past any training run (``TRC-6``)."""

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel = 2
_SHORT.maxdict = _SHORT.maxlist = 4


def describe(raw: object) -> str:
    """A short, one-line ``repr`` of a cell for an error message (deep or huge values cut)."""
    return _SHORT.repr(raw)


class Records:
    """Readings in file order, kept as three machine arrays (24 bytes a reading)."""

    __slots__ = ("lines", "steps", "values")

    def __init__(self) -> None:
        self.steps = array("q")
        self.values = array("d")
        self.lines = array("q")

    def __len__(self) -> int:
        return len(self.steps)

    def append(self, step: int, value: float, line: int) -> None:
        self.steps.append(step)
        self.values.append(value)
        self.lines.append(line)


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


def parse_step(raw: object, label: str, line: int, column: str, unit: str = "line") -> int | None:
    """An integer step in ``[0, MAX_STEP]``; None for a missing one.

    Args:
        raw: the cell or JSON value (``100``, ``"100"``, ``100.0`` and ``"1e2"`` are all 100).
        label: how errors name the file.
        line: the line or record errors name.
        column: the step column errors name.
        unit: the word for ``line`` in errors (``line``, ``entry``, ``log_history entry``).

    Returns:
        The step, or None for an empty cell or a missing value.

    Raises:
        MalformedTraceError: a value that is not a whole number in range.
    """
    if raw is None:
        return None
    number: int | float = math.nan
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        number = raw
    if isinstance(number, float):
        number = int(number) if math.isfinite(number) and number.is_integer() else -1
    if not 0 <= number <= MAX_STEP:
        raise MalformedTraceError(
            label,
            f"{unit} {line}: step {column!r} is {describe(raw)}, not an integer "
            f"from 0 to {MAX_STEP}",
        )
    return number


def parse_value(raw: object) -> float | Bad | None:
    """A float (NaN and infinities included, an integer too big for a float is +-inf), None
    for an empty cell, or the bad text."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return Bad(0, describe(text))
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return Bad(0, describe(raw))
    try:
        return float(raw)
    except OverflowError:
        return math.inf if raw > 0 else -math.inf


def choose_step_column(label: str, requested: str | None, columns: Iterable[str]) -> str:
    """The step column: the requested one, or the first of :data:`STEP_CANDIDATES` present.

    Raises:
        MalformedTraceError: the requested column is missing, or none of the candidates is
            there (the message lists the columns).
    """
    present = set(columns)
    if requested is not None:
        if requested not in present:
            raise MalformedTraceError(
                label, f"no step column {requested!r}; columns: {listing(sorted(present))}"
            )
        return requested
    for candidate in STEP_CANDIDATES:
        if candidate in present:
            return candidate
    raise MalformedTraceError(
        label,
        f"no step column (tried {', '.join(STEP_CANDIDATES)}); "
        "name one with step_column (--step-column); "
        f"columns: {listing(sorted(present))}",
    )


def choose_metric(label: str, requested: str | None, available: Sequence[str]) -> str:
    """The requested metric, or the file's only one (``TRC-4``).

    Raises:
        NoNumericValuesError: nothing was requested and the file has no numeric metric.
        MetricNotFoundError: the requested metric is missing, or nothing was requested and
            there are several (the message lists them).
    """
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
    """Check that every ``where`` filter names a column of the file.

    Raises:
        MalformedTraceError: a filter names a column the file does not have.
    """
    present = set(columns)
    for column in where:
        if column not in present:
            raise MalformedTraceError(
                label, f"no column {column!r} to filter on; columns: {listing(sorted(present))}"
            )


def _log_order(steps: array[int]) -> list[int]:
    kept: list[int] = []
    for index, step in enumerate(steps):
        while kept and steps[kept[-1]] >= step:
            kept.pop()
        kept.append(index)
    return kept


def _ordered(label: str, records: Records, order: Order, unit: str) -> Sequence[int]:
    """Indices of the records to keep, in trace order (linear when already in order)."""
    steps = records.steps
    if order == "log":
        return _log_order(steps)
    if all(steps[i] < steps[i + 1] for i in range(len(steps) - 1)):
        return range(len(steps))
    indices = sorted(range(len(steps)), key=steps.__getitem__)
    for before, after in itertools.pairwise(indices):
        if steps[before] == steps[after]:
            first, second = sorted((records.lines[before], records.lines[after]))
            raise MalformedTraceError(
                label,
                f"step {steps[after]} appears twice ({unit} {first} and {unit} {second}): "
                "select one run with where (--where) or read the file as a restarted log with "
                "order 'log' (--order log)",
            )
    return indices


def build_trace(
    label: str,
    fmt: TraceFormat,
    metric: str,
    records: Records,
    *,
    bad: Bad | None,
    order: Order,
    unit: str = "line",
    truncated: str | None = None,
) -> Trace:
    """Order the records and check the metric has numbers (``TRC-5``, ``TRC-6``)."""
    if not records:
        example = f" ({unit} {bad.line}: {bad.text})" if bad is not None else ""
        raise NoNumericValuesError(label, f"metric {metric!r} has no numeric values{example}")
    if bad is not None:
        raise MalformedTraceError(
            label, f"{unit} {bad.line}: metric {metric!r} value {bad.text} is not a number"
        )
    kept = _ordered(label, records, order, unit)
    values = records.values
    if not any(math.isfinite(values[i]) for i in kept):
        raise NoNumericValuesError(label, f"metric {metric!r} has no finite values")
    steps = records.steps
    return Trace(
        path=label,
        metric=metric,
        format=fmt,
        steps=[steps[i] for i in kept],
        values=[values[i] for i in kept],
        truncated=truncated,
    )
