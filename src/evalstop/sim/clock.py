"""The absolute clock of world v3: run lengths, turn steps and rise scales (spec ``CRV-8``,
``CRV-9``).

A run's curves are functions of its own optimisation steps, drawn independently of how many
steps it will take: its planned length is its user's choice (``WRK-4``, ``WRK-5``). Two
scales set a run's curves in absolute steps:

- its *rise scale*: the rise of a run of an independent length ``N'`` drawn from its kind's
  step law (the same law as its own length, ``WRK-4``), or in a world whose rise follows the
  plan its planned steps (from the estimate, never the true length), so a run twice as long is
  not the same curve stretched (``CRV-8``); the world's stretch on it is set from its plateau
  share (:func:`plateau_stretch`);
- its *turn step* (RLHF): ``T = c_h p N'``, ``p ~ U(turn_range)`` and ``N'`` another
  independent length, the v2 turn of an independent run; it hacks when ``T`` falls before
  its last step. ``c_h`` is set so that ``P(T < N) = h``, the workload's hacking share, over
  the step law: the ``1 - h`` quantile of ``log N - log (p N')`` (``CRV-9``). Longer runs
  therefore hack more often (the world's stated label/length link, printed by the audit).

The laws' quantiles come from fixed reference samples (:data:`REFERENCE_SIZE` draws from the
seed :data:`REFERENCE_SEED`), so every number here is a deterministic function of the world
and the hacking share, the same in every process.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from evalstop.core.model import JobKind
from evalstop.sim.shapes import rise

__all__ = [
    "ESTIMATE_LOG_SD",
    "ESTIMATE_MEDIAN",
    "LATE_SHARE",
    "LONG_EXPONENT",
    "PLATEAU_GAIN",
    "REFERENCE_SEED",
    "REFERENCE_SIZE",
    "SECONDS_PER_STEP",
    "SHORT_EXPONENT",
    "SHORT_PROBABILITY",
    "conditional_turn_draw",
    "hacking_probability",
    "length_quantile",
    "plateau_stretch",
    "rise_scale",
    "rlhf_rise_base",
    "turn_scale",
    "turn_step",
]

FloatArray = npt.NDArray[np.float64]

SECONDS_PER_STEP: Mapping[JobKind, int] = {JobKind.LORA: 2, JobKind.DPO: 6, JobKind.RLHF: 20}
"""Seconds per optimisation step (RLHF steps include rollout generation); only sets step
numbers and the evaluation interval in steps."""

SHORT_PROBABILITY = 0.8
"""Gavel's duration law (``WRK-4``): ``60 * 10^U(1.5, 3)`` s with this probability..."""
SHORT_EXPONENT = (1.5, 3.0)
"""...the short jobs' exponent range..."""
LONG_EXPONENT = (3.0, 4.0)
"""...and the long jobs' (``60 * 10^U(3, 4)`` s otherwise)."""

LATE_SHARE = 0.4
"""A healthy run *plateaus* when, over the last 40% of its steps, it gains less than
:data:`PLATEAU_GAIN` of its gain (the calibration's statistic, ``docs/scripts/calibration.py``,
which reads these two numbers from here: "no visible progress in the last part of the run", set
before looking at the curves)."""

PLATEAU_GAIN = 0.1
"""See :data:`LATE_SHARE`."""

ESTIMATE_MEDIAN = 1.2
"""A run's estimate is its true duration times ``ESTIMATE_MEDIAN exp(ESTIMATE_LOG_SD z)``,
``z ~ N(0, 1)`` (``WRK-5``: users over-estimate run times and are often far off; Tsafrir,
Etsion & Feitelson 2007)..."""
ESTIMATE_LOG_SD = 0.5
"""...with this log standard deviation."""

REFERENCE_SEED = 27
"""The seed of the reference samples (the issue that introduced them; not tuned)."""
REFERENCE_SIZE = 1 << 16
"""Draws per reference sample: the hacking share they calibrate is off by about
``sqrt(h (1 - h) / 65536) < 0.002``."""

_KIND_INDEX = {JobKind.RLHF: 0, JobKind.DPO: 1, JobKind.LORA: 2}


