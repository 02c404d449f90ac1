"""ARC-5: the public tiers: every public name is exported by exactly one tier.

Three tiers, as trio and Hypothesis draw them: ``evalstop`` for embedders, ``evalstop.sim`` for
researchers, ``evalstop.engine`` for the engine and its reference. The wings (``adapters``,
``gym``, ``watch``) are packages of their own: the modules of theirs that an API page renders
are public, and export none of the tiers' names. The API reference (``docs/api/``) renders the
tiers and those modules, nothing else.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

TIERS = ("evalstop", "evalstop.sim", "evalstop.engine")
WINGS = ("evalstop.adapters", "evalstop.gym", "evalstop.watch")
API = Path(__file__).resolve().parents[2] / "docs" / "api"


def exports(name: str) -> dict[str, object]:
    """``name``'s ``__all__``: each exported name and its object."""
    module = importlib.import_module(name)
    return {attribute: getattr(module, attribute) for attribute in getattr(module, "__all__", ())}


def rendered(text: str) -> list[str]:
    """The targets of the ``::: target`` directives of an API page."""
    return re.findall(r"^::: *([\w.]+)", text, flags=re.MULTILINE)


def api_targets() -> list[str]:
    """Every directive's target, over the API pages."""
    return [target for page in sorted(API.glob("*.md")) for target in rendered(page.read_text())]


def wing_modules() -> list[str]:
    """The modules of the wings that the API pages render: the wings' public modules."""
    return [
        target
        for target in api_targets()
        if any(target == wing or target.startswith(wing + ".") for wing in WINGS)
    ]


def tier_clashes(tiers: dict[str, dict[str, object]]) -> list[str]:
    """Each name, and each object, that more than one tier exports."""
    names = Counter(name for exported in tiers.values() for name in exported)
    objects = Counter(
        id(obj)
        for exported in tiers.values()
        for obj in exported.values()
        if not isinstance(obj, int | float | str | tuple | frozenset | ModuleType)
    )
    bad = [f"{name} (in {n} tiers)" for name, n in sorted(names.items()) if n > 1]
    for tier, exported in tiers.items():
        bad += [
            f"{tier}.{name} (the same object as another tier's)"
            for name, obj in exported.items()
            if objects.get(id(obj), 0) > 1 and names[name] == 1
        ]
    return bad


def test_each_public_name_is_exported_by_exactly_one_tier() -> None:
    """ARC-5: no name and no object is exported by two tiers."""
    tiers = {tier: exports(tier) for tier in TIERS}
    assert all(tiers.values())
    assert not tier_clashes(tiers)


def test_the_check_sees_a_clash() -> None:
    """ARC-5: a name in two tiers, or one object under two names, is reported."""

    class Thing:
        pass

    thing = Thing()
    assert tier_clashes({"a": {"x": thing}, "b": {"x": thing}}) == ["x (in 2 tiers)"]
    assert tier_clashes({"a": {"x": thing}, "b": {"y": thing}}) == [
        "a.x (the same object as another tier's)",
        "b.y (the same object as another tier's)",
    ]
    assert tier_clashes({"a": {"x": Thing()}, "b": {"y": Thing()}}) == []


@pytest.mark.parametrize("name", wing_modules())
def test_a_wing_module_exports_no_tier_name(name: str) -> None:
    """ARC-5: a wing module's names are its own, not a tier's again."""
    tier_names = {n for tier in TIERS for n in exports(tier)}
    assert not set(exports(name)) & tier_names


def test_the_api_pages_render_the_tiers_and_the_wings_only() -> None:
    """ARC-5: each directive of docs/api renders a tier, a wing's module, or a tier's function
    that a submodule of the same name shadows (``evalstop.engine.step``)."""
    targets = api_targets()
    public = {*TIERS, *wing_modules()}
    assert set(TIERS) <= set(targets)
    for target in targets:
        if target in public:
            continue
        module, _, name = target.rpartition(".")
        owner = next(tier for tier in TIERS if name in exports(tier))
        assert module.rsplit(".", 1)[-1] == name, target
        assert exports(owner)[name] is getattr(importlib.import_module(module), name)
    assert rendered("# page\n\n::: evalstop.sim\n\n:::evalstop.core.model\n") == [
        "evalstop.sim",
        "evalstop.core.model",
    ]
