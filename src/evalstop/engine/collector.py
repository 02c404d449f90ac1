"""When the fast engine may pause Python's cyclic garbage collector, and the pause (``ENG-19``).

A run of a built-in base (a priority base or fair share), alone or wrapped once by EvalStop
with no detector or one built-in rule folded in the job's record (``ENG-17``), executes no
code but the library's, and that code makes no reference cycles: the collector would find
nothing, yet at 100,000 jobs its scans of the workload's objects cost a sixth of the run. Any
other policy or detector is user code that may make cycles, so it runs with the collector as
it was.

A workload's builders and the readers of its tables (spec ``WRK-10``) and of a run's outcomes
(``MET-11``) run only the library's code too and make no reference cycles:
:func:`without_collector` runs them with the collector paused.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from evalstop.core.policy import Policy
from evalstop.core.registry import library_only

__all__ = ["engine_only", "paused", "without_collector"]

P = ParamSpec("P")
R = TypeVar("R")


def engine_only(policy: Policy) -> bool:
    """Whether a run of ``policy`` executes no code but the library's (``ENG-19``): the core
    says (:func:`~evalstop.core.registry.library_only`); the engine names no policy."""
    return library_only(policy)


@contextmanager
def paused(pause: bool) -> Iterator[None]:
    """The collector off inside the block when ``pause`` and it was on; restored on exit,
    also when the block raises (as ``timeit`` does)."""
    if not (pause and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def without_collector(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` called with the collector paused (:func:`paused`), for library code that
    makes no reference cycles but many objects, whose scans by the collector would find
    nothing (``WRK-10``)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused(True):
            return function(*args, **kwargs)

    return call
