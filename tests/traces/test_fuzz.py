"""Fuzzing every reader: malformed input is a correct result or one clean TraceError (TRC-13).

Each strategy starts from a valid file of one format and breaks it: truncation, bit flips,
inserted or deleted bytes, wrong types at every level of a JSON document, huge, NaN and
negative numbers, other encodings and line endings, and (TensorBoard) shape bombs. The default
profile runs a few dozen examples a test; ``nox -s props`` (the ``long`` profile) runs 20x more.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tfwrite import scalar_event, tensor_event, tf_file

from evalstop.traces import Trace, TraceError, read_trace
from evalstop.traces.errors import MalformedTraceError

BUDGET = max(20, settings().max_examples // 4)
"""Examples a fuzz test runs: 25 under the default profile, 500 under ``long``."""

NAMES = {
    "trainer-state": "trainer_state.json",
    "checkpoints-json": "scores.json",
    "jsonl": "metrics.jsonl",
    "csv": "log.csv",
    "wandb-csv": "export.csv",
    "sniffed": "log.txt",
}

curves = st.lists(
    st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=12
)
weird_numbers = st.sampled_from(
    [-1, -(2**70), 2**63, 2**64, 10**400, 1e308, -0.0, 0.5, math.nan, math.inf, -math.inf, True]
)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.text(max_size=8),
    weird_numbers,
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def valid_document(fmt: str, values: list[float]) -> Any:
    """A well-formed document of ``fmt`` holding the curve ``values`` (metric ``acc``)."""
    steps = [10 * (i + 1) for i in range(len(values))]
    if fmt == "trainer-state":
        return {"log_history": [{"step": s, "acc": v} for s, v in zip(steps, values, strict=True)]}
    if fmt == "checkpoints-json":
        return {f"ckpt-{s}": {"acc": v} for s, v in zip(steps, values, strict=True)}
    return [{"step": s, "acc": v} for s, v in zip(steps, values, strict=True)]


def render(fmt: str, document: Any) -> str:
    if fmt in ("trainer-state", "checkpoints-json"):
        return json.dumps(document)
    rows: list[dict[str, Any]] = document
    if fmt == "jsonl":
        return "".join(json.dumps(row) + "\n" for row in rows)
    column = "run - acc" if fmt == "wandb-csv" else "acc"
    step = "Step" if fmt == "wandb-csv" else "step"
    lines = [f"{step},{column}"] + [f"{row.get('step', '')},{row.get('acc', '')}" for row in rows]
    return "\n".join(lines) + "\n"


def replace_somewhere(document: Any, path: list[int], value: Any) -> Any:
    """``document`` with the node chosen by ``path`` (indices taken modulo) set to ``value``."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy: Any = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = replace_somewhere(document[key], path[1:], value)
    return copy


def read_or_clean_error(path: Path) -> Trace | TraceError:
    """The trace, or the TraceError; any other exception fails the test."""
    try:
        trace = read_trace(path, "acc" if "events" not in path.name else None)
    except TraceError as error:
        assert "\n" not in str(error)
        return error
    assert all(step >= 0 for step in trace.steps)
    return trace


FOLDER = tempfile.TemporaryDirectory(prefix="evalstop-fuzz-")
"""Where the examples' files go: one folder for the module, removed when the process ends."""


def write(name: str, data: bytes) -> Path:
    """``data`` as the only file in :data:`FOLDER`, named ``name`` (the last example's goes)."""
    folder = Path(FOLDER.name)
    for old in folder.iterdir():
        old.unlink()
    path = folder / name
    path.write_bytes(data)
    return path


formats = st.sampled_from(sorted(NAMES))


@settings(max_examples=BUDGET)
@given(formats, curves, st.lists(st.integers(min_value=0), max_size=4), json_values)
def test_wrong_types_at_every_level_trc_13(
    fmt: str, values: list[float], path: list[int], value: Any
) -> None:
    """TRC-13: any JSON value anywhere in a valid document: a trace or one TraceError."""
    document = replace_somewhere(valid_document(fmt, values), path, value)
    try:
        text = render(fmt, document)
    except (AttributeError, TypeError):
        return  # a row that is no longer an object cannot be written as CSV
    read_or_clean_error(write(NAMES[fmt], text.encode("utf-8", "surrogatepass")))


