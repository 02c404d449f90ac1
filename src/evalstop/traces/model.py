"""The trace value: one metric of one training run, as steps and values (spec ``TRC-1``)."""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterable
from typing import Literal, TypeAlias

import attrs

__all__ = ["Order", "Trace", "TraceFormat"]

Order: TypeAlias = Literal["sort", "log"]
"""How records become a series (spec ``TRC-6``).

``sort``: order by step, a repeated step is an error. ``log``: file order is the run's history,
and a step that goes back marks a restart whose earlier records at or after it are dropped.
"""


class TraceFormat(enum.StrEnum):
    """The file layouts a trace can be read from (spec ``TRC-3``)."""

    TRAINER_STATE = "trainer-state"
    WANDB_CSV = "wandb-csv"
    CSV = "csv"
    JSONL = "jsonl"
    CHECKPOINTS_JSON = "checkpoints-json"
    TENSORBOARD = "tensorboard"


def _int_tuple(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _float_tuple(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


@attrs.frozen(slots=True)
class Trace:
    """One metric of one run: where it came from and its ``(step, value)`` series.

    Attributes:
        path: the source file or directory, as given to the reader.
        metric: the metric's name in the source (a W&B CSV's full column name).
        format: the layout it was read as.
        steps: non-negative integer steps, strictly increasing.
        values: the metric at each step; NaN where the source recorded NaN (detectors skip
            those, spec ``DET-3``); at least one value is finite.
        truncated: None for a complete file; for a TensorBoard log still being written, where
            its incomplete last record was left out (spec ``TRC-14``).
    """

    path: str
    metric: str
    format: TraceFormat
    steps: tuple[int, ...] = attrs.field(converter=_int_tuple)
    values: tuple[float, ...] = attrs.field(converter=_float_tuple)
    truncated: str | None = None

    def __attrs_post_init__(self) -> None:
        if len(self.steps) != len(self.values):
            raise ValueError(
                f"steps and values differ in length: {len(self.steps)} != {len(self.values)}"
            )
        for step in self.steps:
            if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                raise ValueError(f"steps must be non-negative ints, got {step!r}")
        for a, b in itertools.pairwise(self.steps):
            if b <= a:
                raise ValueError(f"steps must strictly increase, got {a} then {b}")
        if not any(math.isfinite(v) for v in self.values):
            raise ValueError("a trace needs at least one finite value")

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def last_step(self) -> int:
        """The step of the last record."""
        return self.steps[-1]

    def best_index(self, mode: Literal["max", "min"] = "max") -> int:
        """Index of the best finite value (the first one on ties)."""
        sign = 1.0 if mode == "max" else -1.0
        finite = [i for i, v in enumerate(self.values) if math.isfinite(v)]
        return max(finite, key=lambda i: (sign * self.values[i], -i))
