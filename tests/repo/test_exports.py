"""The public surface: every name in every ``__all__`` imports.

That each ``__all__`` is sorted (isort style) is checked by ruff's RUF022 in ``nox -s lint``.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import evalstop

OPTIONAL = {"evalstop.experiments.paper.plots"}  # imports matplotlib lazily, still importable


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


PUBLIC = frozenset(
    {
        # the documented surface: what the quick starts and the custom-policy example import
        "evalstop",
        "DeclineDetector",
        "JobView",
        "ClusterView",
        "Decision",
        "EventKind",
        "Monitor",
        "replay",
        "read_trace",
        "EvalStopError",
        "UnknownNameError",
        "EngineError",
        "InvalidDecisionError",
        "TraceError",
        "make_policy",
    }
)
PLUMBING = frozenset({"Watch", "observe", "start_watch", "verdict_of", "make_job_view"})


def test_top_level_reexports_the_documented_api() -> None:
    """ARC-3: the root exports what the docs use, and the version."""
    assert set(evalstop.__all__) >= PUBLIC
    assert evalstop.__version__
    for name in evalstop.__all__:
        assert getattr(evalstop, name) is not None


def test_root_keeps_plumbing_out() -> None:
    """ARC-3: internal helpers stay importable from their modules but are not root API."""
    assert not PLUMBING & set(evalstop.__all__)
    assert not {name for name in dir(evalstop) if name in PLUMBING}


def test_a_moved_root_name_still_works_with_a_warning() -> None:
    """ARC-3: a name the root exported before the tiers is its tier's object, with a warning."""
    from evalstop import _MOVED

    assert _MOVED  # the deprecated names of 0.x
    for name, home in _MOVED.items():
        assert name not in evalstop.__all__
        with pytest.warns(DeprecationWarning, match=f"from {home} import {name}"):
            moved = getattr(evalstop, name)
        assert moved is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no_such_name"):
        evalstop.no_such_name  # noqa: B018


def test_a_moved_engine_name_still_works_with_a_warning() -> None:
    """ARC-3: the engine's errors (now the root's) and its ``World`` (now ``Scenario``)."""
    from evalstop import engine

    for name, (home, new) in engine._MOVED.items():
        assert name not in engine.__all__
        with pytest.warns(DeprecationWarning, match=f"from {home} import {new}"):
            moved = getattr(engine, name)
        assert moved is getattr(importlib.import_module(home), new)
    with pytest.raises(AttributeError, match="no_such_name"):
        engine.no_such_name  # noqa: B018


def test_errors_share_one_root_and_the_builtins_users_catch() -> None:
    """ARC-2: EvalStopError is the root; each error is also the builtin users already catch."""
    assert issubclass(evalstop.UnknownNameError, evalstop.EvalStopError)
    assert issubclass(evalstop.UnknownNameError, KeyError)
    assert issubclass(evalstop.UnknownNameError, ValueError)
    assert issubclass(evalstop.EngineError, evalstop.EvalStopError)
    assert issubclass(evalstop.EngineError, RuntimeError)
    assert issubclass(evalstop.TraceError, evalstop.EvalStopError)
    assert issubclass(evalstop.TraceError, ValueError)
    try:
        evalstop.make_policy("nope")
    except evalstop.UnknownNameError as error:
        assert "nope" in str(error) and "srtf-est" in str(error)
        assert not str(error).startswith("'")
    else:
        raise AssertionError("an unknown policy name must raise")


def test_cli_error_is_under_the_root() -> None:
    """ARC-2: the command line's error is an EvalStopError too."""
    from evalstop.cli.errors import CliError

    assert issubclass(CliError, evalstop.EvalStopError)
