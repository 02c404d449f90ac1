"""MkDocs hook: the table of everything ``from evalstop import ...`` offers, generated.

A page that contains the marker ``<!-- evalstop-exports -->`` gets, in its place, one table
row per name of ``evalstop.__all__``: the name, linked to its reference entry, and the module
that defines it. The rows come from the source (read with griffe, as mkdocstrings does), so
the table never falls behind the package; each link is an autorefs cross-reference, so the
strict build fails if a re-exported object is missing from the API reference pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

MARKER = "<!-- evalstop-exports -->"


def exports_table(src: Path) -> str:
    """The Markdown table of the package's exports, in ``__all__`` order."""
    package = griffe.load("evalstop", search_paths=[str(src)], resolve_aliases=True)
    rows = ["| name | kind | defined in |", "|---|---|---|"]
    for name in package.exports or ():
        member = package.members[str(name)]
        target = member.final_target if member.is_alias else member
        module = target.module.path
        kind = target.kind.value
        rows.append(f"| [`{name}`][{target.path}] | {kind} | [`{module}`][{module}] |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    if MARKER not in markdown:
        return markdown
    src = Path(config.config_file_path).resolve().parent / "src"
    return markdown.replace(MARKER, exports_table(src))
