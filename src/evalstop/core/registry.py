"""The one registry of names: base policies, detectors, and systems built from them.

One grammar everywhere (simulator, CLI, replay, monitor state; spec ``SYS-1``):

- a **detector** is ``evalstop`` (k consecutive declines), ``noise-aware`` (a drop of the
  smoothed score beyond the run's own noise), ``ewma`` (smoothed drop from the best),
  ``divergence`` (the eval level falls while the proxy reward keeps rising), ``kl-budget``
  (past the peak of Gao's law fitted to the KL), ``bocpd`` (a confident change to a declining
  regime), ``lossplateau``, ``never``, or ``stopat`` / ``stopat-<fraction>`` (e.g.
  ``stopat-0.65``; bare ``stopat`` takes the ``fraction`` argument);
- a **system** is a base policy name (``fifo``, ``sjf-est``, ``srtf-est``, ``loss-aware``,
  ``las``, ``fair-share``), optionally prefixed by a detector and ``+``: ``evalstop+srtf-est``
  wraps the base with :func:`~evalstop.core.wrapper.evalstop`.

An unknown name raises :class:`~evalstop.core.errors.UnknownNameError` (a ``KeyError`` and a
``ValueError``) whose message lists the choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from evalstop.core.bocpd import BocpdDetector
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, Never, StopAtProgress
from evalstop.core.divergence import DivergenceDetector
from evalstop.core.errors import UnknownNameError
from evalstop.core.ewma import EwmaDetector
from evalstop.core.kl_budget import KlBudgetDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.policies import BASE_POLICIES, BasePolicy
from evalstop.core.policy import Policy
from evalstop.core.wrapper import evalstop

__all__ = [
    "DEFAULT_DETECTOR",
    "DETECTOR_NAMES",
    "DETECTOR_TYPES",
    "KNOBS",
    "POLICY_NAMES",
    "base_policy",
    "make_detector",
    "make_policy",
]

DETECTOR_NAMES: tuple[str, ...] = (
    "bocpd",
    "divergence",
    "evalstop",
    "ewma",
    "kl-budget",
    "lossplateau",
    "never",
    "noise-aware",
    "stopat",
)
"""Detector names; ``stopat`` also takes a fraction suffix, ``stopat-0.65``."""

DEFAULT_DETECTOR = "divergence"
"""The one default detector the ``SIG-9`` protocol chose (``docs/scripts/tune_signals.py`` on
the gym's dev split): the detector the scoreboard compares every other one with (``SCB-9``)."""

KNOBS: tuple[str, ...] = ("baseline", "min_delta", "warmup_evals", "warmup_steps")
"""The early-stopping knobs ``make_detector`` passes to the noise-aware detector (``NAD-4``)."""

POLICY_NAMES: tuple[str, ...] = tuple(sorted(BASE_POLICIES))
"""Base policy names."""

DETECTOR_TYPES: Mapping[str, type[Any]] = MappingProxyType(
    {
        kind.__name__: kind
        for kind in (
            BocpdDetector,
            DeclineDetector,
            DivergenceDetector,
            EwmaDetector,
            KlBudgetDetector,
            LossPlateau,
            Never,
            NoiseAwareDetector,
            StopAtProgress,
        )
    }
)
"""Built-in detector classes by class name: what a saved monitor state may name."""


_SIGNAL_DETECTORS: Mapping[str, type[Any]] = MappingProxyType(
    {
        "bocpd": BocpdDetector,
        "divergence": DivergenceDetector,
        "ewma": EwmaDetector,
        "kl-budget": KlBudgetDetector,
    }
)
"""The detectors of ``SIG``, each at its defaults (``SIG-8``); they take no knob."""


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
    """The detector called ``name`` (see the module docstring).

    ``knobs`` (``min_delta``, ``warmup_evals``, ``warmup_steps``, ``baseline``) set the
    ``noise-aware`` detector's parameters; ``evalstop`` takes ``min_delta`` (``DET-1``) and
    ``warmup_steps``, ``lossplateau`` ``warmup_steps`` and ``baseline`` (``DET-11``); any
    other knob or detector refuses them with a ``ValueError``. Raises
    :class:`UnknownNameError` for an unknown name and ``ValueError`` for a bad parameter
    (``k < 1``, a fraction outside (0, 1], a bad knob).
    """
    given = {key: value for key, value in knobs.items() if value is not None}
    unknown = sorted(set(given) - set(KNOBS))
    if unknown:
        raise ValueError(f"unknown detector knob(s): {', '.join(unknown)}")
    if name == "noise-aware":
        return NoiseAwareDetector(**given)  # type: ignore[arg-type]
    taken = {"evalstop": {"min_delta", "warmup_steps"}, "lossplateau": {"warmup_steps", "baseline"}}
    if given and set(given) <= taken.get(name, set()):
        if name == "evalstop":
            return DeclineDetector(k, **given)  # type: ignore[arg-type]
        return LossPlateau(**given)  # type: ignore[arg-type]
    if given:
        options = ", ".join("--" + key.replace("_", "-") for key in sorted(given))
        raise ValueError(
            f"{options}: only the noise-aware detector takes these knobs (evalstop takes "
            "--min-delta and --warmup-steps, lossplateau --warmup-steps and --baseline)"
        )
    if name in _SIGNAL_DETECTORS:
        detector: Detector[Any] = _SIGNAL_DETECTORS[name]()
        return detector
    if name == "evalstop":
        return DeclineDetector(k)
    if name == "lossplateau":
        return LossPlateau()
    if name == "never":
        return Never()
    if name == "stopat":
        return StopAtProgress(fraction)
    if name.startswith("stopat-"):
        try:
            value = float(name.removeprefix("stopat-"))
        except ValueError:
            raise ValueError(f"bad progress fraction in {name!r}; write e.g. stopat-0.65") from None
        return StopAtProgress(value)
    raise UnknownNameError(
        f"unknown detector {name!r}; choose one of: {', '.join(DETECTOR_NAMES)} "
        "(stopat also as stopat-<fraction>)"
    )


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
