"""Follow live runs, apply the monitor's rule to each, and decide once per run (spec ``WCH``).

A :class:`Watcher` polls runs. A run is a name, an optional folder and its sources; a source
reads the points ``(step, value)`` that follow a saved read position and returns the new
position. Each run has its own one-job :class:`~evalstop.live.monitor.Monitor`, so a watcher
decides exactly as :func:`evalstop.traces.replay.replay` does on the same points (``WCH-2``).

Crash safety comes from :class:`~evalstop.live.store.StateStore`: a run's new positions, its
monitor and its decision are committed together (``WCH-3``); a decision's effects are carried
out after that commit and marked delivered after them (``WCH-4``). The module knows no file
format and does no I/O of its own beyond the store: readers come from
:mod:`evalstop.traces.follow` and MLflow, effects from the caller.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs

from evalstop.core.errors import EvalStopError
from evalstop.live.monitor import Monitor, Stop
from evalstop.live.store import ACTED, ANNOUNCED, Pending, StateStore

__all__ = ["Decision", "Point", "Run", "Source", "SourceError", "Watcher", "watch"]

Point = tuple[int, float]
"""``(step, value)``: one evaluation of a run."""

_JOB = "run"


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
        key: the run's key in decisions and in the state file (unique): its folder's path.
        name: a short name for commands (the folder's name, an MLflow run's name).
        folder: the run's folder, where the marker file goes; None for a run without one.
        sources: its sources, folded in this order at each poll.
    """

    key: str
    name: str
    folder: str | None
    sources: tuple[Source, ...]


@attrs.frozen(slots=True)
class Decision:
    """A stop: what ``watch`` prints as one JSON line and writes to the marker (``WCH-4``)."""

    run: str
    name: str
    path: str | None
    metric: str
    detector: str
    stop_step: int
    best_step: int | None
    best_value: float | None
    evals: int

    def to_json_dict(self) -> dict[str, Any]:
        """The fields, in order, as JSON values."""
        return attrs.asdict(self)


class Watcher:
    """Fold new points of each run into its monitor; record and deliver each stop once.

    Args:
        store: the state file.
        metric: the metric's name (reported in decisions; sources already read only it).
        new_monitor: builds a fresh one-job monitor; its detector and mode are the rule.
        deliver: announces a decision (marker file, JSON line); called once per decision,
            again after a restart only if the previous process died between announcing it and
            recording that.
        act: then acts on it (the command, an MLflow tag), with the same guarantee.
        report: receives one line per problem (an unreadable run); never fatal.
    """

    def __init__(
        self,
        store: StateStore,
        metric: str,
        new_monitor: Callable[[], Monitor],
        deliver: Callable[[dict[str, Any]], None],
        report: Callable[[str], None],
        act: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._store = store
        self._metric = metric
        self._new_monitor = new_monitor
        template = new_monitor()
        self._detector = template.detector
        self._loss_sign = -1.0 if template.mode == "max" else 1.0
        self._deliver = deliver
        self._act = act
        self._report = report
        self._reported: dict[str, str] = {}
        self._decided = store.decided()

    def poll(self, runs: Iterable[Run]) -> int:
        """One pass: deliver what is pending, fold every undecided run, deliver new stops.

        Returns the number of decisions delivered by this pass.
        """
        delivered = self._deliver_pending()
        for run in runs:
            if run.key in self._decided:
                continue
            try:
                self._fold(run)
            except SourceError as error:
                self._problem(run.key, str(error))
            else:
                self._reported.pop(run.key, None)
        return delivered + self._deliver_pending()

    def _problem(self, run: str, message: str) -> None:
        if self._reported.get(run) != message:
            self._reported[run] = message
            self._report(message)

    def _load(self, run: str) -> Monitor:
        saved = self._store.monitor(run)
        if saved is None:
            return self._new_monitor()
        return Monitor.from_json(saved, self._detector)

    def _fold(self, run: Run) -> None:
        monitor = self._load(run.key)
        moved: list[tuple[str, Any]] = []
        stop: Stop | None = None
        folded = 0
        for source in run.sources:
            position = self._store.position(source.key)
            points, after = source.read(position)
            if after != position:
                moved.append((source.key, after))
            for step, value in points:
                verdict = monitor.observe(_JOB, step, value, loss=self._loss(value))
                folded += 1
                if isinstance(verdict, Stop):
                    stop = verdict
                    break
            if stop is not None:
                break
        if not moved and not folded:
            return
        with self._store.transaction():
            for key, after in moved:
                self._store.save_position(key, run.key, after)
            self._store.save_monitor(run.key, monitor.to_json())
            if stop is not None:
                self._store.record(run.key, self._decision(run, stop).to_json_dict())
        if stop is not None:
            self._decided.add(run.key)

    def _loss(self, value: float) -> float:
        # As replay does without a loss trace: the score turned lower-is-better (RPL-4).
        return self._loss_sign * value if math.isfinite(value) else math.nan

    def _decision(self, run: Run, stop: Stop) -> Decision:
        return Decision(
            run=run.key,
            name=run.name,
            path=run.folder,
            metric=self._metric,
            detector=self._detector.name,
            stop_step=stop.stop_step,
            best_step=stop.best_step,
            best_value=stop.best_score,
            evals=stop.evals,
        )

    def _deliver_pending(self) -> int:
        pending: list[Pending] = self._store.pending()
        for item in pending:
            if item.stage < ANNOUNCED:
                self._deliver(item.body)
                self._store.mark_delivered(item.seq, ANNOUNCED)
            if self._act is not None:
                self._act(item.body)
            self._store.mark_delivered(item.seq, ACTED)
        return len(pending)


def watch(
    watcher: Watcher,
    discover: Callable[[], Iterable[Run]],
    *,
    interval: float,
    once: bool,
    stopping: Callable[[], bool],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll ``discover()``'s runs every ``interval`` seconds until ``stopping()`` (or once).

    ``discover`` is called at every poll, so runs that appear are picked up (``WCH-1``).
    ``stopping`` is checked between runs' polls and while sleeping, so a SIGTERM ends the
    loop after the transaction in flight (``WCH-7``).
    """
    while not stopping():
        watcher.poll(run for run in discover() if not stopping())
        if once:
            return
        deadline = time.monotonic() + interval
        while not stopping() and time.monotonic() < deadline:
            sleep(min(0.05, max(0.0, deadline - time.monotonic())))
