"""Checkpoint-map JSON: an object from checkpoint name to that checkpoint's eval metrics.

Evaluation scripts that score saved checkpoints after training often write
``{"baseline": {"acc": 0.2}, "run/checkpoint_000010": {"acc": 0.3}, ..., "run/final": {...}}``.
The step of an entry is the number that ends its name; a name whose last word is ``baseline``,
``base``, ``init`` or ``initial`` is step 0, and one whose last word is ``final`` or ``last`` is
placed one step after the highest numbered checkpoint (spec ``TRC-10``).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from evalstop.traces.errors import MalformedTraceError, TraceOptionError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import (
    MAX_STEP,
    Bad,
    Options,
    Records,
    build_trace,
    choose_metric,
    describe,
    parse_step,
    parse_value,
)
from evalstop.traces.source import load_json

__all__ = ["FIRST_NAMES", "LAST_NAMES", "is_checkpoint_map", "read_checkpoints_json"]

FIRST_NAMES = frozenset({"baseline", "base", "init", "initial"})
LAST_NAMES = frozenset({"final", "last"})
_DIGITS = "0123456789"
_LETTERS = string.ascii_letters


def _tail(name: str, chars: str) -> str:
    """The longest suffix of ``name`` made of ``chars`` (linear, unlike a ``$`` regex)."""
    return name[len(name.rstrip(chars)) :]


def is_checkpoint_map(data: object) -> bool:
    """A non-empty JSON object whose values are all objects."""
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(value, dict) for value in data.values())
    )


def _steps(label: str, names: list[str]) -> list[int]:
    numbered: dict[str, int] = {}
    for index, name in enumerate(names, 1):
        digits = _tail(name, _DIGITS)
        if digits:
            step = parse_step(digits, label, index, name, unit="entry")
            assert step is not None  # digits are never blank
            numbered[name] = step
    after = max(numbered.values(), default=0) + 1
    if after > MAX_STEP:
        raise MalformedTraceError(label, f"no step after {MAX_STEP} for a final checkpoint")
    steps: list[int] = []
    for name in names:
        if name in numbered:
            steps.append(numbered[name])
            continue
        last_word = _tail(name, _LETTERS).lower()
        if last_word in FIRST_NAMES:
            steps.append(0)
        elif last_word in LAST_NAMES:
            steps.append(after)
        else:
            raise MalformedTraceError(
                label,
                f"cannot tell the step of checkpoint {describe(name)}: its name should end in a "
                f"number, or in one of {', '.join(sorted(FIRST_NAMES | LAST_NAMES))}",
            )
    return steps


def read_checkpoints_json(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a checkpoint-map JSON file ("entry N" is the N-th checkpoint)."""
    if options.where or options.step_column is not None:
        raise TraceOptionError(label, "where and step_column do not apply to a checkpoint map")
    data: Any = load_json(path, label)
    if not is_checkpoint_map(data):
        raise MalformedTraceError(
            label, "expected an object mapping checkpoint names to objects of metrics"
        )
    names = list(data)
    keys: dict[str, None] = {}
    numeric: dict[str, None] = {}
    for metrics in data.values():
        keys.update(dict.fromkeys(metrics))
        numeric.update(
            dict.fromkeys(k for k, v in metrics.items() if isinstance(parse_value(v), float))
        )
    requested = options.metric
    if requested is not None and requested in keys:
        metric = requested
    else:
        metric = choose_metric(label, requested, list(numeric))
    records = Records()
    bad: Bad | None = None
    for index, (name, step) in enumerate(zip(names, _steps(label, names), strict=True), 1):
        value = parse_value(data[name].get(metric))
        if value is None:
            continue
        if isinstance(value, Bad):
            bad = bad or Bad(index, value.text)
            continue
        records.append(step, value, index)
    return build_trace(
        label,
        TraceFormat.CHECKPOINTS_JSON,
        metric,
        records,
        bad=bad,
        order=options.order,
        unit="entry",
    )