def _steps_law(rng: np.random.Generator, kind: JobKind, n: int) -> FloatArray:
    """``n`` run lengths in steps from the workload's law (``WRK-4``), as ``generate`` draws
    them: Gavel's duration, rounded to whole seconds, then whole steps (at least one)."""
    is_long = rng.random(n) >= SHORT_PROBABILITY
    exponent = np.where(
        is_long, rng.uniform(*LONG_EXPONENT, size=n), rng.uniform(*SHORT_EXPONENT, size=n)
    )
    duration = np.maximum(np.rint(60.0 * 10.0**exponent), 1.0)
    steps: FloatArray = np.maximum(1.0, np.floor(duration / SECONDS_PER_STEP[kind]))
    return steps


@functools.cache
def _reference(kind: JobKind, stream: int) -> FloatArray:
    """A sorted reference sample of ``kind``'s step law (stream 0, 1, 2: independent)."""
    seq = np.random.SeedSequence([REFERENCE_SEED, _KIND_INDEX[kind], stream])
    sample = np.sort(_steps_law(np.random.default_rng(seq), kind, REFERENCE_SIZE))
    sample.flags.writeable = False
    return sample


_PROBS = (np.arange(REFERENCE_SIZE, dtype=np.float64) + 0.5) / REFERENCE_SIZE


@functools.cache
def _log_reference(kind: JobKind) -> FloatArray:
    logs = np.log(_reference(kind, 0))
    logs.flags.writeable = False
    return logs


def _quantile(logs: FloatArray, u: float) -> float:
    """``np.interp(u, _PROBS, logs)`` in O(1): the probabilities are a uniform grid."""
    position = min(max(u * REFERENCE_SIZE - 0.5, 0.0), REFERENCE_SIZE - 1.0)
    i = min(int(position), REFERENCE_SIZE - 2)
    low, high = float(logs[i]), float(logs[i + 1])
    return low + (position - i) * (high - low)


def length_quantile(kind: JobKind, u: float) -> float:
    """The ``u`` quantile of ``kind``'s step law (log-linear between reference draws)."""
    return math.exp(_quantile(_log_reference(kind), u))


@functools.cache
def _turn_reference(turn_range: tuple[float, float]) -> FloatArray:
    """Sorted ``log (p N')`` over the reference: the turn law before its scale ``c_h``."""
    lengths = _reference(JobKind.RLHF, 1)
    seq = np.random.SeedSequence([REFERENCE_SEED, 9, 1])
    p = np.random.default_rng(seq).uniform(*turn_range, size=REFERENCE_SIZE)
    # pair a permuted copy of the lengths with p, so that p and N' are independent
    perm = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 2])).permutation(
        REFERENCE_SIZE
    )
    out = np.sort(np.log(p * lengths[perm]))
    out.flags.writeable = False
    return out


@functools.cache
def turn_scale(turn_range: tuple[float, float], hacking_share: float) -> float:
    """``c_h``: the scale of the turn law at which ``P(T < N) = hacking_share`` (``CRV-9``).

    The ``1 - h`` quantile of ``log N - log (p N')`` over independent reference draws of the
    RLHF step law (``N``, ``N'``) and of ``p ~ U(turn_range)``; ``inf`` when ``h = 0``.
    """
    if hacking_share <= 0.0:
        return math.inf
    turns = _turn_reference(turn_range)
    lengths = np.log(_reference(JobKind.RLHF, 2))
    order = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 3])).permutation(
        REFERENCE_SIZE
    )
    margin = lengths - turns[order]
    return float(math.exp(float(np.quantile(margin, 1.0 - min(hacking_share, 1.0)))))


def turn_step(turn_range: tuple[float, float], hacking_share: float, u: float) -> float:
    """The turn step ``T = c_h Q(u)`` of a run whose turn draw is ``u`` in [0, 1) (``CRV-9``):
    ``Q`` the quantile function of ``p N'``; ``inf`` (never turns) when the share is 0."""
    scale = turn_scale(turn_range, hacking_share)
    if math.isinf(scale):
        return math.inf
    return scale * math.exp(_quantile(_turn_reference(turn_range), u))


def hacking_probability(
    turn_range: tuple[float, float], hacking_share: float, total_steps: int
) -> float:
    """``P(T < total_steps)``: the chance that a run of this length hacks (``CRV-9``)."""
    scale = turn_scale(turn_range, hacking_share)
    if math.isinf(scale):
        return 0.0
    logs = _turn_reference(turn_range)
    return float(np.interp(math.log(total_steps / scale), logs, _PROBS, left=0.0, right=1.0))


