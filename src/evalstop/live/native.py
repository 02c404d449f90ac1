"""Which modules of the monitor's hot path an opt-in build compiled (spec ``MON-18``).

``EVALSTOP_MYPYC=1 pip install .`` builds a wheel whose :data:`COMPILED` modules are compiled
with mypyc (the build hook ``hatch_build.py`` reads this list); without that variable the wheel
is pure Python. A compiled module gives the pure module's results, bit for bit: the ``native``
nox session runs the property tests that compare the monitor's and the folds' fast paths with
the generic, pure path against such a build. :func:`compiled` tells the two builds apart.
"""

from __future__ import annotations

import importlib
import importlib.machinery

__all__ = ["COMPILED", "compiled"]

COMPILED: tuple[str, ...] = (
    "evalstop.core.noise_fold",
    "evalstop.live.records",
    "evalstop.live.batch",
    "evalstop.live.fast",
    "evalstop.live.slots",
)
"""The modules the opt-in build compiles: the noise-aware rule's in-place fold, the monitor's
per-job records and its batch loops (typed so that compiled code reads their fields natively)."""


def compiled() -> tuple[str, ...]:
    """The modules of :data:`COMPILED` that were loaded from a compiled extension (empty for
    the default, pure-Python install)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return tuple(
        name
        for name in COMPILED
        if str(getattr(importlib.import_module(name), "__file__", "")).endswith(suffixes)
    )
