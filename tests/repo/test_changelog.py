"""The changelog fragments in changelog.d/ are well formed (scheme: changelog.d/README.md).

A fragment is ``<issue>.<type>.md``, ``<issue>.<type>.<n>.md`` or ``+<slug>.<type>.md``, with
``<type>`` one of the types configured under ``[tool.towncrier]`` in pyproject.toml; its content
is non-empty Markdown without headings (towncrier writes those) and lines of at most 100
characters. CHANGELOG.md keeps the marker below which towncrier inserts a release.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAGMENTS = ROOT / "changelog.d"
NAME = re.compile(
    r"^(?:(?P<issue>[1-9]\d*)|\+(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*))\.(?P<type>[a-z]+)(?:\.[1-9]\d*)?\.md$"
)
NOT_FRAGMENTS = {"README.md"}


def towncrier() -> dict[str, object]:
    """The ``[tool.towncrier]`` table of pyproject.toml."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        table: dict[str, object] = tomllib.load(file)["tool"]["towncrier"]
    return table


def fragment_types() -> set[str]:
    """The fragment types (the ``directory`` of each ``[[tool.towncrier.type]]``)."""
    types = towncrier()["type"]
    assert isinstance(types, list)
    return {str(entry["directory"]) for entry in types}


def fragments() -> list[Path]:
    """Every file in changelog.d/ that is not its README."""
    return sorted(p for p in FRAGMENTS.iterdir() if p.name not in NOT_FRAGMENTS)


def problems(name: str, text: str, types: set[str]) -> list[str]:
    """What is wrong with the fragment ``name`` holding ``text`` (empty if nothing)."""
    match = NAME.match(name)
    if match is None:
        return [f"{name}: name is not <issue>.<type>[.<n>].md or +<slug>.<type>.md"]
    found: list[str] = []
    if match["type"] not in types:
        found.append(f"{name}: type {match['type']!r} is not one of {sorted(types)}")
    if not text.strip():
        found.append(f"{name}: empty")
    found.extend(
        f"{name}:{number}: {why}"
        for number, line in enumerate(text.splitlines(), start=1)
        for why in (
            "a heading (towncrier writes the headings)" if line.startswith("#") else "",
            "longer than 100 characters" if len(line) > 100 else "",
        )
        if why
    )
    return found


def test_config_matches_the_readme() -> None:
    """The configured types are the ones changelog.d/README.md documents, and it is ignored."""
    readme = (FRAGMENTS / "README.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\s*\| `([a-z]+)` \|", readme, flags=re.MULTILINE))
    assert documented == fragment_types()
    assert towncrier()["directory"] == "changelog.d"
    assert towncrier()["ignore"] == sorted(NOT_FRAGMENTS)


def test_changelog_keeps_the_insertion_marker() -> None:
    """towncrier inserts a release below the configured start string, so it must be there."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    start = towncrier()["start_string"]
    assert isinstance(start, str)
    assert text.count(start.strip()) == 1


@pytest.mark.parametrize("path", fragments(), ids=lambda p: p.name)
def test_fragment_is_well_formed(path: Path) -> None:
    """Each fragment is named by the scheme, of a configured type, non-empty, without headings."""
    assert problems(path.name, path.read_text(encoding="utf-8"), fragment_types()) == []


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("9.changed.md", "Moved.\n", []),
        ("9.added.2.md", "- one\n- two\n", []),
        ("+cli-typo.fixed.md", "Typo.\n", []),
        ("9.change.md", "Moved.\n", ["type 'change'"]),
        ("changed.md", "Moved.\n", ["name is not"]),
        ("9.fixed.txt", "Typo.\n", ["name is not"]),
        ("+Bad_Slug.fixed.md", "Typo.\n", ["name is not"]),
        ("9.fixed.md", " \n", ["empty"]),
        ("9.fixed.md", "## Fixed\nTypo.\n", ["heading"]),
        ("9.fixed.md", "x" * 101 + "\n", ["longer than 100"]),
    ],
)
def test_the_checker(name: str, text: str, expected: list[str]) -> None:
    """The checker accepts the documented forms and names each kind of malformed fragment."""
    found = problems(name, text, {"added", "changed", "fixed"})
    assert len(found) == len(expected)
    for problem, part in zip(found, expected, strict=True):
        assert part in problem
