"""The engine layer: a pure, specified transition and the driver that feeds it events.

- :mod:`~evalstop.engine.step`: ``step(world, state, event) -> Transition`` (pure, spec ``ENG``);
- :mod:`~evalstop.engine.state`: the immutable state it reads and returns;
- :mod:`~evalstop.engine.simulator`: :class:`Simulator`, the imperative shell with the queue;
- :mod:`~evalstop.engine.fast`: :class:`FastSimulator`, the imperative engine that ``simulate``
  runs, proven equal to the pure one on every generated history (spec ``ENG-15``);
- :mod:`~evalstop.engine.collector`: when a fast run pauses the cyclic garbage collector
  (spec ``ENG-19``), and the pause a workload's builders and readers run in (``WRK-10``,
  ``MET-11``);
- :mod:`~evalstop.engine.arrivals`: the fast engines' pending arrivals, fed into their event
  heap one at a time (spec ``ENG-15``);
- :mod:`~evalstop.engine.events`, :mod:`~evalstop.engine.queue`, :mod:`~evalstop.engine.log`:
  queue events, their deterministic order, and the output log.

The engine imports only the core layer (``evalstop.core``).

This is the engine's public tier (spec ``ARC-5``): what reads, drives or checks the engine.
Its errors (``EngineError``, ``InvalidDecisionError``) are exported by the root, ``evalstop``;
the fast engines' job records (:mod:`~evalstop.engine.record`), pending arrivals and collector
pause are machinery.
"""

from evalstop.engine.events import Event as Event
from evalstop.engine.fast import FastSimulator as FastSimulator
from evalstop.engine.log import EventLog as EventLog
from evalstop.engine.log import LogKind as LogKind
from evalstop.engine.log import LogRecord as LogRecord
from evalstop.engine.queue import EventQueue as EventQueue
from evalstop.engine.simulator import Simulator as Simulator
from evalstop.engine.state import ActiveJob as ActiveJob
from evalstop.engine.state import Ended as Ended
from evalstop.engine.state import JobStatus as JobStatus
from evalstop.engine.state import Scenario as Scenario
from evalstop.engine.state import SimState as SimState
from evalstop.engine.state import Transition as Transition
from evalstop.engine.state import check_invariants as check_invariants
from evalstop.engine.state import initial_state as initial_state
from evalstop.engine.step import step as step

__all__ = [
    "ActiveJob",
    "Ended",
    "Event",
    "EventLog",
    "EventQueue",
    "FastSimulator",
    "JobStatus",
    "LogKind",
    "LogRecord",
    "Scenario",
    "SimState",
    "Simulator",
    "Transition",
    "check_invariants",
    "initial_state",
    "step",
]

_MOVED = {
    "BuiltinSimulator": ("evalstop.engine", "FastSimulator"),
    "EngineError": ("evalstop", "EngineError"),
    "InvalidDecisionError": ("evalstop", "InvalidDecisionError"),
    "World": ("evalstop.engine", "Scenario"),
    "simulator_for": ("evalstop.engine", "FastSimulator"),
}
"""Names this tier exported before (0.x): each still works, with a warning. ``BuiltinSimulator``
and ``simulator_for`` (the third engine, ENG-18, retired) give :class:`FastSimulator`, which
takes the same arguments and gives the same results."""


def __getattr__(name: str) -> object:
    """``evalstop.engine.<name>`` of a name that moved or was renamed, with a warning."""
    if name not in _MOVED:
        raise AttributeError(f"module 'evalstop.engine' has no attribute {name!r}")
    import importlib
    import warnings

    home, new = _MOVED[name]
    warnings.warn(
        f"evalstop.engine.{name} is deprecated: use {home}.{new} (from {home} import {new})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), new)
