"""What the watcher follows: runs, their sources of points, and the sources of runs (``WCH``).

Three small interfaces, so that a new kind of run (a folder, an MLflow run, a Slurm job) plugs
into :class:`~evalstop.watch.watcher.Watcher` without touching it:

- a :class:`Source` reads the points of one log after a saved position: step, value and the
  side signals logged with them (:class:`Point`);
- a :class:`Run` is a key (unique, stable across restarts: a folder's resolved path,
  ``mlflow:<id>``), a short name, an optional folder (where the stop marker goes), its sources
  and the facts passed to actions (``EVALSTOP_*`` environment variables);
- a :class:`RunSource` discovers runs at every poll and acts on a stop of one of its runs
  (an MLflow tag, a ``scancel``). It sees every decision and ignores those of other sources'
  runs (test the key's prefix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import attrs

from evalstop.core.errors import EvalStopError

__all__ = ["Point", "Run", "RunSource", "Sides", "Source", "SourceError"]


class Point(NamedTuple):
    """One evaluation of a run: its step and value, and the side signals logged with it
    (``WCH-16``: the proxy reward and the KL, None where the log has none)."""

    step: int
    value: float
    proxy_reward: float | None = None
    kl: float | None = None


@attrs.frozen(slots=True)
class Sides:
    """The side signals a run's sources read beside the metric (``WCH-16``).

    Attributes:
        proxy_reward: the proxy reward's key (None: none read).
        kl: the KL's key (None: none read).
        given: the keys named on the command line (``--proxy-metric``, ``--kl-metric``): their
            value when not a number is a problem; a default key's is only no value.
    """

    proxy_reward: str | None = "proxy_reward"
    kl: str | None = "kl"
    given: frozenset[str] = frozenset()

    def names(self) -> tuple[str, ...]:
        """The keys read (beside the metric)."""
        return tuple(name for name in (self.proxy_reward, self.kl) if name is not None)


class SourceError(EvalStopError):
    """A source cannot be read now: one line naming it and the problem (``WCH-6``)."""


class Source(Protocol):
    """Where a run's evaluations come from: a file, or an MLflow run's metric history."""

    @property
    def key(self) -> str:
        """A name unique among all sources (a file's path); its position is saved under it."""
        ...

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        """The points after ``position`` (None: from the start) and the position after them.

        Positions are JSON values. Raises :class:`SourceError` when the source is unusable.
        """
        ...


@attrs.frozen(slots=True)
class Run:
    """One followed run.

    Attributes:
        key: the run's key in decisions and in the state file (unique and stable across
            restarts): its folder's resolved path, ``mlflow:<run id>``, ``slurm:<job id>``.
        name: a short name for commands (the folder's name, an MLflow run's name).
        folder: the run's folder, where the marker file goes; None for a run without one.
        sources: its sources, folded in this order at each poll.
        facts: extra facts about the run, passed to ``--on-stop`` as environment variables
            ``EVALSTOP_<KEY>`` (e.g. ``{"SLURM_JOB_ID": "123"}``); recorded with the decision.
    """

    key: str
    name: str
    folder: str | None
    sources: tuple[Source, ...]
    facts: Mapping[str, str] = attrs.field(factory=dict)


class RunSource(Protocol):
    """A kind of run: finds them, and acts when one of them is stopped.

    ``runs`` is called at every poll (so runs that appear are picked up); ``stop`` is called
    once per decision (again after a restart if the previous watcher died before recording
    that it was done: make it idempotent), from an action worker thread, never concurrently
    for one decision.
    """

    def runs(self) -> tuple[list[Run], list[str]]:
        """The runs now, and one problem line for each thing that could not be listed."""
        ...

    def stop(self, decision: Mapping[str, Any]) -> None:
        """Act on a stop (``decision`` is the JSON line's fields); ignore other sources' runs.

        An exception is reported as one line (the decision still counts as delivered).
        """
        ...
