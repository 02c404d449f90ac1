"""The noise-aware detector: stop when a run's smoothed eval level has fallen from its peak by
more than the run's own evaluation noise explains (spec ``NAD-1`` to ``NAD-9``).

Every quantity is estimated online from the job's reports, in O(1) state:

- **noise**: the mean absolute second difference of the valid scores,
  ``|y_t - 2 y_(t-1) + y_(t-2)|``, divided by ``sqrt(6) * sqrt(2 / pi)`` (the factor that
  makes it the standard deviation of independent Gaussian noise). Second differences cancel a
  locally linear trend, so a rising or falling curve does not pass for noise;
- **level**: an exponentially weighted mean of the scores whose memory is a fraction
  ``memory`` of the steps elapsed so far (``alpha = 1 - exp(-gap / (memory * step))``). With
  a memory in *steps*, not in evaluations, evaluating twice as often averages twice as many
  reports over the same stretch of training: the rule looks at the same thing whatever the
  evaluation density (``NAD-4``);
- **drop**: the highest level so far minus the current level, against the standard deviation
  of that difference under noise alone, ``sigma * sqrt(w_peak + w_now)`` (``w`` is the sum of
  the squared weights of each level).

The detector fires when the drop exceeds ``z`` such standard deviations, widened while the
noise estimate rests on few differences (``z + (z^3 + z) / (4 nu)``, the first term of the
Student-t quantile's expansion, ``nu`` the number of second differences), and exceeds
``min_delta`` (in the metric's units), once ``warmup_evals`` valid evaluations and
``warmup_steps`` steps have been seen. With ``baseline`` the peak starts at that value, so a
run whose level stays well below it is stopped too (Keras' ``baseline``).

The state stores levels relative to the run's first valid score, so an affine change of the
metric (positive scale, any shift) changes no decision (``NAD-6``), and a NaN report leaves the
state untouched (``NAD-7``). The checkpoint to keep is where a second, shorter-memory level
peaked, not the luckiest report (``keep="level"``, ``NAD-10``). Defaults were chosen in the
simulator only (``docs/scripts/tune_noise_aware.py``); see ``spec/detectors.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.noise_fold import (
    ROUGHNESS_TO_SIGMA,
    SPAN,
    NoiseFold,
    NoiseState,
    noise_folder,
)

__all__ = [
    "KEEP_MEMORY",
    "KEEP_RULES",
    "ROUGHNESS_TO_SIGMA",
    "SPAN",
    "NoiseAwareDetector",
    "NoiseState",
]


def _positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def _count(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an integer >= 0, got {value!r}")


def _optional_finite(
    _inst: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    if value is not None and not (isinstance(value, float | int) and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a finite number or None, got {value!r}")


KEEP_MEMORY = 0.05
"""The default ``keep_memory`` (``NAD-9``)."""

KEEP_RULES: tuple[str, ...] = ("best", "level")
"""``best``: keep the best reported score (``DET-4``); ``level``: the best smoothed level."""


def _keep_rule(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in KEEP_RULES:
        raise ValueError(f"{attribute.name} must be one of {KEEP_RULES}, got {value!r}")


@attrs.frozen(slots=True)
class NoiseAwareDetector:
    """Fire when the smoothed score has fallen from its peak by more than the noise explains.

    Attributes:
        z: how many standard deviations of the drop under noise alone make a decline (2).
        memory: the level's memory, as a fraction of the steps elapsed so far (0.3).
        warmup_evals: no stop before this many valid evaluations (5: the noise estimate needs
            a few second differences; the Student-t widening guards the first ones).
        warmup_steps: no stop before this step (0).
        min_delta: the drop must also exceed this, in the metric's units (0).
        baseline: when set, the peak starts at this score (in higher-is-better units), so a
            run that never gets near it is stopped too (None).
        keep: the checkpoint to keep: ``level``, the one where a smoothed level of the scores
            was highest, or ``best``, the best reported score (``NAD-10``).
        keep_memory: the memory of the keep rule's level, as ``memory`` (0.05).

    The defaults were chosen in the simulator only, by ``docs/scripts/tune_noise_aware.py``
    (spec ``NAD-9``).
    """

    z: float = attrs.field(default=2.0, validator=_positive)
    memory: float = attrs.field(default=0.3, validator=_positive)
    warmup_evals: int = attrs.field(default=5, validator=_count)
    warmup_steps: int = attrs.field(default=0, validator=_count)
    min_delta: float = attrs.field(default=0.0, validator=_non_negative)
    baseline: float | None = attrs.field(default=None, validator=_optional_finite)
    keep: str = attrs.field(default="level", validator=_keep_rule)
    keep_memory: float = attrs.field(default=KEEP_MEMORY, validator=_positive)

    @property
    def name(self) -> str:
        extras = [
            f"{label}={value:g}"
            for label, value, default in (
                ("warmup_steps", self.warmup_steps, 0),
                ("min_delta", self.min_delta, 0.0),
            )
            if value != default
        ]
        if self.baseline is not None:
            extras.append(f"baseline={self.baseline:g}")
        if self.keep == "best":
            extras.append("keep=best")
        elif self.keep_memory != KEEP_MEMORY:
            extras.append(f"keep=level({self.keep_memory:g})")
        core = f"z={self.z:g},memory={self.memory:g},warmup={self.warmup_evals}"
        return f"noise-aware({','.join([core, *extras])})"

    def initial(self) -> NoiseState:
        return NoiseState()

    def update(self, state: NoiseState, obs: CheckpointView) -> NoiseState:
        """Fold one report (O(1)) with the rule's one copy, :func:`noise_folder`, run on a
        scratch fold of ``state``; a NaN or infinite score, or one more than :data:`SPAN` from
        the first valid score, leaves the state as it was (``state`` itself, ``NAD-7``)."""
        scratch = NoiseFold.scratch(state)
        self._folder(scratch, obs.step, obs.eval_score)
        if scratch.origin is state.origin and scratch.evals_rule == state.evals:
            return state  # a skipped report: the fold changed nothing (its origin, its count)
        return scratch.rule

    def fired(self, state: NoiseState) -> bool:
        return state.alarm

    def kept(self, state: NoiseState) -> tuple[int, float] | None:
        """``(step, score)`` of the checkpoint to keep under ``keep="level"`` (``NAD-10``);
        None under ``keep="best"`` (the watch's best reported score, ``DET-4``) or before the
        first valid score."""
        if self.keep != "level" or state.origin is None:
            return None
        return state.kept_step, state.kept_score

    def threshold(self, state: NoiseState) -> float:
        """The drop that fires in ``state`` (inf before the first second difference)."""
        return self._threshold(state.roughness, state.differences, state.weight + state.peak_weight)

    def _threshold(self, roughness: float, count: int, variance: float) -> float:
        if count == 0:
            return math.inf
        sigma = roughness / count / ROUGHNESS_TO_SIGMA
        z = self.z + (self.z**3 + self.z) / (4.0 * count)
        return max(z * sigma * math.sqrt(variance), self.min_delta)

    @functools.cached_property
    def _folder(self) -> Callable[[NoiseFold, int, float], bool]:
        # noise_folder(self), built once per detector (a slot, not a field: no eq, no hash)
        return noise_folder(self)
