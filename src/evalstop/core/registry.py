"""The one registry of names: base policies, detectors, and systems built from them.

One grammar everywhere (simulator, CLI, replay, monitor state; spec ``SYS-1``):

- a **detector** is ``evalstop`` (k consecutive declines), ``noise-aware`` (a drop of the
  smoothed score beyond the run's own noise), ``lossplateau``, ``never``, or
  ``stopat`` / ``stopat-<fraction>`` (e.g. ``stopat-0.65``; bare ``stopat`` takes the
  ``fraction`` argument);
- a **system** is a base policy name (``fifo``, ``sjf-est``, ``srtf-est``, ``loss-aware``,
  ``las``, ``fair-share``), optionally prefixed by a detector and ``+``: ``evalstop+srtf-est``
  wraps the base with :func:`~evalstop.core.wrapper.evalstop`.

An unknown name raises :class:`~evalstop.core.errors.UnknownNameError` (a ``KeyError`` and a
``ValueError``) whose message lists the choices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from evalstop.core.bocpd import BocpdDetector
from evalstop.core.detectors import (
    DeclineDetector,
    Detector,
    LossPlateau,
    Never,
    StopAtProgress,
    Watch,
)
from evalstop.core.divergence import DivergenceDetector
from evalstop.core.errors import UnknownNameError
from evalstop.core.ewma import EwmaDetector
from evalstop.core.folds import DeclineFold, decline_folder
from evalstop.core.kl_budget import KlBudgetDetector
from evalstop.core.learned import LearnedStopDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.noise_fold import NoiseFold, noise_folder
from evalstop.core.policies import (
    BASE_POLICIES,
    BasePolicy,
)
from evalstop.core.policy import Policy
from evalstop.core.wrapper import EvalStop, evalstop

__all__ = [
    "DEFAULT_DETECTOR",
    "DETECTORS",
    "DETECTOR_NAMES",
    "DETECTOR_TYPES",
    "DEV_PICK",
    "DEV_PICK_MEETS_GOAL",
    "KNOBS",
    "LIVE_DETECTORS",
    "POLICY_NAMES",
    "DetectorRow",
    "InPlace",
    "alone",
    "base_of",
    "base_policy",
    "default_detector",
    "in_place",
    "library_only",
    "make_detector",
    "make_policy",
    "never_fires",
]


@attrs.frozen
class InPlace:
    """The in-place fold of a built-in rule (spec ``DET-12``): a watch as mutable fields.

    Attributes:
        kind: the class of the mutable state, built from a watch (``DeclineFold(watch)``,
            ``NoiseFold(watch)``); it has the watch's ``evals``, ``best_step``, ``best_score``
            and ``fired_step`` as fields and the rule's state as ``rule``.
        fold: ``fold(state, step, score)`` folds a report into that state in place, as
            ``observe`` folds any view with that step and score; True when ``score`` is finite.
    """

    kind: type[Any]
    fold: Callable[[Any, int, float], bool]

    @staticmethod
    def watch(state: Any) -> Watch[Any]:
        """The watch that a state of :attr:`kind` holds, as an immutable value."""
        return Watch(state.rule, state.evals, state.best_step, state.best_score, state.fired_step)


def _make_decline(k: int, fraction: float, **knobs: Any) -> Detector[Any]:
    return DeclineDetector(k, **knobs)


def _make_stopat(k: int, fraction: float, **knobs: Any) -> Detector[Any]:
    return StopAtProgress(fraction)


def _by_class(kind: type[Any]) -> Callable[..., Detector[Any]]:
    def make(k: int, fraction: float, **knobs: Any) -> Detector[Any]:
        made: Detector[Any] = kind(**knobs)
        return made

    return make


@attrs.frozen
class DetectorRow:
    """One built-in detector: everything the package says about it is derived from its row.

    Attributes:
        name: its name in the grammar (``evalstop``, ``noise-aware``, ...).
        kind: its class (a saved monitor state names it, ``MON-11``).
        make: ``make(k, fraction, **knobs)`` builds it (``make_detector``).
        knobs: the early-stopping knobs it takes (``make_detector``'s ``knobs``).
        live: whether the monitor and ``evalstop watch`` offer it (a rule that reads only what
            a live run reports: not ``stopat``, which needs the run's planned length).
        fold: its in-place fold, built from the detector, or None (the generic ``observe``).
    """

    name: str
    kind: type[Any]
    make: Callable[..., Detector[Any]]
    knobs: frozenset[str] = frozenset()
    live: bool = True
    fold: Callable[[Any], InPlace] | None = None


DETECTORS: tuple[DetectorRow, ...] = (
    DetectorRow("bocpd", BocpdDetector, _by_class(BocpdDetector)),
    DetectorRow("divergence", DivergenceDetector, _by_class(DivergenceDetector)),
    DetectorRow(
        "evalstop",
        DeclineDetector,
        _make_decline,
        frozenset({"min_delta", "warmup_steps"}),
        fold=lambda detector: InPlace(DeclineFold, decline_folder(detector)),
    ),
    DetectorRow("ewma", EwmaDetector, _by_class(EwmaDetector)),
    DetectorRow("kl-budget", KlBudgetDetector, _by_class(KlBudgetDetector)),
    DetectorRow("learned", LearnedStopDetector, _by_class(LearnedStopDetector)),
    DetectorRow(
        "lossplateau", LossPlateau, _by_class(LossPlateau), frozenset({"warmup_steps", "baseline"})
    ),
    DetectorRow("never", Never, _by_class(Never)),
    DetectorRow(
        "noise-aware",
        NoiseAwareDetector,
        _by_class(NoiseAwareDetector),
        frozenset({"baseline", "min_delta", "warmup_evals", "warmup_steps"}),
        fold=lambda detector: InPlace(NoiseFold, noise_folder(detector)),
    ),
    DetectorRow("stopat", StopAtProgress, _make_stopat, live=False),
)
"""The built-in detectors, one row each, in name order (to add one, add its row:
CONTRIBUTING.md, "How to add a detector")."""

DEV_PICK = "divergence"
"""The detector the ``SIG-9`` rule picks on the gym's dev split (``docs/scripts/tune_signals.py``,
since issue 26's fourth round ``docs/scripts/tune_default.py`` on 3,000 dev runs, each with its
committed ``.out``): the candidate for :data:`DEFAULT_DETECTOR`, which ``SIG-11``'s guard
admits or refuses."""

DEV_PICK_MEETS_GOAL = False
"""Whether :data:`DEV_PICK` at its defaults meets issue 26's goal for the default on the gym's
test split (``SIG-11``, ``SCB-10``), as ``docs/gym-track.md`` measured it; the page's generator
refuses to write a page that disagrees."""

DEFAULT_DETECTOR = "noise-aware"
"""The one default detector of every entry point (``SIG-11``): ``Monitor()``, and through it the
adapters, ``evalstop replay`` and ``evalstop watch``; the scoreboard compares every other
detector with it (``SCB-9``). It is :data:`DEV_PICK` only when the pick passes the guard on the
shipped corpus and the supervised curves and meets issue 26's goal on the gym's test split
(:data:`DEV_PICK_MEETS_GOAL`); otherwise ``noise-aware`` stays (``docs/gym-track.md``)."""

DETECTOR_NAMES: tuple[str, ...] = tuple(row.name for row in DETECTORS)
"""Detector names; ``stopat`` also takes a fraction suffix, ``stopat-0.65``."""

LIVE_DETECTORS: tuple[str, ...] = tuple(row.name for row in DETECTORS if row.live)
"""The names the monitor's command line offers (``evalstop watch``)."""

KNOBS: tuple[str, ...] = tuple(sorted(frozenset().union(*(row.knobs for row in DETECTORS))))
"""The early-stopping knobs ``make_detector`` passes to the detectors that take them."""

POLICY_NAMES: tuple[str, ...] = tuple(sorted(BASE_POLICIES))
"""Base policy names."""

DETECTOR_TYPES: Mapping[str, type[Any]] = MappingProxyType(
    {row.kind.__name__: row.kind for row in DETECTORS}
)
"""Built-in detector classes by class name: what a saved monitor state may name."""

_ROWS: Mapping[str, DetectorRow] = MappingProxyType({row.name: row for row in DETECTORS})
_FOLDS: Mapping[type[Any], Callable[[Any], InPlace]] = MappingProxyType(
    {row.kind: row.fold for row in DETECTORS if row.fold is not None}
)


def default_detector() -> Detector[Any]:
    """A new :data:`DEFAULT_DETECTOR` at its defaults: what every entry point watches with when
    it is given no detector (``SIG-11``; the one place that says which)."""
    return make_detector(DEFAULT_DETECTOR)


def in_place(detector: Detector[Any]) -> InPlace | None:
    """The in-place fold that applies to ``detector``, or None for the generic ``observe``
    (spec ``DET-12``): the one place that says which fold applies to which detector.

    A built-in rule of the table's class itself has its row's fold; a subclass (which may
    change ``update`` or ``fired``) and any other detector have none."""
    fold = _FOLDS.get(type(detector))
    return None if fold is None else fold(detector)


def never_fires(detector: Detector[Any]) -> bool:
    """Whether ``detector`` is the built-in :class:`~evalstop.core.detectors.Never` (not a
    subclass): it never fires, so a fold over a job's reports can be skipped (``RGT-4``)."""
    return type(detector) is Never


def base_of(policy: Policy) -> Policy:
    """The base policy ``policy`` runs: the base of :class:`~evalstop.core.wrapper.EvalStop`
    itself (not a subclass, which may decide otherwise), else ``policy`` (``ENG-19``)."""
    return policy.base if type(policy) is EvalStop else policy


def alone(detectors: tuple[Detector[Any], ...]) -> InPlace | None:
    """:func:`in_place` of the only detector of ``detectors``; None for none or several: the
    one test of "a built-in rule alone" (``ENG-17``, ``ENG-19``)."""
    return in_place(detectors[0]) if len(detectors) == 1 else None


_OWN_BASES = tuple(BASE_POLICIES.values())  # the built-in bases, one list


def library_only(policy: Policy) -> bool:
    """Whether a run of ``policy`` executes no code but the library's (``ENG-19``): one of the
    built-in bases itself (the five priority bases and fair share), alone or wrapped once by
    :class:`EvalStop`, with no detector or one built-in rule alone that folds in place
    (:func:`alone`: the decline rule, the noise-aware rule). The engine asks this; it names no
    policy itself."""
    base = base_of(policy)
    if not any(base is own for own in _OWN_BASES):
        return False
    detectors = policy.detectors
    return not detectors or alone(detectors) is not None


def base_policy(name: str) -> BasePolicy:
    """The base policy called ``name``; :class:`UnknownNameError` naming the choices."""
    try:
        return BASE_POLICIES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown policy {name!r}; choose one of: {', '.join(POLICY_NAMES)}"
        ) from None


