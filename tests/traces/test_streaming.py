"""Streaming reads: one pass equals two, UTF-8 error lines; whole documents (TRC-13)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalstop.cli import main
from evalstop.traces import TraceError, read_trace
from evalstop.traces import rows as rows_module
from evalstop.traces import source as source_module
from evalstop.traces.source import MAX_JSON_BYTES

keys = st.sampled_from(["step", "_step", "acc", "loss", "run"])
cells = st.one_of(
    st.integers(min_value=-2, max_value=6),
    st.sampled_from(["a", "b", "x", "", "3", "1e0", None, 1.5, True]),
)
records = st.lists(st.dictionaries(keys, cells, max_size=5), min_size=1, max_size=8)


def _outcome(path: Path, **options: Any) -> object:
    try:
        trace = read_trace(path, **options)
    except TraceError as error:
        return type(error).__name__, str(error)
    return trace.steps, trace.values


@settings(max_examples=max(50, settings().max_examples))
@example(
    records=[{"_step": 1, "acc": 1}, {"step": 2, "acc": 2}], metric="acc", where=None, order="sort"
)
@given(
    records=records,
    metric=st.sampled_from(["acc", "loss", "step", "nope", None]),
    where=st.sampled_from([None, {"run": "a"}, {"run": "3"}]),
    order=st.sampled_from(["sort", "log"]),
)
def test_one_pass_equals_two_passes(
    records: list[dict[str, object]],
    metric: str | None,
    where: dict[str, str] | None,
    order: str,
) -> None:
    """TRC-13: for any JSONL records (keys that change from row to row, bad and missing steps
    and values, filters), the one-pass read returns the two-pass read's trace or first error."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "metrics.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        options: dict[str, Any] = {"metric": metric, "where": where, "order": order}
        fast = _outcome(path, **options)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rows_module, "_guess", lambda *args: None)  # never one pass
            slow = _outcome(path, **options)
    assert fast == slow


@pytest.mark.parametrize("first", ["x", 0])
def test_step_key_that_appears_late(tmp_path: Path, first: object) -> None:
    """TRC-13: records that show ``_step`` (malformed or not) before any ``step`` read on
    ``step``, as the two-pass read does, and an early malformed ``_step`` is no error."""
    lines = [
        {"_step": first, "acc": 0.1},
        {"_step": 1, "acc": 0.2},
        {"step": 5, "acc": 0.5},
        {"step": 6, "acc": 0.6},
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    trace = read_trace(path, "acc")
    assert (trace.steps, trace.values) == ((5, 6), (0.5, 0.6))


@pytest.mark.parametrize("name", ["log.csv", "m.jsonl"])
def test_bad_utf8_names_its_line(tmp_path: Path, name: str) -> None:
    """TRC-13: a byte that is not UTF-8 on line 5,001 of a long file is reported on that line
    (the decoder reads in chunks; the line is found from the bytes)."""
    good = "step,acc\n" if name.endswith(".csv") else ""
    row = "{},0.5\n" if name.endswith(".csv") else '{{"step": {}, "acc": 0.5}}\n'
    body = good + "".join(row.format(i) for i in range(5_000 - len(good.splitlines())))
    path = tmp_path / name
    path.write_bytes(body.encode() + b"\xff\xfe bad\n" + body.encode())
    with pytest.raises(TraceError, match=r"not UTF-8 text \(line 5001\)"):
        read_trace(path, "acc")


@pytest.mark.parametrize(
    ("name", "forced"),
    [("trainer_state.json", None), ("scores.json", None), ("log.txt", "trainer-state")],
)
def test_whole_document_cap_is_one_clean_line(
    tmp_path: Path, name: str, forced: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """TRC-13: a whole-document JSON file over 256 MiB (a sparse file: no disk used) is refused
    from its size, before a byte is read: one CLI line naming the file and the limit, exit 2."""
    path = tmp_path / name
    with path.open("wb") as handle:
        handle.write(b"{")
        handle.truncate(MAX_JSON_BYTES + 1)
    argv = ["replay", str(path), *(["--format", forced] if forced else [])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(path) in err and f"over the {MAX_JSON_BYTES} byte limit" in err


def test_whole_document_parsed_once_per_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRC-13: detection and the reader share one parse of a whole-document JSON file, and
    nothing is kept after the read (a changed file reads afresh)."""
    calls: list[str] = []
    real = source_module.parse_json

    def counted(label: str, text: str, where: str = "line 1") -> Any:
        calls.append(label)
        return real(label, text, where)

    monkeypatch.setattr(source_module, "parse_json", counted)
    path = tmp_path / "trainer_state.json"
    history = [{"step": 1, "eval_acc": 0.5}, {"step": 2, "eval_acc": 0.6}]
    path.write_text(json.dumps({"log_history": history}), encoding="utf-8")
    assert read_trace(path, "eval_acc").values == (0.5, 0.6)
    assert len(calls) == 1
    path.write_text(json.dumps({"log_history": history[:1]}), encoding="utf-8")
    assert read_trace(path, "eval_acc").values == (0.5,)
    assert len(calls) == 2
