"""Log rotation loses no line: the previous file is drained before the new one (spec WCH-13)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstop.watch import files
from evalstop.watch.follow import CsvSource, JsonlSource
from evalstop.watch.source import Source


class Writer:
    """A trainer's logger: appends one evaluation a line, rotates as logrotate does."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder, self.path, self.step, self.rotations = folder, folder / name, 0, 0
        self.csv = name.endswith(".csv")
        self._new()

    def _new(self) -> None:
        with self.path.open("a", encoding="utf-8") as file:
            file.write("step,score\n" if self.csv else "")

    def append(self, lines: int) -> None:
        with self.path.open("a", encoding="utf-8") as file:
            for _ in range(lines):
                self.step += 1
                score = (self.step % 7) / 7
                text = (
                    f"{self.step},{score}\n"
                    if self.csv
                    else json.dumps({"step": self.step, "score": score}) + "\n"
                )
                file.write(text)

    def _shift(self) -> str:
        """The numbered copies move up one (``.1`` -> ``.2``); the name for the newest."""
        self.rotations += 1
        for number in range(self.rotations - 1, 0, -1):
            old = self.folder / f"{self.path.name}.{number}"
            if old.exists():
                old.rename(self.folder / f"{self.path.name}.{number + 1}")
        return f"{self.path.name}.1"

    def rename_and_create(self) -> None:
        self.path.rename(self.folder / self._shift())
        self._new()

    def copytruncate(self) -> None:
        shutil.copyfile(self.path, self.folder / self._shift())
        with self.path.open("r+", encoding="utf-8") as file:
            file.truncate(0)
        self._new()


def _source(writer: Writer) -> Source:
    kind = CsvSource if writer.csv else JsonlSource
    return kind(writer.path, "score")


def _poll(source: Source, position: object, seen: list[int]) -> object:
    points, position = source.read(position)
    seen.extend(point.step for point in points)
    return position


@pytest.mark.parametrize("name", ["m.jsonl", "log.csv"])
@pytest.mark.parametrize("rotate", ["rename_and_create", "copytruncate"])
def test_wch13_lines_written_before_a_rotation_are_delivered_once(
    tmp_path: Path, name: str, rotate: str
) -> None:
    """WCH-13: append, rotate (rename and create, or copytruncate), append, all between two
    polls: every line once, in order; the new file's header (CSV) is read anew."""
    writer = Writer(tmp_path, name)
    source, seen = _source(writer), list[int]()
    writer.append(3)
    position = _poll(source, None, seen)
    for _ in range(3):
        writer.append(2)
        getattr(writer, rotate)()
        writer.append(2)
        position = _poll(source, position, seen)
    assert seen == list(range(1, writer.step + 1))
    assert source.read(position) == ([], position)


def test_wch13_a_previous_file_larger_than_a_read_is_drained_over_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-13: with a read bounded to 100 bytes, the renamed file is drained over several polls
    before the new one is read; no line lost or repeated."""
    monkeypatch.setattr(files, "MAX_READ", 100)
    writer = Writer(tmp_path, "m.jsonl")
    source, seen = _source(writer), list[int]()
    writer.append(1)
    position = _poll(source, None, seen)
    writer.append(12)
    writer.rename_and_create()
    writer.append(3)
    for _ in range(30):
        position = _poll(source, position, seen)
    assert seen == list(range(1, writer.step + 1))


def test_wch13_renamed_away_and_not_created_yet(tmp_path: Path) -> None:
    """WCH-13: the path renamed and not yet created again: the renamed file is drained; the
    new file, once created, is read from its start."""
    writer = Writer(tmp_path, "m.jsonl")
    source, seen = _source(writer), list[int]()
    writer.append(2)
    position = _poll(source, None, seen)
    writer.append(2)
    writer.path.rename(tmp_path / "m.jsonl.1")
    position = _poll(source, position, seen)
    assert seen == [1, 2, 3, 4]
    writer._new()
    writer.append(1)
    position = _poll(source, position, seen)
    assert seen == [1, 2, 3, 4, 5]


def test_wch13_an_unrelated_sibling_is_not_drained(tmp_path: Path) -> None:
    """WCH-13: a rewrite (a new inode, the old one gone) beside an older copy whose bytes
    differ: nothing is drained, the new file's steps after the last folded count."""
    writer = Writer(tmp_path, "m.jsonl")
    source, seen = _source(writer), list[int]()
    writer.append(2)
    (tmp_path / "m.jsonl.1").write_text('{"step": 99, "score": 1}\n' * 3)
    position = _poll(source, None, seen)
    text = writer.path.read_text()
    os.unlink(writer.path)
    writer.path.write_text(text + json.dumps({"step": 3, "score": 0.5}) + "\n")
    _poll(source, position, seen)
    assert seen == [1, 2, 3]


Op = Callable[[Writer], None]
OPS: dict[str, Op] = {
    "rename": Writer.rename_and_create,
    "copytruncate": Writer.copytruncate,
    "none": lambda writer: None,
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rounds=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(sorted(OPS)), st.integers(0, 3)),
        max_size=6,
    )
)
def test_wch13_any_rotations_between_polls_deliver_each_line_once(
    tmp_path_factory: pytest.TempPathFactory, rounds: list[tuple[int, str, int]]
) -> None:
    """WCH-13: after a first poll, any sequence of (append, at most one rotation, append)
    between polls (a copytruncate only of a file read past its first byte): the steps read
    are exactly the steps written, in order."""
    folder = tmp_path_factory.mktemp("rot")
    writer = Writer(folder, "m.jsonl")
    source, seen = _source(writer), list[int]()
    writer.append(1)  # a copytruncate of a file never read holds nothing the watcher knew
    position = _poll(source, None, seen)
    read_some = True  # the last poll saw a line of the file it read
    for before, drawn, after in rounds:
        # A copytruncate is recognised only in a file read past its first byte (WCH-13).
        op = "none" if drawn == "copytruncate" and not read_some else drawn
        writer.append(before)
        OPS[op](writer)
        writer.append(after)
        position = _poll(source, position, seen)
        read_some = after > 0 or (op == "none" and (read_some or before > 0))
    assert seen == list(range(1, writer.step + 1))
