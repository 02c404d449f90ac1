"""Follow live runs, apply the monitor's rule to each, and decide once per run (spec ``WCH``).

A :class:`Watcher` polls runs (:class:`~evalstop.watch.source.Run`): each has its own one-job
:class:`~evalstop.live.monitor.Monitor`, so a watcher decides exactly as
:func:`evalstop.traces.replay.replay` does on the same points (``WCH-2``).

Crash safety comes from :class:`~evalstop.watch.store.StateStore`: a run's new positions, its
monitor and its decision are committed together (``WCH-3``); a decision's effects are carried
out after that commit and marked delivered after them (``WCH-4``). The announcement (marker,
JSON line) is made inline; the actions (commands, a source's own) are handed to an
:class:`~evalstop.watch.actions.ActionRunner` and recorded as done when they finish. A run
whose reading fails in any way is reported once and skipped; the others go on (``WCH-6``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from evalstop.live.monitor import Monitor, Stop
from evalstop.watch.source import Point, Run, SourceError
from evalstop.watch.store import ACTED, ANNOUNCED, StateError, StateStore

__all__ = ["Actions", "StopNotice", "Watcher", "watch"]

_JOB = "run"


class Actions(Protocol):
    """What carries out decisions' actions (:class:`~evalstop.watch.actions.ActionRunner`)."""

    def start(self, seq: int, body: Mapping[str, Any]) -> bool: ...

    def finished(self) -> list[int]: ...


class _Inline:
    """Actions done at once, in the polling loop (a plain callable; tests and embedders)."""

    def __init__(self, act: Callable[[dict[str, Any]], None] | None) -> None:
        self._act = act
        self._done: list[int] = []

    def start(self, seq: int, body: Mapping[str, Any]) -> bool:
        if self._act is not None:
            self._act(dict(body))
        self._done.append(seq)
        return True

    def finished(self) -> list[int]:
        done, self._done = self._done, []
        return done


