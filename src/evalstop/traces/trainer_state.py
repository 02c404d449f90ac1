"""Hugging Face ``trainer_state.json``: the ``log_history`` list of flat dicts.

Each entry has a ``step`` and the keys logged at that step: training keys (``loss``,
``learning_rate``, TRL PPO's ``objective/kl``, ``objective/scores``, ``objective/rlhf_reward``,
GRPO's ``reward``, ``rewards/<func>/mean``, ``kl``) or evaluation keys (``eval_*``). A metric's
records are the entries that hold it; ``step`` and ``epoch`` are positions, not metrics
(spec ``TRC-7``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalstop.traces.errors import MalformedTraceError, TraceOptionError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import (
    Bad,
    Options,
    Records,
    build_trace,
    choose_metric,
    parse_step,
    parse_value,
)
from evalstop.traces.source import load_json

__all__ = ["POSITION_KEYS", "is_trainer_state", "read_trainer_state"]

POSITION_KEYS = frozenset({"step", "epoch"})


def is_trainer_state(data: object) -> bool:
    """A JSON object with a ``log_history`` key."""
    return isinstance(data, dict) and "log_history" in data


def _history(label: str, data: Any) -> list[dict[str, Any]]:
    history = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        raise MalformedTraceError(label, "expected an object whose log_history is a list")
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise MalformedTraceError(label, f"log_history[{index}] is not an object")
    return history


def _has_key(history: list[dict[str, Any]], key: str) -> bool:
    return any(key in entry for entry in history)


def read_trainer_state(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a ``trainer_state.json`` (messages name the log_history index)."""
    if options.where or options.step_column is not None:
        raise TraceOptionError(label, "where and step_column do not apply to trainer_state.json")
    data = load_json(path, label)
    history = _history(label, data)
    requested = options.metric
    if requested is not None and requested not in POSITION_KEYS and _has_key(history, requested):
        metric = requested
    else:
        numeric: dict[str, None] = {}
        for entry in history:
            numeric.update(
                dict.fromkeys(k for k, v in entry.items() if isinstance(parse_value(v), float))
            )
        available = [k for k in numeric if k not in POSITION_KEYS]
        metric = choose_metric(label, requested, available)
    records = Records()
    bad: Bad | None = None
    for index, entry in enumerate(history):
        value = parse_value(entry.get(metric))
        if value is None:
            continue
        if isinstance(value, Bad):
            bad = bad or Bad(index, value.text)
            continue
        step = parse_step(entry.get("step"), label, index, "step", unit="log_history entry")
        if step is not None:
            records.append(step, value, index)
    return build_trace(
        label,
        TraceFormat.TRAINER_STATE,
        metric,
        records,
        bad=bad,
        order=options.order,
        unit="log_history entry",
    )
