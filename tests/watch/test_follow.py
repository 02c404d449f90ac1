"""Incremental readers of growing logs for ``evalstop watch`` (spec WCH-1, WCH-6)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalstop.watch.folders import discover_runs, run_sources
from evalstop.watch.follow import CsvSource, EventFileSource, JsonlSource, TrainerStateSource
from evalstop.watch.source import SourceError


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


def test_jsonl_reads_complete_lines_after_its_offset_wch_1(tmp_path: Path) -> None:
    """WCH-1: only complete lines are read; a partial line waits; nothing is read twice."""
    path = tmp_path / "m.jsonl"
    append(path, '{"step": 1, "score": 0.5}\n{"step": 2, "loss": 1}\n{"step": 3, "sc')
    source = JsonlSource(path, "score")
    points, position = source.read(None)
    assert [p[:2] for p in points] == [(1, 0.5)]
    assert position[0] == len(b'{"step": 1, "score": 0.5}\n{"step": 2, "loss": 1}\n')
    append(path, 'ore": "NaN"}\n\n{"global_step": 4, "score": 0.25}\n')
    points, position = source.read(position)
    assert points[1][:2] == (4, 0.25)
    assert points[0][0] == 3 and math.isnan(points[0][1])
    assert source.read(position) == ([], position)


def test_csv_keeps_its_header_wch_1(tmp_path: Path) -> None:
    """WCH-1: the header is read once and kept with the position."""
    path = tmp_path / "log.csv"
    append(path, "step,score\n10,0.1\n20,")
    source = CsvSource(path, "score")
    points, position = source.read(None)
    assert ([p[:2] for p in points], position[5]) == ([(10, 0.1)], ["step", "score"])
    append(path, "0.3\n30,\n")
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(20, 0.3)]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]\n", "not a JSON object"),
        ("{oops\n", "not JSON"),
        ('{"step": 1, "score": "high"}\n', "not a number"),
        ('{"step": -1, "score": 0.5}\n', "not an integer"),
        ('{"score": 0.5}\n', "no step key"),
    ],
)
def test_bad_records_raise_one_line_wch_6(tmp_path: Path, text: str, problem: str) -> None:
    """WCH-6: a bad record is a SourceError naming the file."""
    path = tmp_path / "m.jsonl"
    path.write_text(text)
    with pytest.raises(SourceError, match=problem) as caught:
        JsonlSource(path, "score").read(None)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_wch12_truncated_rotated_or_rewritten_files_are_read_from_their_start(
    tmp_path: Path,
) -> None:
    """WCH-12: copytruncate (even regrown past the offset), a rename-and-create rotation and
    a rewrite are each read from the new file's first byte; steps already folded are not
    folded again. WCH-6: a file gone is a problem."""
    path = tmp_path / "m.jsonl"

    def line(step: int, score: float) -> str:
        return json.dumps({"step": step, "score": score}) + "\n"

    path.write_text(line(1, 0.5) + line(2, 0.6))
    source = JsonlSource(path, "score")
    _, position = source.read(None)
    path.write_text(line(3, 0.7))  # copytruncate: shorter than the offset
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(3, 0.7)]
    path.write_text(line(4, 0.25) + line(5, 0.125) + line(6, 0.0625))  # regrown past it
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(4, 0.25), (5, 0.125), (6, 0.0625)]
    path.rename(tmp_path / "m.jsonl.1")  # logrotate's create mode: a new file, a new inode
    path.write_text(line(7, 0.9) + line(8, 0.95) + line(9, 0.99) + line(10, 0.999))
    points, position = source.read(position)
    assert [p.step for p in points] == [7, 8, 9, 10]
    rewritten = line(9, 0.99) + line(10, 0.999) + line(11, 1.0)
    (tmp_path / "new").write_text(rewritten)
    (tmp_path / "new").replace(path)  # a writer that rewrites the whole file
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(11, 1.0)]
    path.unlink()
    with pytest.raises(SourceError, match="cannot read"):
        source.read(position)


def write_state(path: Path, history: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"log_history": history}))


def test_trainer_state_from_the_latest_checkpoint_wch_1(tmp_path: Path) -> None:
    """WCH-1: the highest checkpoint's trainer state; entries after the last folded step."""
    history = [{"step": 5, "loss": 2.0}, {"step": 5, "eval_score": 0.1}]
    write_state(tmp_path / "checkpoint-5" / "trainer_state.json", history)
    source = TrainerStateSource(tmp_path, "eval_score")
    points, position = source.read(None)
    assert [p[:2] for p in points] == [(5, 0.1)]
    assert source.read(position) == ([], position)
    history += [{"step": 10, "eval_score": 0.3}]
    write_state(tmp_path / "checkpoint-10" / "trainer_state.json", history)
    write_state(tmp_path / "checkpoint-9" / "trainer_state.json", [])
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(10, 0.3)]
    history += [{"step": 15, "eval_score": 0.2}]
    write_state(tmp_path / "trainer_state.json", history)
    points, _ = source.read(position)
    assert [p[:2] for p in points] == [(15, 0.2)]
    (tmp_path / "trainer_state.json").write_text("{")
    with pytest.raises(SourceError, match="not JSON"):
        source.read(None)


def test_event_file_is_read_record_by_record_wch_1(tmp_path: Path) -> None:
    """WCH-1: TensorBoard records after a byte offset; a partial record waits; WCH-6: a
    checksum that does not match is reported."""
    summary = pytest.importorskip("tensorboard.summary")
    writer = summary.Writer(str(tmp_path))
    writer.add_scalar("loss", 1.0, 10)
    for step, value in [(10, 0.25), (20, 0.5)]:
        writer.add_scalar("eval/score", value, step)
    writer.flush()
    (path,) = tmp_path.iterdir()
    source = EventFileSource(path, "eval/score")
    full = path.read_bytes()
    path.write_bytes(full[:-5])
    points, position = source.read(None)
    assert [p[:2] for p in points] == [(10, 0.25)]
    path.write_bytes(full)
    writer.add_scalar("eval/score", 0.125, 30)
    writer.close()
    points, position = source.read(position)
    assert [p[:2] for p in points] == [(20, 0.5), (30, 0.125)]
    assert position[0] == path.stat().st_size
    broken = bytearray(full)
    broken[-6] ^= 0xFF  # inside the last record's data
    path.write_bytes(bytes(broken))
    with pytest.raises(SourceError, match="data's checksum does not match"):
        source.read(None)
    broken = bytearray(full)
    broken[0] ^= 0xFF  # the first record's length
    path.write_bytes(bytes(broken))
    with pytest.raises(SourceError, match="byte 0: its length's checksum"):
        source.read(None)


def test_runs_are_sub_folders_with_logs_by_precedence_wch_1(tmp_path: Path) -> None:
    """WCH-1: each sub-folder with a log is a run; trainer state > events > JSONL > CSV."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "log.csv").write_text("step,score\n")
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / "a.jsonl").write_text("")
    (tmp_path / "both" / "b.csv").write_text("")
    write_state(tmp_path / "hf" / "trainer_state.json", [])
    (tmp_path / "hf" / "x.jsonl").write_text("")
    runs, problems = discover_runs([tmp_path, tmp_path / "missing"], "score")
    assert [r.name for r in runs] == ["both", "csv", "hf"]
    assert [type(s).__name__ for r in runs for s in r.sources] == [
        "JsonlSource",
        "CsvSource",
        "TrainerStateSource",
    ]
    assert runs[0].key == runs[0].folder == str(tmp_path / "both")
    assert len(problems) == 1 and "missing" in problems[0]
    assert run_sources(tmp_path / "empty", "score") == ()