@attrs.frozen(slots=True)
class StopNotice:
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
    facts: Mapping[str, str] = attrs.field(factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """The fields, in order, as JSON values (``facts`` only when the run has some)."""
        body = attrs.asdict(self)
        if not body["facts"]:
            del body["facts"]
        return body


class Watcher:
    """Fold new points of each run into its monitor; record and deliver each stop once.

    Args:
        store: the state file.
        metric: the metric's name (reported in decisions; sources already read only it).
        new_monitor: builds a fresh one-job monitor; its detector and mode are the rule.
        deliver: announces a decision (marker file, JSON line); called once per decision,
            again after a restart only if the previous process died between announcing it and
            recording that.
        report: receives one line per problem (an unreadable run); never fatal.
        act: then acts on it: a callable run inline, or an :class:`Actions` runner (the
            decision is recorded as acted when the runner says it finished).
    """

    def __init__(
        self,
        store: StateStore,
        metric: str,
        new_monitor: Callable[[], Monitor],
        deliver: Callable[[dict[str, Any]], None],
        report: Callable[[str], None],
        act: Callable[[dict[str, Any]], None] | Actions | None = None,
    ) -> None:
        self._store = store
        self._metric = metric
        self._new_monitor = new_monitor
        template = new_monitor()
        self._detector = template.detector
        self._loss_sign = -1.0 if template.mode == "max" else 1.0
        self._deliver = deliver
        self._actions = _Inline(act) if act is None or callable(act) else act
        self._report = report
        self._reported: dict[str, str] = {}
        self._noted: set[tuple[str, str]] = set()
        self._decided = store.decided()

    def poll(self, runs: Iterable[Run]) -> int:
        """One pass: deliver what is pending, fold every undecided run, deliver new stops.

        Returns the number of decisions announced by this pass.
        """
        delivered = self.deliver_pending()
        for run in runs:
            if run.key in self._decided:
                continue
            try:
                self._fold(run)
            except SourceError as error:
                self._problem(run.key, str(error))
            except (ArithmeticError, LookupError, MemoryError, RecursionError, TypeError,
                    ValueError) as error:  # fmt: skip
                # A reader's own bug on hostile input must not stop the other runs (WCH-6).
                self._problem(run.key, f"{run.key}: cannot read ({type(error).__name__})")
            else:
                self._reported.pop(run.key, None)
        return delivered + self.deliver_pending()

    def _problem(self, run: str, message: str) -> None:
        if self._reported.get(run) != message:
            self._reported[run] = message
            self._report(message)

    def _load(self, run: str) -> Monitor:
        saved = self._store.monitor(run)
        if saved is None:
            return self._new_monitor()
        try:
            return Monitor.from_json(saved, self._detector)
        except Exception as error:  # whatever a tampered text makes the codec raise
            raise StateError(
                f"{self._store.path}: the saved monitor of {run} is damaged ({error}); "
                "use another --state file"
            ) from None

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
            self._note_missing(run.key, points)
            for point in points:
                verdict = monitor.observe(
                    _JOB,
                    point.step,
                    point.value,
                    loss=self._loss(point.value),
                    proxy_reward=point.proxy_reward,
                    kl=point.kl,
                )
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

    def _note_missing(self, run: str, points: Sequence[Point]) -> None:
        """One note per run and side signal the detector needs and the run's log lacks
        (``SIG-8``, ``WCH-16``): said, never silent."""
        for name in getattr(self._detector, "needs", ()):
            lacking = points and all(getattr(point, name, None) is None for point in points)
            if lacking and (run, name) not in self._noted:
                self._noted.add((run, name))
                self._report(
                    f"note: {run}: no {name} to read; {self._detector.name} judges it by its "
                    "eval-only fallback (spec SIG-8)"
                )

    def _loss(self, value: float) -> float:
        # As replay does without a loss trace: the score turned lower-is-better (RPL-4).
        return self._loss_sign * value if math.isfinite(value) else math.nan

    def _decision(self, run: Run, stop: Stop) -> StopNotice:
        return StopNotice(
            run=run.key,
            name=run.name,
            path=run.folder,
            metric=self._metric,
            detector=self._detector.name,
            stop_step=stop.stop_step,
            best_step=stop.best_step,
            best_value=stop.best_score,
            evals=stop.evals,
            facts=dict(run.facts),
        )

    def deliver_pending(self) -> int:
        """Announce every unannounced decision, start the actions of every unacted one (as
        workers allow), and record the actions that finished. Returns how many it announced.
        """
        announced = 0
        for item in self._store.pending():
            if item.stage < ANNOUNCED:
                self._deliver(item.body)
                self._store.mark_delivered(item.seq, ANNOUNCED)
                announced += 1
            if not self._actions.start(item.seq, item.body):
                break  # every worker busy: the rest wait, in decision order
        for seq in self._actions.finished():
            self._store.mark_delivered(seq, ACTED)
        return announced


def watch(
    watcher: Watcher,
    discover: Callable[[], Iterable[Run]],
    *,
    interval: float,
    once: bool,
    stopping: Callable[[], bool],
    sleep: Callable[[float], None] = time.sleep,
    idle: Callable[[], bool] = lambda: True,
) -> None:
    """Poll ``discover()``'s runs every ``interval`` seconds until ``stopping()`` (or once).

    ``discover`` is called at every poll, so runs that appear are picked up (``WCH-1``).
    ``stopping`` is checked between runs' polls and while sleeping, so a SIGTERM ends the
    loop after the transaction in flight (``WCH-7``). While it sleeps it records finished
    actions and starts waiting ones; with ``once`` it waits until ``idle()`` (no action
    running) before it returns.
    """
    while not stopping():
        watcher.poll(run for run in discover() if not stopping())
        deadline = time.monotonic() + interval
        while not stopping() and (once or time.monotonic() < deadline):
            watcher.deliver_pending()
            if once and idle():
                watcher.deliver_pending()
                return
            sleep(min(0.05, max(0.0, deadline - time.monotonic())) if not once else 0.02)
