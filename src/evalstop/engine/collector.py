"""When the fast engine may pause Python's cyclic garbage collector, and the pause (``ENG-19``).

A run of a built-in priority base, alone or wrapped once by EvalStop with no detector or one
built-in rule folded in the job's record (``ENG-17``), executes no code but the
library's, and that code makes no reference cycles: the collector would find nothing, yet at
100,000 jobs its scans of the workload's objects cost a sixth of the run. Any other policy
or detector is user code that may make cycles, so it runs with the collector as it was.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from evalstop.core.policies import fifo, las, loss_aware, sjf_est, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.registry import alone, base_of

__all__ = ["engine_only", "paused"]

_OWN_BASES = (fifo, sjf_est, srtf_est, loss_aware, las)


def engine_only(policy: Policy) -> bool:
    """Whether a run of ``policy`` executes no code but the library's (``ENG-19``): one of the
    built-in priority bases itself, alone or wrapped once by :class:`EvalStop`, with no
    detector or one built-in rule alone that folds in place (``alone``: the decline rule, the
    noise-aware rule)."""
    base = base_of(policy)
    if not any(base is own for own in _OWN_BASES):
        return False
    detectors = policy.detectors
    return not detectors or alone(detectors) is not None


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