def make_detector(
    name: str, *, k: int = 2, fraction: float = 0.65, **knobs: float | None
) -> Detector[Any]:
    """The detector called ``name`` (see the module docstring), built by its row.

    ``knobs`` (``min_delta``, ``warmup_evals``, ``warmup_steps``, ``baseline``) set the
    parameters of the detectors that take them (a row's ``knobs``: all four for
    ``noise-aware``; ``evalstop`` ``min_delta`` (``DET-1``) and ``warmup_steps``,
    ``lossplateau`` ``warmup_steps`` and ``baseline`` (``DET-11``)); any other detector
    refuses them with a ``ValueError``. ``k`` goes to ``evalstop``, ``fraction`` to ``stopat``.
    Raises :class:`UnknownNameError` for an unknown name and ``ValueError`` for a bad
    parameter (``k < 1``, a fraction outside (0, 1], a bad knob).
    """
    given = {key: value for key, value in knobs.items() if value is not None}
    unknown = sorted(set(given) - set(KNOBS))
    if unknown:
        raise ValueError(f"unknown detector knob(s): {', '.join(unknown)}")
    row = _ROWS.get(name)
    if row is None and name.startswith("stopat-"):
        try:
            fraction = float(name.removeprefix("stopat-"))
        except ValueError:
            raise ValueError(f"bad progress fraction in {name!r}; write e.g. stopat-0.65") from None
        row = _ROWS["stopat"]
    if row is None:
        raise UnknownNameError(
            f"unknown detector {name!r}; choose one of: {', '.join(DETECTOR_NAMES)} "
            "(stopat also as stopat-<fraction>)"
        )
    if not set(given) <= row.knobs:
        options = ", ".join("--" + key.replace("_", "-") for key in sorted(given))
        takes = ", ".join(
            f"{other.name} takes " + " and ".join(_option(knob) for knob in sorted(other.knobs))
            for other in DETECTORS
            if other.knobs
        )
        raise ValueError(f"{options}: {row.name} does not take them ({takes})")
    return row.make(k, fraction, **given)


def _option(knob: str) -> str:
    return "--" + knob.replace("_", "-")


def make_policy(name: str, *, k: int = 2) -> Policy:
    """The system called ``name`` (module docstring); :class:`UnknownNameError` if unknown."""
    detector_name, plus, base_name = name.rpartition("+")
    if base_name not in BASE_POLICIES:
        raise UnknownNameError(
            f"unknown policy {base_name!r}; choose a base ({', '.join(POLICY_NAMES)}), "
            "optionally prefixed by a detector and '+', e.g. evalstop+srtf-est"
        )
    base = BASE_POLICIES[base_name]
    if not plus:
        return base
    return evalstop(base, make_detector(detector_name, k=k))
