"""MkDocs hook: publish the specification (``spec/*.md``) under ``/spec/`` without copying it.

``spec/`` stays at the repository root, where the tests read it (``test_spec_coverage.py``) and
where ``grep -rn ENG-3`` finds it. At build time this hook

1. adds every ``spec/*.md`` to the site as ``spec/<name>.md``, read straight from ``spec/``
   (``spec/README.md`` becomes the section's index page); the clause files keep their own
   relative links (``[model.md](model.md)``), which the strict build checks like any other;
2. expands the nav entry whose value is ``spec/README.md`` into the whole section: the README
   first, then the files in the order of the README's table, then any file the table does not
   list yet (alphabetically), so a new clause file is published with no change here.

A file of the same name under ``docs/spec/`` would shadow a clause file: that is reported as
a warning, which fails the strict build.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.spec_pages")

SPEC_DIR = "spec"
INDEX = "README.md"
_LINK = re.compile(r"\]\(([\w.-]+\.md)\)")


def _spec_dir(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent / SPEC_DIR


def spec_files(config: MkDocsConfig) -> list[str]:
    """``spec/*.md`` names: the README, then the README's table order, then the rest."""
    root = _spec_dir(config)
    present = sorted(path.name for path in root.glob("*.md"))
    if INDEX not in present:
        return present
    listed = _LINK.findall((root / INDEX).read_text(encoding="utf-8"))
    ordered = [INDEX] + [name for name in dict.fromkeys(listed) if name in present]
    return ordered + [name for name in present if name not in ordered]


def _expand(nav: Any, pages: list[str]) -> Any:
    marker = f"{SPEC_DIR}/{INDEX}"
    if isinstance(nav, list):
        return [_expand(item, pages) for item in nav]
    if isinstance(nav, dict):
        return {
            title: pages if value == marker else _expand(value, pages)
            for title, value in nav.items()
        }
    return nav


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    if config.nav is not None:
        config.nav = _expand(config.nav, [f"{SPEC_DIR}/{name}" for name in spec_files(config)])
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = _spec_dir(config)
    for name in spec_files(config):
        uri = f"{SPEC_DIR}/{name}"
        if files.get_file_from_path(uri) is not None:
            log.warning("docs/%s shadows %s/%s; remove the copy under docs/", uri, SPEC_DIR, name)
            continue
        files.append(File.generated(config, uri, abs_src_path=str(root / name)))
    return files
