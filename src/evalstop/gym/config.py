"""The distribution runs are drawn from, and the knobs that fix one parameter for every run.

Each parameter of a run (spec ``GYM-5``) is drawn from its own range, from the run's seed
alone; a knob (``--proxy-samples``, ``--kl-coef``, ``--lr``, ``--steps``, ``--evals``,
``--eval-samples``) replaces the drawn value, so fixing one leaves every other draw of the run
unchanged. The ranges and the source that set each are in ``spec/gym.md`` (``GYM-5``). Pure:
numpy only, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import numpy as np

from evalstop.core.errors import EvalStopError

__all__ = [
    "DENSITIES",
    "DISTRIBUTION",
    "KL_FREE_SHARE",
    "KNOBS",
    "KNOB_LIMITS",
    "V1",
    "V2",
    "ConfigError",
    "Distribution",
    "Overrides",
    "RunConfig",
    "check_overrides",
    "draw_config",
]

KNOBS = ("proxy_samples", "kl_coef", "lr", "steps", "evals", "eval_samples")
"""The parameters a knob can fix (the CLI's ``--proxy-samples`` ... ``--eval-samples``)."""

KNOB_LIMITS: Mapping[str, tuple[float, float]] = {
    "proxy_samples": (2, 100_000),
    "kl_coef": (0.0, 100.0),
    "lr": (1e-6, 1000.0),
    "steps": (1, 100_000),
    "evals": (3, 1000),
    "eval_samples": (1, 100_000),
}
"""Each knob's accepted range, inclusive: what keeps a run finite and its files small."""

DENSITIES = (10, 20, 40)
"""Evaluations per run drawn by the default distribution (the issue's three densities)."""

KL_FREE_SHARE = 0.2
"""Share of runs the default distribution trains with no KL penalty (as most of Gao et al.'s
RL runs)."""

Overrides = Mapping[str, float | int]
"""Knob name -> the value every run uses."""


@attrs.frozen(slots=True)
class Distribution:
    """The ranges a run's parameters are drawn from (spec ``GYM-5``), each ``(low, high)``,
    log-uniform; ``capacity`` and ``evals`` are drawn from their fixed choices.

    Attributes:
        proxy_samples: the proxy's training samples (rounded).
        kl_coef: the KL coefficient of the runs that have a KL penalty.
        lr: the policy-gradient step size.
        steps: optimisation steps (rounded).
        eval_samples: held-out responses an evaluation averages (rounded).
        kl_free_share: the share of runs trained with no KL penalty.
    """

    proxy_samples: tuple[int, int]
    kl_coef: tuple[float, float]
    lr: tuple[float, float]
    steps: tuple[int, int]
    eval_samples: tuple[int, int]
    kl_free_share: float = KL_FREE_SHARE


V1 = Distribution(
    proxy_samples=(20, 2000),
    kl_coef=(0.01, 1.0),
    lr=(0.15, 1.0),
    steps=(300, 3000),
    eval_samples=(4, 256),
)
"""The gym's first distribution (commit 8d03929), kept so the data that chose :data:`V2` can
be regenerated (``docs/scripts/gym_distribution.py``)."""

V2 = attrs.evolve(V1, kl_coef=(0.01, 0.3), steps=(300, 1000), eval_samples=(16, 64))
"""The gym's second distribution (issue 22: healthy runs' eval noise over gain like the real
corpus's): :data:`V1` with fewer eval sample sizes, a capped KL coefficient and fewer steps,
chosen by ``docs/scripts/gym_distribution.py`` on ``V1``'s dev runs (``GYM-5``)."""

DISTRIBUTION = V2
"""The distribution runs are drawn from unless a caller names another."""


class ConfigError(EvalStopError, ValueError):
    """A knob outside its range; the message names the knob."""


@attrs.frozen(slots=True)
class RunConfig:
    """The parameters of one run (spec ``GYM-5``).

    Attributes:
        seed: the run's seed (all of its randomness comes from it).
        proxy_samples: initial-policy samples the proxy is fitted on.
        capacity: the proxy's capacity (1 linear, 2 quadratic in token counts).
        kl_coef: the KL penalty's coefficient.
        lr: the policy-gradient step size.
        steps: optimisation steps.
        evals: checkpoints (evenly spaced from step 0 to the last step).
        eval_samples: held-out responses each evaluation averages gold over.
    """

    seed: int
    proxy_samples: int
    capacity: int
    kl_coef: float
    lr: float
    steps: int
    evals: int
    eval_samples: int

    def checkpoints(self) -> list[int]:
        """The steps of the run's evaluations: ``round(j * steps / (evals - 1))``."""
        return [round(j * self.steps / (self.evals - 1)) for j in range(self.evals)]


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _log_int(rng: np.random.Generator, low: int, high: int) -> int:
    return round(_log_uniform(rng, low, high))


def _is_int_knob(name: str) -> bool:
    return name in ("proxy_samples", "steps", "evals", "eval_samples")


def check_overrides(overrides: Overrides) -> dict[str, float | int]:
    """The knobs, checked: each known, a number, inside ``KNOB_LIMITS``, whole where it counts
    something; and ``evals`` at most ``steps + 1`` when both are fixed.

    Raises:
        ConfigError: the first bad knob, named as on the command line (``--kl-coef``).
    """
    out: dict[str, float | int] = {}
    for name, value in overrides.items():
        flag = "--" + name.replace("_", "-")
        if name not in KNOB_LIMITS:
            raise ConfigError(f"{flag}: not a knob (choose from {', '.join(KNOBS)})")
        low, high = KNOB_LIMITS[name]
        number = float(value)
        if not math.isfinite(number) or not low <= number <= high:
            raise ConfigError(f"{flag} {value}: must be between {low:g} and {high:g}")
        if _is_int_knob(name):
            if number != int(number):
                raise ConfigError(f"{flag} {value}: must be a whole number")
            out[name] = int(number)
        else:
            out[name] = number
    if "evals" in out and "steps" in out and out["evals"] > out["steps"] + 1:
        raise ConfigError(f"--evals {out['evals']}: more than --steps {out['steps']} + 1")
    return out


def draw_config(
    seed: int, overrides: Overrides | None = None, distribution: Distribution = DISTRIBUTION
) -> RunConfig:
    """The run of seed ``seed``: every parameter drawn from ``distribution`` (in a fixed order,
    from the first child of ``SeedSequence(seed)``), then the knobs of ``overrides`` put in
    place of their draws.

    Raises:
        ConfigError: a bad knob (:func:`check_overrides`).
    """
    fixed = check_overrides(overrides or {})
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    d = distribution
    drawn: dict[str, float | int] = {
        "proxy_samples": _log_int(rng, *d.proxy_samples),
        "capacity": int(rng.integers(1, 3)),
        "kl_free": float(rng.random()),
        "kl_coef": _log_uniform(rng, *d.kl_coef),
        "lr": _log_uniform(rng, *d.lr),
        "steps": _log_int(rng, *d.steps),
        "evals": int(rng.choice(DENSITIES)),
        "eval_samples": _log_int(rng, *d.eval_samples),
    }
    if drawn.pop("kl_free") < d.kl_free_share:
        drawn["kl_coef"] = 0.0
    drawn.update(fixed)
    steps = int(drawn["steps"])
    if int(drawn["evals"]) > steps + 1:  # no two checkpoints at one step
        if "evals" in fixed:
            raise ConfigError(
                f"--evals {drawn['evals']}: needs --steps {drawn['evals'] - 1} or more"
            )
        drawn["evals"] = steps + 1
    return RunConfig(
        seed=seed,
        proxy_samples=int(drawn["proxy_samples"]),
        capacity=int(drawn["capacity"]),
        kl_coef=float(drawn["kl_coef"]),
        lr=float(drawn["lr"]),
        steps=steps,
        evals=int(drawn["evals"]),
        eval_samples=int(drawn["eval_samples"]),
    )
