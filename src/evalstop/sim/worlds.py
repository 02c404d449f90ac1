"""The two named simulated worlds (spec ``WLD``): ``paper`` and ``calibrated``.

A :class:`World` holds what differs between them: where RLHF runs turn, how fast a hacking
run collapses, how many healthy runs plateau, how often runs evaluate and the default eval
noise. Everything else (durations, GPUs, estimates, the mix and the hacking share) is the same
workload law (spec ``WRK``).

- ``paper``: the paper's setting, leak-free. Runs turn at ``U(0.25, 0.75)`` of their length,
  hacking runs collapse at Gao et al.'s own speed, healthy runs rise through the end, users
  plan 10 evaluations per RLHF run (the paper evaluates every 10% of a run) and sigma is 0.02.
- ``calibrated``: fitted to the summary statistics of the labelled real RLHF curves of
  ``shared/data/real-traces`` by ``docs/scripts/calibration.py`` (never to a detector's
  result); each number and its statistic are in ``spec/curves.md`` (CRV-7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from evalstop.core.errors import UnknownNameError
from evalstop.sim.validators import check_fraction, check_non_negative, check_positive

__all__ = ["CALIBRATED", "PAPER", "WORLDS", "World", "world_named"]


def _check_range(
    _inst: object, attribute: attrs.Attribute[tuple[float, float]], value: object
) -> None:
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, float | int) for v in value)
        and 0.0 < value[0] <= value[1] < 1.0
    ):
        raise ValueError(
            f"{attribute.name} must be (low, high) with 0 < low <= high < 1, got {value!r}"
        )


@attrs.frozen(slots=True)
class World:
    """The parameters that differ between simulated worlds (spec ``WLD-1``).

    Attributes:
        name: the world's name (``--world``).
        turn_range: an RLHF run turns at ``U(low, high)`` of its length, hacking or not.
        decline_rate: ``kappa``, a hacking run's collapse speed relative to Gao et al.'s.
        plateau_share: the share of healthy RLHF runs that plateau after their turn.
        rlhf_evals: evaluations a user plans over an RLHF run's estimated length (DPO and LoRA
            plan half as many).
        eval_noise: the default eval noise sigma, as a fraction of a run's gain.
    """

    name: str
    turn_range: tuple[float, float] = attrs.field(validator=_check_range)
    decline_rate: float = attrs.field(validator=check_positive)
    plateau_share: float = attrs.field(validator=check_fraction)
    rlhf_evals: int = attrs.field(validator=attrs.validators.ge(1))
    eval_noise: float = attrs.field(validator=check_non_negative)


PAPER: Final = World(
    name="paper",
    turn_range=(0.25, 0.75),
    decline_rate=1.0,
    plateau_share=0.0,
    rlhf_evals=10,
    eval_noise=0.02,
)
"""The paper's setting: turns inside the run with room for a collapse, Gao's collapse speed,
no plateau, an evaluation every 10% of the (estimated) run, sigma 0.02."""

CALIBRATED: Final = World(
    name="calibrated",
    turn_range=(0.11, 0.67),
    decline_rate=2.26,
    plateau_share=0.82,
    rlhf_evals=12,
    eval_noise=0.106,
)
"""Fitted to the real curves the corpus scores (``docs/scripts/calibration.py``, its output
``calibration.out``; CRV-7 lists each statistic): hacking peaks at 0.11 to 0.67 of the run,
half the gain lost 0.511 peak-times after the peak (kappa 2.26, 17 hacking curves), 9 of 11
healthy runs plateau, noise 0.106 of the gain, a median of 10 evaluations per run (12 planned
over an estimate that is 1.2 times the length on median)."""

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
