"""The two named simulated worlds (spec ``WLD``): ``paper`` and ``calibrated``.

A :class:`World` holds what differs between them: the law of the RLHF turn step, how fast a
hacking run collapses, how many healthy runs plateau, how many follow a step learning-rate
schedule, how often runs evaluate, the default eval noise and its spread over runs. Everything
else (durations, GPUs, estimates, the mix and the hacking share) is the same workload law
(spec ``WRK``).

- ``paper``: the paper's setting on the absolute clock (``CRV-8``). The turn is v2's turn
  ``U(0.25, 0.75)`` of an independent run, scaled to the hacking share (``CRV-9``), hacking
  runs collapse at Gao et al.'s own speed, the rise scale is v2's (its plateau share follows
  from it), no step schedules, one noise level for every run, users plan 10 evaluations per
  RLHF run (the paper evaluates every 10% of a run) and sigma is 0.02.
- ``calibrated``: fitted to the summary statistics of the labelled real RLHF curves of
  ``shared/data/real-traces`` by ``docs/scripts/calibration.py`` (never to a detector's
  result); each number and its statistic are in ``spec/curves.md`` (CRV-7). An RLHF run's rise
  is scaled by its planned steps (its user's plan from the estimate), not by an independent
  length (``CRV-8``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

import attrs

from evalstop.core.errors import UnknownNameError
from evalstop.sim.validators import check_fraction, check_non_negative, check_positive

__all__ = ["CALIBRATED", "PAPER", "WORLDS", "World", "world_named"]


def _low_high(value: object, top: float) -> bool:
    """Whether ``value`` is a ``(low, high)`` tuple of finite numbers, ``0 < low <= high < top``."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, float | int) and math.isfinite(v) for v in value)
        and 0.0 < value[0] <= value[1] < top
    )


def _check_range(
    _inst: object, attribute: attrs.Attribute[tuple[float, float]], value: object
) -> None:
    if not _low_high(value, 1.0):
        raise ValueError(
            f"{attribute.name} must be (low, high) with 0 < low <= high < 1, got {value!r}"
        )


def _check_spread(
    _inst: object, attribute: attrs.Attribute[tuple[float, float]], value: object
) -> None:
    if not _low_high(value, math.inf):
        raise ValueError(
            f"{attribute.name} must be (low, high) with 0 < low <= high, got {value!r}"
        )


def _optional_fraction(
    _inst: object, attribute: attrs.Attribute[float | None], value: float | None
) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1] or None, got {value!r}")


def _check_bool(_inst: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{attribute.name} must be True or False, got {value!r}")


@attrs.frozen(slots=True)
class World:
    """The parameters that differ between simulated worlds (spec ``WLD-1``).

    Attributes:
        name: the world's name (``--world``).
        turn_range: the turn law's ``p``: an RLHF run turns at ``c_h p N'`` steps, ``N'`` an
            independent length, ``c_h`` set by the hacking share (``CRV-9``).
        decline_rate: ``kappa``, a hacking run's collapse speed relative to Gao et al.'s.
        plateau_share: the share of healthy RLHF runs (at the default hacking share) whose
            rise tops out before the last 40% of their steps; it sets the rise scale's stretch
            (``CRV-8``); None keeps the stretch at 1 (the share follows from the laws).
        rlhf_evals: evaluations a user plans over an RLHF run's estimated length after its
            step-0 evaluation (``WRK-7``; DPO and LoRA plan half as many).
        eval_noise: the default eval noise sigma, as a fraction of a run's gain (its median
            over runs).
        noise_spread: a run's noise multiplier ``m`` is log-uniform on ``(low, high)``
            (``CRV-11``); ``(1, 1)``: every run has the same signal-to-noise ratio.
        step_share: the share of runs (every kind, whatever the label) that follow a step
            learning-rate schedule (``CRV-12``).
        step_drop_range: where a step schedule drops its rate, ``U(low, high)`` of the
            planned steps.
        step_level_range: the share of its rise a step-schedule run reaches before its drop.
        rise_on_plan: whether an RLHF run's rise scale is its planned steps (its user's plan
            from the estimate) rather than an independent length of the step law (``CRV-8``).
    """

    name: str
    turn_range: tuple[float, float] = attrs.field(validator=_check_range)
    decline_rate: float = attrs.field(validator=check_positive)
    plateau_share: float | None = attrs.field(validator=_optional_fraction)
    rlhf_evals: int = attrs.field(validator=attrs.validators.ge(1))
    eval_noise: float = attrs.field(validator=check_non_negative)
    noise_spread: tuple[float, float] = attrs.field(default=(1.0, 1.0), validator=_check_spread)
    step_share: float = attrs.field(default=0.0, validator=check_fraction)
    step_drop_range: tuple[float, float] = attrs.field(default=(0.5, 0.5), validator=_check_range)
    step_level_range: tuple[float, float] = attrs.field(default=(0.8, 0.8), validator=_check_range)
    rise_on_plan: bool = attrs.field(default=False, validator=_check_bool)


PAPER: Final = World(
    name="paper",
    turn_range=(0.25, 0.75),
    decline_rate=1.0,
    plateau_share=None,
    rlhf_evals=10,
    eval_noise=0.02,
)
"""The paper's setting: v2's turn of an independent run, Gao's collapse speed, v2's rise scale,
no step schedules, one signal-to-noise ratio, an evaluation every 10% of the (estimated) run,
sigma 0.02."""

CALIBRATED: Final = World(
    name="calibrated",
    turn_range=(0.11, 0.67),
    decline_rate=2.26,
    plateau_share=0.82,
    rlhf_evals=10,
    eval_noise=0.106,
    noise_spread=(0.562, 1.779),
    step_share=0.2,
    step_drop_range=(0.43, 0.71),
    step_level_range=(0.77, 0.84),
    rise_on_plan=True,
)
"""Fitted to summary statistics of real curves (``docs/scripts/calibration.py``, its output
``calibration.out``; CRV-7 lists each statistic): hacking peaks at 0.11 to 0.67 of the run,
half the gain lost 0.511 peak-times after the peak (kappa 2.26, 17 hacking curves), 9 of 11
healthy runs plateau (the stretch on an RLHF rise scaled by the run's planned steps, as the
real runs rise across their length, CRV-8), noise 0.106 of the gain (0.562 to 1.779 times
that over the 11 healthy curves), a median of 9 evaluations per run after step 0 (10 planned
over an estimate that is 1.2 times the length on median, 9 x 1.2 rounded down: a run
evaluates at its last step too, so it makes its planned intervals over its length rounded up;
every run also evaluates its initial policy at step 0, as 25 of the 28 real curves do); 2 of
the 10 healthy supervised runs of ``tests/data/healthy-supervised`` document a learning-rate
drop after a plateau (at 0.43 and 0.71 of the run, reaching 0.77 and 0.84 of their gain
before it)."""

WORLDS: Final[Mapping[str, World]] = {world.name: world for world in (PAPER, CALIBRATED)}
"""The named worlds, by name."""


def world_named(name: str) -> World:
    """The world called ``name``; :class:`UnknownNameError` lists the names otherwise."""
    try:
        return WORLDS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown world {name!r}; choose one of: {', '.join(sorted(WORLDS))}"
        ) from None
