"""The docs examples (docs/examples/*.py) print exactly their committed output (*.out).

Each example runs as ``__main__`` with one argument, a fresh directory; its stdout is compared
with ``docs/examples/<name>.out``, the file the pages include under the code, so a page never
shows output the code no longer prints. The directory is written as ``/tmp/rp`` in the
``.out`` files, as in the commands the pages show.

After a deliberate change of output, regenerate the files and review the diff::

    pytest tests/repo/test_docs_examples.py --regenerate-examples
    git diff docs/examples
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "docs" / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))
SHOWN_DIR = "/tmp/rp"
"""How the example's directory argument appears in the ``.out`` files and on the pages."""


def expected_path(example: Path) -> Path:
    """The committed output of ``example``: the ``.out`` file beside it."""
    return example.with_suffix(".out")


def run_example(
    path: Path, directory: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    """Run ``path`` as a script with ``directory`` as its argument; its stdout, normalised."""
    monkeypatch.setattr("sys.argv", [str(path), str(directory)])
    capsys.readouterr()
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out.replace(str(directory), SHOWN_DIR)


def test_there_are_examples() -> None:
    """Every example has its committed output, and every output its example."""
    assert len(EXAMPLES) >= 3
    outs = sorted(EXAMPLES_DIR.glob("*.out"))
    assert [p.stem for p in outs] == [p.stem for p in EXAMPLES]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_prints_its_committed_output(
    path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The stdout equals docs/examples/<name>.out, line for line."""
    directory = tmp_path / "rp"
    directory.mkdir()
    out = run_example(path, directory, capsys, monkeypatch)
    expected = expected_path(path)
    if request.config.getoption("--regenerate-examples"):
        expected.write_text(out, encoding="utf-8")
    assert out, f"{path.name} printed nothing"
    assert expected.is_file(), f"{expected.name} is missing: run with --regenerate-examples"
    assert out.splitlines() == expected.read_text(encoding="utf-8").splitlines()
