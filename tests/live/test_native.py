"""The opt-in compiled build of the monitor's hot path (spec MON-18).

In the default (pure-Python) install nothing is compiled; the ``native`` nox session installs
the mypyc build, sets ``EVALSTOP_EXPECT_COMPILED=1`` and runs these tests with the property
tests of the compiled modules (fast paths against the generic, pure path), so that a build
that silently stayed pure fails instead of passing.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os

import pytest

from evalstop.live import native


def test_mon18_the_build_compiled_what_the_session_expects() -> None:
    """MON-18: every module of COMPILED is an extension module in the compiled build
    (EVALSTOP_EXPECT_COMPILED=1), none in the default pure-Python install."""
    expected = native.COMPILED if os.environ.get("EVALSTOP_EXPECT_COMPILED") == "1" else ()
    assert native.compiled() == expected


def test_mon18_compiled_names_the_modules_loaded_from_an_extension(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MON-18: compiled() tells a module loaded from an extension file by its file name, for
    each module of COMPILED on its own, in COMPILED's order."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for name in native.COMPILED:
        module = importlib.import_module(name)
        base = str(module.__file__).rsplit(".", 1)[0]
        monkeypatch.setattr(module, "__file__", base + ".py")
    assert native.compiled() == ()
    for index in (2, 0):
        module = importlib.import_module(native.COMPILED[index])
        monkeypatch.setattr(module, "__file__", "/x/" + native.COMPILED[index] + suffix)
    assert native.compiled() == (native.COMPILED[0], native.COMPILED[2])