@settings(max_examples=BUDGET)
@given(
    formats,
    curves,
    st.sampled_from(["truncate", "flip", "insert", "delete"]),
    st.integers(min_value=0),
    st.binary(min_size=1, max_size=4),
)
def test_damaged_bytes_trc_13(
    fmt: str, values: list[float], damage: str, where: int, junk: bytes
) -> None:
    """TRC-13: truncated, bit-flipped, inserted or deleted bytes: a trace or one TraceError."""
    data = bytearray(render(fmt, valid_document(fmt, values)).encode())
    at = where % len(data)
    if damage == "truncate":
        del data[at:]
    elif damage == "flip":
        data[at] ^= 1 << (where % 8)
    elif damage == "insert":
        data[at:at] = junk
    else:
        del data[at : at + len(junk)]
    read_or_clean_error(write(NAMES[fmt], bytes(data)))


@settings(max_examples=BUDGET)
@given(
    formats,
    curves,
    st.sampled_from(["utf-16", "utf-32", "latin-1", "utf-8-sig"]),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_encodings_and_line_endings_trc_13(
    fmt: str, values: list[float], encoding: str, newline: str
) -> None:
    """TRC-13: BOM-marked UTF-8 and any line ending read as UTF-8 does; other encodings are
    an UnreadableTraceError, never a wrong curve."""
    text = render(fmt, valid_document(fmt, values)).replace("\n", newline)
    result = read_or_clean_error(write(NAMES[fmt], text.encode(encoding)))
    plain = read_or_clean_error(write(NAMES[fmt], text.encode("utf-8")))
    if encoding == "utf-8-sig":
        assert type(result) is type(plain)
        if isinstance(result, Trace) and isinstance(plain, Trace):
            assert (result.steps, result.values) == (plain.steps, plain.values)
    elif encoding != "latin-1":  # plain ASCII is also valid latin-1
        assert isinstance(result, TraceError)


def tb_points(values: list[float]) -> list[tuple[int, float]]:
    return [(10 * (i + 1), v) for i, v in enumerate(values)]


@settings(max_examples=BUDGET)
@given(curves, st.integers(min_value=0), st.integers(min_value=0, max_value=7))
def test_tensorboard_corruption_is_never_a_shorter_curve_trc_14(
    values: list[float], where: int, bit: int
) -> None:
    """TRC-14: a flipped bit in any complete record is an error naming the byte offset."""
    data, offsets = tf_file([scalar_event(s, "acc", v) for s, v in tb_points(values)])
    damaged = bytearray(data)
    damaged[where % len(data)] ^= 1 << bit
    with pytest.raises(MalformedTraceError, match=r"byte \d+"):
        read_trace(write("events.out.tfevents.1.fuzz", bytes(damaged)))
    assert offsets  # the file has records to damage


@settings(max_examples=BUDGET)
@given(curves, st.integers(min_value=1))
def test_tensorboard_truncated_tail_is_read_and_reported_trc_14(
    values: list[float], cut: int
) -> None:
    """TRC-14: a file cut anywhere reads every complete record and says where it was cut."""
    points = tb_points(values)
    data, offsets = tf_file([scalar_event(s, "acc", v) for s, v in points])
    end = cut % len(data)
    ends = [*offsets[1:], len(data)]
    complete = sum(1 for record_end in ends if record_end <= end)
    result = read_or_clean_error(write("events.out.tfevents.1.cut", data[:end]))
    kept = points[: max(0, complete - 1)]
    if not any(math.isfinite(v) for _, v in kept):
        assert isinstance(result, TraceError)
        return
    assert isinstance(result, Trace)
    assert list(zip(result.steps, result.values, strict=True)) == kept
    assert (result.truncated is None) == (end in offsets)


@settings(max_examples=BUDGET)
@given(
    st.lists(st.integers(min_value=-1, max_value=2**62), min_size=1, max_size=4),
    st.sampled_from([1, 2, 7, 19]),
)
def test_tensorboard_shape_bombs_allocate_nothing_trc_14(dims: list[int], dtype: int) -> None:
    """TRC-14: a tensor declaring any shape is judged from the declaration, not allocated."""
    events = [scalar_event(1, "acc", 0.5), tensor_event(2, "big", dims, dtype)]
    data, _ = tf_file(events)
    trace = read_or_clean_error(write("events.out.tfevents.1.bomb", data))
    assert isinstance(trace, (Trace, TraceError))
    if all(d == 1 for d in dims) and dtype != 7:
        return
    with pytest.raises(TraceError):
        read_trace(write("events.out.tfevents.1.bomb", data), "big")
