"""The adapters' shared core: one metric of a framework's result dicts, fed to a Monitor.

Pure and framework-free: no Ray, no transformers, no torch. The Ray Tune and Hugging Face
adapters both keep all their per-run state in one :class:`~evalstop.live.monitor.Monitor` behind a
:class:`MetricFeed`, so the k-decline rule, the stop latch and the best checkpoint come from
``evalstop.live.monitor`` alone (spec ``ADP-1``).
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Mapping
from typing import Any, SupportsFloat, SupportsIndex

import attrs

from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.errors import EvalStopError
from evalstop.live.direction import ModeChoice
from evalstop.live.monitor import JobKey, Mode, Monitor, MonitorVerdict, Reason, Stop

__all__ = [
    "BestCheckpoint",
    "FeedViews",
    "MetricFeed",
    "MissingMetricError",
    "as_step",
    "check_k",
    "check_mapping",
    "check_name",
    "check_path",
    "optional_class",
]


@attrs.frozen(slots=True)
class BestCheckpoint:
    """The checkpoint to keep for one run: its step and its score (spec ``ADP-4``).

    Attributes:
        step: the step of the best finite score so far (strictly better replaces it, so a tie
            keeps the earlier step; up to and including the stop once the run is stopped).
        score: that score, in the caller's units (not negated in ``min`` mode).
    """

    step: int
    score: float


def _as_score(metric: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, SupportsFloat):
        raise TypeError(f"metric {metric!r} must be a number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float (spec ADP-14)
        raise ValueError(f"metric {metric!r} is too large for a float") from None


def as_step(name: str, value: object) -> int:
    """``value`` as a non-negative step: an integer (numpy integers too), never a bool."""
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise TypeError(f"step {name!r} must be an int, got {type(value).__name__}")
    step = int(value)
    if step < 0:
        raise ValueError(f"step {name!r} must be >= 0, got {step}")
    return step


def check_name(what: str, value: object) -> str:
    """``value`` if it is a non-empty ``str`` (a metric, a result key), else TypeError or
    ValueError naming ``what`` (spec ``ADP-14``)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def check_k(k: object) -> int | None:
    """None, or ``k`` as an int >= 1 (numpy integers too, never a bool or a float)."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, SupportsIndex):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    value = operator.index(k)
    if value < 1:
        raise ValueError(f"k must be >= 1, got {value}")
    return value


def check_path(what: str, value: object) -> str | None:
    """None, or ``value`` (a ``str`` or ``os.PathLike[str]``) as a non-empty str path without
    a NUL byte; bytes paths are refused (the path is saved in JSON state)."""
    if value is None:
        return None
    path = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(path, str):
        raise TypeError(f"{what} must be a str or os.PathLike[str], got {type(value).__name__}")
    if not path or "\0" in path:
        raise ValueError(f"{what} must be a non-empty path without NUL bytes")
    return path


def check_mapping(what: str, value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping (a result or metrics dict), else TypeError."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a mapping, got {type(value).__name__}")
    return value


def _lookup(metrics: Mapping[str, Any], key: str) -> object:
    """``metrics[key]``, or the value at the ``/``-separated path ``key`` in nested mappings."""
    if key in metrics:
        return metrics[key]
    node: object = metrics
    for part in key.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


class MissingMetricError(EvalStopError, KeyError):
    """``strict=True`` and a result without the metric (a misspelt name): as Lightning's
    ``EarlyStopping(strict=True)``, training stops with this error instead of running on."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MetricFeed:
    """One metric of a framework's result dicts, fed to a :class:`~evalstop.live.monitor.Monitor`.

    Args:
        metric: the key of the eval score in each result dict (a ``/``-separated path such as
            ``"eval/score"`` also finds it in nested dicts).
        mode: ``"max"`` when higher scores are better, ``"min"`` when lower are, ``"auto"``
            (default) for the direction of ``metric``'s name (spec ``MON-13``).
        k: EvalStop's ``k``: stop at the k-th consecutive decline (``DeclineDetector(k)``,
            the paper's rule). Give ``k`` or ``detector``, not both; with neither the feed
            uses the monitor's default,
            :func:`~evalstop.core.registry.default_detector` (``ADP-1``, ``SIG-11``).
        detector: any :class:`~evalstop.core.detectors.Detector`.
        aliases: further keys tried, in order, when ``metric`` is absent (the Hugging Face
            adapter tries ``eval_<metric>``).
        strict: a result without the metric raises :class:`MissingMetricError` naming the
            keys it has (Lightning's ``strict``), instead of being no evaluation (``ADP-15``).
        check_finite: a NaN or infinite value stops the run at once, keeping the best
            checkpoint so far (Lightning's ``check_finite``), instead of being skipped.

    Every method is O(1) in the number of results. The rule's state is the monitor's alone;
    the feed also remembers each run's last verdict, for :meth:`verdict`.
    """

    __slots__ = ("_check_finite", "_forced", "_keys", "_last", "_monitor", "_strict")

    def __init__(
        self,
        metric: str,
        mode: ModeChoice = "auto",
        k: int | None = None,
        detector: Detector[Any] | None = None,
        *,
        aliases: tuple[str, ...] = (),
        strict: bool = False,
        check_finite: bool = False,
    ) -> None:
        check_name("metric", metric)
        for name, flag in (("strict", strict), ("check_finite", check_finite)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
        k = check_k(k)
        if k is not None and detector is not None:
            raise ValueError("give k or detector, not both")
        if not isinstance(aliases, tuple):
            raise TypeError(f"aliases must be a tuple, got {type(aliases).__name__}")
        for alias in aliases:
            check_name("an alias", alias)
        if k is not None:
            detector = DeclineDetector(k)
        self._monitor = Monitor(detector, mode, metric=metric)
        self._keys = (metric, *(alias for alias in aliases if alias != metric))
        self._last: dict[JobKey, MonitorVerdict] = {}
        self._strict, self._check_finite = strict, check_finite
        self._forced: dict[JobKey, Stop] = {}

    @property
    def metric(self) -> str:
        """The metric's key."""
        return self._keys[0]

    @property
    def mode(self) -> Mode:
        """``"max"`` or ``"min"``."""
        return self._monitor.mode

    @property
    def strict(self) -> bool:
        """Whether a result without the metric raises."""
        return self._strict

    @property
    def check_finite(self) -> bool:
        """Whether a non-finite value stops the run."""
        return self._check_finite

    @property
    def monitor(self) -> Monitor:
        """The monitor that holds every run's state (``to_json`` saves it, spec ``MON-11``)."""
        return self._monitor

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the monitor by one saved with ``monitor.to_dict()`` (spec ``MON-11``).

        A built-in detector is rebuilt from the saved parameters; a saved custom detector must
        be this feed's detector (same name), else ``ValueError``.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"not a saved evalstop monitor: got {type(data).__name__}")
        saved = data.get("detector")
        custom = isinstance(saved, Mapping) and saved.get("type") is None
        self._monitor = Monitor.from_dict(data, self._monitor.detector if custom else None)
        self._last.clear()
        self._forced.clear()

    def forget(self, run: JobKey) -> bool:
        """Drop ``run``'s state (``MON-8``): observed again, it starts afresh."""
        self._last.pop(run, None)
        forced = self._forced.pop(run, None) is not None
        return self._monitor.forget(run) or forced

    def find(self, metrics: Mapping[str, Any]) -> float | None:
        """The metric's value in ``metrics`` as a float, or None when it is absent or None.

        Raises:
            TypeError: ``metrics`` is not a mapping, or the value is not a number (a bool is
                not a number here).
        """
        check_mapping("metrics", metrics)
        for key in self._keys:
            value = _lookup(metrics, key)
            if value is not None:
                return _as_score(key, value)
        return None

    def feed(self, run: JobKey, step: int, metrics: Mapping[str, Any]) -> MonitorVerdict | None:
        """Observe the metric of one result of ``run`` at ``step`` (spec ``ADP-2``, ``ADP-3``).

        A result without the metric is not an evaluation: it returns None and changes nothing.
        Otherwise the value goes to :meth:`Monitor.observe` as it is, so a NaN or infinite
        value is skipped by the rule (``MON-5``), a stale step is ignored (``MON-6``) and a
        stopped run stays stopped (``MON-7``). With ``strict`` a result without the metric
        raises; with ``check_finite`` a non-finite value stops the run (``ADP-15``).

        Raises:
            MissingMetricError: ``strict`` and the metric is absent from ``metrics``.
        """
        value = self.find(metrics)
        if value is None:
            if self._strict:
                raise MissingMetricError(self._missing(metrics))
            return None
        forced = self._forced.get(run)
        if forced is not None:
            verdict: MonitorVerdict = attrs.evolve(forced, step=step, reason=Reason.ALREADY_STOPPED)
        elif self._check_finite and not math.isfinite(value) and not self.stopped(run):
            verdict = self._stop_non_finite(run, as_step("step", step))
        else:
            verdict = self._monitor.observe(run, step, value)
        self._last[run] = verdict
        return verdict

    def _missing(self, metrics: Mapping[str, Any]) -> str:
        keys = sorted(str(key) for key in metrics)
        shown = ", ".join(repr(key[:60]) for key in keys[:20]) + (", ..." if len(keys) > 20 else "")
        return (
            f"strict: the metric {self.metric[:80]!r} is not in the result (it has: "
            f"{shown or 'nothing'}); check its name, or pass strict=False"
        )

    def _stop_non_finite(self, run: JobKey, step: int) -> Stop:
        """``check_finite``: the run stops at this step, keeping the best checkpoint so far."""
        now = self._monitor.verdict(run)
        best_step = None if now is None else now.best_step
        best_score = None if now is None else now.best_score
        evals = 0 if now is None else now.evals
        stop = Stop(run, step, Reason.NON_FINITE, evals, step, best_step, best_score)
        self._forced[run] = stop
        return stop

    def verdict(self, run: JobKey) -> MonitorVerdict | None:
        """The verdict of ``run``'s last observation through this feed, or None.

        None for a run never observed, forgotten, or not observed since :meth:`restore`.
        """
        return self._last.get(run)

    def _now(self, run: JobKey) -> MonitorVerdict | None:
        """The run's current state as a verdict, read from the monitor; None if unknown.

        Changes no state (:meth:`evalstop.live.monitor.Monitor.verdict`, ``MON-12``).
        """
        forced = self._forced.get(run)
        return forced if forced is not None else self._monitor.verdict(run)

    def best(self, run: JobKey) -> BestCheckpoint | None:
        """The checkpoint to keep for ``run``, or None before its first finite score."""
        verdict = self._now(run)
        if verdict is None or verdict.best_step is None or verdict.best_score is None:
            return None
        return BestCheckpoint(verdict.best_step, verdict.best_score)

    def stopped(self, run: JobKey) -> bool:
        """True once the rule has fired for ``run`` (it latches)."""
        return isinstance(self._now(run), Stop)

    def stop_step(self, run: JobKey) -> int | None:
        """The step at which the rule fired for ``run``, or None while it runs."""
        verdict = self._now(run)
        return verdict.stop_step if isinstance(verdict, Stop) else None


class FeedViews:
    """The read-only properties of a callback that watches one run through a
    :class:`MetricFeed` held as ``self._feed``, under the run key ``0`` (the Lightning and
    Hugging Face callbacks)."""

    __slots__ = ()
    _feed: MetricFeed

    @property
    def mode(self) -> Mode:
        """``"max"`` or ``"min"``."""
        return self._feed.mode

    @property
    def verdict(self) -> MonitorVerdict | None:
        """The verdict of the last evaluation with the metric, or None before one."""
        return self._feed.verdict(0)

    @property
    def stopped(self) -> bool:
        """True once the rule has fired (training was asked to stop)."""
        return self._feed.stopped(0)

    @property
    def stop_step(self) -> int | None:
        """The global step at which the rule fired, or None."""
        return self._feed.stop_step(0)

    @property
    def best(self) -> BestCheckpoint | None:
        """The step and score of the checkpoint to keep (spec ``ADP-4``), or None."""
        return self._feed.best(0)


def optional_class(module: str, name: str, extra: str) -> type[Any]:
    """``module.name`` if the optional library imports, else a stand-in that cannot be built.

    The adapter modules import without their library (``import evalstop`` never imports
    them, and documentation tools can read them); building an adapter without its library
    raises ``ImportError`` naming the extra to install (spec ``ADP-9``).
    """
    import importlib

    try:
        found: type[Any] = getattr(importlib.import_module(module), name)
    except ImportError as error:
        reason = f"{error}"
    else:
        return found

    doc = f"Stand-in for {module}.{name}, which did not import: pip install 'evalstop[{extra}]'."

    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise ImportError(
            f"{type(self).__name__} needs {module}.{name}, which did not import ({reason}): "
            f"pip install 'evalstop[{extra}]'"
        )

    return type(name, (), {"__init__": refuse, "__module__": __name__, "__doc__": doc})
