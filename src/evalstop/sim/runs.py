"""One synthetic run's hidden truth and reports from its curve stream (spec ``WRK-7``, ``WRK-8``).

Generated workloads (:mod:`evalstop.sim.workload`) and table workloads
(:mod:`evalstop.sim.attach`) draw a run's curves here. The draw is split where eval noise
enters (:class:`~evalstop.sim.curves.CurveDraw`): :func:`run_truth` draws everything once and
:func:`run_reports` gives the run's reports at any noise level, so a noise sweep draws each
run once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from evalstop.core.model import JobKind, JobTruth, Observation
from evalstop.sim.curves import CurveDraw, rlhf_draw, saturating_draw

if TYPE_CHECKING:  # workload imports this module
    from evalstop.sim.workload import WorkloadConfig

__all__ = ["draw_curves", "draw_run", "run_reports", "run_truth"]


def draw_curves(
    kind: JobKind,
    hacking: bool,
    fractions: np.ndarray,
    rng: np.random.Generator,
    config: WorkloadConfig,
) -> CurveDraw:
    """A run's curve draw: the world's RLHF curves for RLHF, saturating ones otherwise."""
    if kind is JobKind.RLHF:
        return rlhf_draw(
            fractions,
            hacking=hacking,
            world=config.world,
            rng=rng,
            loss_noise=config.loss_noise,
        )
    return saturating_draw(fractions, rng=rng, loss_noise=config.loss_noise)


def draw_run(
    kind: JobKind,
    hacking: bool,
    steps: list[int],
    duration: int,
    rng: np.random.Generator,
    config: WorkloadConfig,
) -> tuple[JobTruth, tuple[Observation, ...]]:
    """A run's hidden truth and its reports at checkpoint ``steps``, curves from ``rng``.

    The one place a synthetic run's curves become observations: generated workloads and table
    workloads (:mod:`evalstop.sim.attach`) both draw through it.

    Args:
        kind: the job's kind (RLHF runs get the world's RLHF curves, others saturate).
        hacking: the hidden label.
        steps: checkpoint steps, strictly increasing; the last is the run's end.
        duration: the true service time in seconds.
        rng: the job's curve stream.
        config: the workload's parameters (world, noise).

    Returns:
        The truth and one observation per checkpoint.
    """
    truth, draw = run_truth(kind, hacking, steps, duration, rng, config)
    return truth, run_reports(draw, steps, config.sigma)


def run_truth(
    kind: JobKind,
    hacking: bool,
    steps: list[int],
    duration: int,
    rng: np.random.Generator,
    config: WorkloadConfig,
) -> tuple[JobTruth, CurveDraw]:
    """:func:`draw_run`'s truth and the run's curve draw, whatever its eval noise (WRK-8:
    :func:`run_reports` gives its reports at any noise)."""
    fractions = np.array(steps, dtype=np.float64) / steps[-1]
    draw = draw_curves(kind, hacking, fractions, rng, config)
    truth = JobTruth(
        total_steps=steps[-1],
        duration=duration,
        hacking=hacking,
        quality=draw.quality,
        peak_fraction=draw.peak_fraction,
    )
    return truth, draw


def run_reports(draw: CurveDraw, steps: list[int], sigma: float) -> tuple[Observation, ...]:
    """The reports at ``steps`` of a run drawn as ``draw``, at eval noise ``sigma``."""
    sample = draw.sample(sigma)
    proxy = sample.proxy_reward
    # tolist() gives the same Python floats as float() of each element, in one call.
    proxies = [None] * len(steps) if proxy is None else proxy.tolist()
    scores, losses = sample.eval_score.tolist(), sample.loss.tolist()
    if sample.kl is None:
        return tuple(map(Observation, steps, scores, losses, proxies))
    return tuple(map(Observation, steps, scores, losses, proxies, sample.kl.tolist()))
