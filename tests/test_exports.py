"""The public surface: every name in every ``__all__`` imports.

That each ``__all__`` is sorted (isort style) is checked by ruff's RUF022 in ``nox -s lint``.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import evalstop

OPTIONAL = {"evalstop.experiments.plots"}  # imports matplotlib lazily, still importable


def modules() -> list[str]:
    names = ["evalstop"]
    for info in pkgutil.walk_packages(evalstop.__path__, "evalstop."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


@pytest.mark.parametrize("name", modules())
def test_every_name_in_all_imports(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        assert name.startswith("evalstop.cli") or name in OPTIONAL or module.__doc__
        return
    assert len(set(exported)) == len(exported)
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is in __all__ but missing"


def test_top_level_reexports_the_core() -> None:
    for attribute in ("simulate", "evalstop", "DeclineDetector", "generate", "JobView"):
        assert attribute in evalstop.__all__
    assert evalstop.__version__