def conditional_turn_draw(
    turn_range: tuple[float, float],
    hacking_share: float,
    total_steps: int,
    hacking: bool,
    v: float,
) -> float:
    """A turn draw ``u`` given the label (a table record that states it, ``TAB-3``): uniform
    below :func:`hacking_probability` for a hacking run, above it for a healthy one."""
    p = hacking_probability(turn_range, max(hacking_share, 1e-6), total_steps)
    return p * v if hacking else p + (1.0 - p) * v


def rise_scale(kind: JobKind, u: float) -> float:
    """The independent length ``N'`` (steps) of a run's rise scale, from its draw ``u``
    (``CRV-8``): the ``u`` quantile of its kind's step law."""
    return length_quantile(kind, u)


def rlhf_rise_base(on_plan: bool, u: float, planned_steps: float) -> float:
    """``N'``, the steps an RLHF run's rise scale is a multiple of (``CRV-8``): its planned
    steps when its world's rise follows the plan (``on_plan``; its draw ``u`` is then unused,
    drawn all the same, ``CRV-6``), else the ``u`` quantile of the step law.

    Raises:
        ValueError: the rise follows the plan and ``planned_steps`` is not a finite number > 0.
    """
    if not on_plan:
        return rise_scale(JobKind.RLHF, u)
    if not (math.isfinite(planned_steps) and planned_steps > 0):
        raise ValueError(
            f"the rise follows the plan, which needs planned_steps > 0, got {planned_steps}"
        )
    return planned_steps


@functools.cache
def plateau_stretch(
    plateau_share: float,
    turn_range: tuple[float, float],
    rise_peak_range: tuple[float, float],
    hacking_share: float,
    on_plan: bool = False,
) -> float:
    """``a``: the factor on every RLHF rise scale at which a share ``plateau_share`` of the
    healthy RLHF runs of a workload with ``hacking_share`` plateau on their true curves by the
    calibration's rule (:data:`LATE_SHARE`, :data:`PLATEAU_GAIN`; ``CRV-8``).

    Over the healthy reference runs (length ``N``, turn at or past it), a run's rise tops out
    at ``S = a P N'`` (``P ~ U(rise_peak_range)``), ``N'`` an independent length of the step
    law, or with ``on_plan`` its planned steps ``N e`` (``e`` the estimate's factor,
    :data:`ESTIMATE_MEDIAN`, :data:`ESTIMATE_LOG_SD`). It plateaus when ``y(N) - y((1 -
    LATE_SHARE) N) < PLATEAU_GAIN y(N)``, ``y`` its rise from step 0 (``CRV-1``). The share
    falls as ``a`` grows; ``a`` is found by bisection on ``log a`` to 1e-6.
    """
    lengths = _reference(JobKind.RLHF, 2)
    order = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 3])).permutation(
        REFERENCE_SIZE
    )
    healthy = np.log(lengths) - _turn_reference(turn_range)[order] <= math.log(
        turn_scale(turn_range, hacking_share)
    )
    peak = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 4])).uniform(
        *rise_peak_range, size=REFERENCE_SIZE
    )
    if on_plan:
        z = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 6])).standard_normal(
            REFERENCE_SIZE
        )
        base = lengths * ESTIMATE_MEDIAN * np.exp(ESTIMATE_LOG_SD * z)
    else:
        perm = np.random.default_rng(np.random.SeedSequence([REFERENCE_SEED, 9, 5])).permutation(
            REFERENCE_SIZE
        )
        base = _reference(JobKind.RLHF, 0)[perm]
    end, scale = lengths[healthy], (peak * base)[healthy]

    def share(log_a: float) -> float:
        top = math.exp(log_a) * scale
        full = rise(end, top)
        late = rise((1.0 - LATE_SHARE) * end, top)
        return float(np.mean(full - late < PLATEAU_GAIN * full))

    low, high = math.log(1e-6), math.log(1e6)
    while high - low > 1e-6:
        middle = (low + high) / 2
        if share(middle) >= plateau_share:
            low = middle
        else:
            high = middle
    return math.exp(low)
