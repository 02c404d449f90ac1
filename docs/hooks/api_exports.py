"""MkDocs hook: the table of everything a public tier offers, generated.

A page that contains the marker ``<!-- evalstop-exports MODULE -->`` (``MODULE`` one of the
tiers: ``evalstop``, ``evalstop.sim``, ``evalstop.engine``) gets, in its place, one table row
per name of that module's ``__all__``: the name, linked to its reference entry, its kind, and
the machinery module that defines it. The rows come from the source (read with griffe, as
mkdocstrings does), so the table never falls behind the package; each link is an autorefs
cross-reference to the name under its tier, so the strict build fails if an exported object is
missing from the API reference pages.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

MARKER = re.compile(r"<!-- evalstop-exports (?P<module>[\w.]+) -->")


def exports_table(src: Path, module: str) -> str:
    """The Markdown table of ``module``'s exports, in ``__all__`` order."""
    package = griffe.load("evalstop", search_paths=[str(src)], resolve_aliases=True)
    tier = package if module == "evalstop" else package[module.removeprefix("evalstop.")]
    rows = ["| name | kind | defined in |", "|---|---|---|"]
    for name in tier.exports or ():
        member = tier.members[str(name)]
        target = member.final_target if member.is_alias else member
        link = f"{module}.{name}"
        if target.is_module and name in target.members:
            # A submodule shadows the function of its name that the tier exports
            # (engine.step, traces.replay): the page renders the function by its own path.
            target = target.members[str(name)]
            link = target.path
        kind = target.kind.value
        rows.append(f"| [`{name}`][{link}] | {kind} | `{target.module.path}` |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    src = Path(config.config_file_path).resolve().parent / "src"
    return MARKER.sub(lambda match: exports_table(src, match["module"]), markdown)
