"""All-or-nothing output folders (REP-6): staging, atomic renames, .prev, symlinks, errors."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from evalstop.cli import main
from evalstop.cli.errors import CliError
from evalstop.cli.output import BACKUP_SUFFIX, OutputDir

SMALL = ["--seeds", "1", "--jobs", "20", "--workers", "1", "--no-progress"]


def visible(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def test_files_appear_only_at_commit_rep_6(tmp_path: Path) -> None:
    """REP-6: staged files are invisible until commit; leaving without it removes them."""
    with OutputDir(tmp_path) as output:
        output.write_text("a.txt", "new")
        assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []
    assert list(tmp_path.iterdir()) == []
    with OutputDir(tmp_path) as output:
        output.write_text("a.txt", "new")
        assert output.commit() == [tmp_path / "a.txt"]
    assert visible(tmp_path) == {"a.txt": "new"}


def test_replaced_file_is_kept_as_prev_rep_6(tmp_path: Path) -> None:
    """REP-6: a rerun keeps the last version beside the new one."""
    (tmp_path / "a.txt").write_text("old", encoding="utf-8")
    (tmp_path / f"a.txt{BACKUP_SUFFIX}").write_text("older", encoding="utf-8")
    with OutputDir(tmp_path) as output:
        output.write_text("a.txt", "new")
        output.commit()
    assert visible(tmp_path) == {"a.txt": "new", "a.txt.prev": "old"}


def test_symlink_is_replaced_not_written_through_rep_6(tmp_path: Path) -> None:
    """REP-6: a symlink in the folder pointing outside leaves its target untouched."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me", encoding="utf-8")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "results.json").symlink_to(outside)
    with OutputDir(folder) as output:
        output.write_text("results.json", "{}")
        output.commit()
    assert outside.read_text(encoding="utf-8") == "keep me"
    assert not (folder / "results.json").is_symlink()
    assert (folder / "results.json").read_text(encoding="utf-8") == "{}"


def test_directory_in_the_way_is_refused_before_work_rep_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-6, CLI-1: results.json being a directory is one line, before any simulation."""
    (tmp_path / "results.json").mkdir()
    assert main(["reproduce", *SMALL, "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "is a directory" in captured.err


def test_full_disk_is_one_line_and_keeps_the_old_files_rep_6(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-6, CLI-1: ENOSPC while writing: one line, exit 2, the folder as it was."""
    (tmp_path / "results.json").write_text("previous", encoding="utf-8")
    real = Path.write_text

    def full(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data, encoding="utf-8")

    monkeypatch.setattr(Path, "write_text", full)
    assert main(["reproduce", *SMALL, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert (tmp_path / "results.json").read_text(encoding="utf-8") == "previous"


def test_unwritable_folder_is_one_line_rep_6(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REP-6: a folder the staging area cannot be made in is a CliError naming it."""

    def refuse(*args: object, **kwargs: object) -> str:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("tempfile.mkdtemp", refuse)
    with pytest.raises(CliError, match="Permission denied"), OutputDir(tmp_path):
        pass


def test_names_must_be_plain_rep_6(tmp_path: Path) -> None:
    """REP-6: a staged name cannot climb out of the folder."""
    with OutputDir(tmp_path) as output:
        for name in ("../x", "a/b", "", ".hidden"):
            with pytest.raises(ValueError, match="plain names"):
                output.stage(name)
