"""Docs a user can trust: what the pages repeat from the code or a committed run (CLI-7)."""

from __future__ import annotations

import ast
import inspect
import json
import re
import tomllib
from pathlib import Path

import pytest

from evalstop.adapters import ray_tune

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
WIDTH = 100
"""Longest code-block line: at the theme's code font, what a 1280 px page shows unscrolled."""


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _table_calls(page: str) -> dict[str, dict[str, object]]:
    """The ``Class(arg=default, ...)`` of each table row's first cell: name -> defaults."""
    calls: dict[str, dict[str, object]] = {}
    for match in re.finditer(r"^\| `(\w+)\(([^`]*)\)` \|", page, re.MULTILINE):
        name, arguments = match.groups()
        call = ast.parse(f"f({arguments.replace('*, ', '')})", mode="eval").body
        assert isinstance(call, ast.Call)
        calls[name] = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        calls[name].update({ast.unparse(a): inspect.Parameter.empty for a in call.args})
    return calls


def _defaults(cls: type) -> dict[str, object]:
    parameters = inspect.signature(cls).parameters.values()
    return {p.name: p.default for p in parameters}


def test_cli7_the_ray_page_table_gives_the_constructors_defaults() -> None:
    """CLI-7: each class of the Ray Tune page's table, with every parameter and its default
    as the code has them (the page said ``mode="max", k=2``; the code has ``"auto"``,
    ``None``)."""
    calls = _table_calls(_read(DOCS / "adapters" / "ray.md"))
    assert set(calls) == {"EvalStopStopper", "EvalStopScheduler"}
    for name, documented in calls.items():
        assert documented == _defaults(getattr(ray_tune, name)), name


def test_cli7_the_table_check_sees_a_drifted_default() -> None:
    """CLI-7: a row giving another default, or leaving a parameter out, is not the code's."""
    row = '| `EvalStopStopper(metric, mode="max", k=2)` | x |\n'
    assert _table_calls(row)["EvalStopStopper"] != _defaults(ray_tune.EvalStopStopper)


def _cpu_figures(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"took (\d+) s of CPU time", " ".join(text.split()))]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_cli7_the_main_jobs_cpu_time_is_the_reproduction_pages(page: str) -> None:
    """CLI-7: the README's and the home page's CPU time of the main job are the committed
    run's (run.json, which docs/reproduction.md prints), and each cites that page."""
    run = json.loads(_read(DOCS / "data" / "reproduction" / "run.json"))
    reproduction = " ".join(_read(DOCS / "reproduction.md").split())
    assert f"{run['cpu_s']:,.0f} s of CPU time" in reproduction
    text = _read(ROOT / page)
    assert _cpu_figures(text) == [round(run["cpu_s"])]
    paragraph = next(p for p in text.split("\n\n") if "s of CPU time" in p and "took" in p)
    assert "reproduction.md" in paragraph


def test_cli7_the_home_page_cites_the_source_paper() -> None:
    """CLI-7: the home page has a section on the source paper: EvalStop's claims (C1-C3) and
    Gao, Schulman and Hilton (2023) with its arXiv id, and a link to the reproduction."""
    home = _read(DOCS / "index.md")
    section = home.partition("## The source paper")[2].partition("\n## ")[0]
    assert "EvalStop" in section and "shared/paper.md" in section
    assert all(claim in section for claim in ("(C1)", "(C2)", "(C3)"))
    assert "Scaling Laws for Reward Model Overoptimization" in section
    assert "arXiv:2210.10760" in section and "reproduction.md" in section


def test_cli7_the_docs_group_is_installed_and_documented() -> None:
    """CLI-7: ``pyproject.toml`` has a ``docs`` dependency group with MkDocs, ``nox -s docs``
    installs it, and the home page and CONTRIBUTING say ``pip install --group docs``."""
    groups = tomllib.loads(_read(ROOT / "pyproject.toml"))["dependency-groups"]
    assert any(str(item).startswith("mkdocs") for item in groups["docs"])
    assert '_install(session, "docs")' in _read(ROOT / "noxfile.py")
    for page in (DOCS / "index.md", ROOT / "CONTRIBUTING.md"):
        assert "pip install --group docs" in " ".join(_read(page).split()), page


def long_code_lines(text: str) -> list[tuple[int, int]]:
    """``(line number, length)`` of each code-block line longer than :data:`WIDTH`, outside
    the verbatim ``evalstop reproduce`` report (a block whose first line is its header)."""
    found: list[tuple[int, int]] = []
    fence: str | None = None
    verbatim = False
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        marker = re.match(r"^\s*(```+|~~~+)", line)
        if marker and (fence is None or marker.group(1).startswith(fence)):
            if fence is None:
                fence = marker.group(1)
                following = lines[number] if number < len(lines) else ""
                verbatim = following.startswith("evalstop reproduce: ")
            else:
                fence = None
            continue
        if fence is not None and not verbatim and len(line) > WIDTH:
            found.append((number, len(line)))
    return found


def test_cli7_code_blocks_fit_a_1280_px_page() -> None:
    """CLI-7: no code-block line of a page in docs/ is over 100 characters."""
    problems = {
        str(page.relative_to(ROOT)): long
        for page in sorted(DOCS.rglob("*.md"))
        if (long := long_code_lines(_read(page)))
    }
    assert problems == {}


def test_cli7_the_width_check_sees_a_long_line() -> None:
    """CLI-7: a long line in a code block is found; in prose or in the verbatim report it is
    not."""
    long = "x" * (WIDTH + 1)
    text = f"{long}\n```text\nshort\n{long}\n```\n```text\nevalstop reproduce: a\n{long}\n```\n"
    assert long_code_lines(text) == [(4, WIDTH + 1)]


def test_cli7_the_researchers_quick_start_quotes_the_committed_report() -> None:
    """CLI-7: the table the researchers' quick start reads is the committed full run's, line
    for line (it quoted a quick run's figures long after the worlds had changed)."""
    page = _read(DOCS / "quickstart-researchers.md")
    block = page.partition("```text\nMain result")[2].partition("```")[0]
    quoted = ("Main result" + block).rstrip("\n")
    report = _read(DOCS / "data" / "reproduction" / "report.txt")
    assert len(quoted.splitlines()) > 20
    assert f"\n{quoted}\n" in report
