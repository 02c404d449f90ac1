"""One synthetic run's hidden truth and reports from its curve stream (spec ``WRK-7``, ``WRK-8``).

Generated workloads (:mod:`evalstop.sim.workload`) and table workloads
(:mod:`evalstop.sim.attach`) draw a run's curves here. A run's :class:`RunPlan` carries what
its curves need of its job (:func:`run_plan`: its turn step from its turn draw, ``CRV-9``; its
planned steps; the world's stretch). The draw is split where eval noise enters
(:class:`~evalstop.sim.curves.CurveDraw`): :func:`run_truth` draws everything once and
:func:`run_reports` gives the run's reports at any noise level, so a noise sweep draws each
run once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import attrs
import numpy as np

from evalstop.core.model import (
    Job,
    JobKind,
    JobSpec,
    JobTruth,
    Observation,
    trusted_job,
    trusted_observations,
)
from evalstop.sim.clock import conditional_turn_draw, plateau_stretch, turn_step
from evalstop.sim.curves import (
    RISE_PEAK_RANGE,
    CurveDraw,
    RlhfRun,
    RunPlan,
    SaturatingRun,
    rlhf_finish,
    rlhf_start,
    saturating_finish,
    saturating_start,
)
from evalstop.sim.worlds import World


class RunConfig(Protocol):
    """What a run's draw reads of its workload's config (a
    :class:`~evalstop.sim.workload.WorkloadConfig`; a protocol, so that this module does not
    import the workload module, which imports it)."""

    @property
    def world(self) -> World:
        """The curves' world."""

    @property
    def loss_noise(self) -> float:
        """The relative noise of the loss."""

    @property
    def hacking_share(self) -> float:
        """The hacking share the turn law is scaled to."""

    @property
    def sigma(self) -> float:
        """The eval noise in use."""


__all__ = [
    "STRETCH_HACKING_SHARE",
    "RunConfig",
    "Started",
    "StartedJob",
    "StartedRun",
    "SweepSettings",
    "draw_curves",
    "draw_key",
    "draw_run",
    "finish_curves",
    "finish_jobs",
    "finish_runs",
    "noise_levels",
    "reports_at",
    "run_plan",
    "run_reports",
    "run_truth",
    "start_curves",
    "start_job",
    "sweep_settings",
    "truth_of",
    "world_stretch",
]

STRETCH_HACKING_SHARE = 0.6
"""The hacking share at which a world's plateau share sets its stretch (the default share,
``WRK-3``): the stretch is a property of the world, the same at every hacking share."""


@functools.cache
def world_stretch(world: World) -> float:
    """The factor ``a`` on every RLHF rise scale of ``world`` (``CRV-8``): 1 when its plateau
    share is None, else :func:`~evalstop.sim.clock.plateau_stretch` of it."""
    if world.plateau_share is None:
        return 1.0
    return plateau_stretch(
        world.plateau_share,
        world.turn_range,
        RISE_PEAK_RANGE,
        STRETCH_HACKING_SHARE,
        world.rise_on_plan,
    )


def run_plan(
    kind: JobKind,
    turn_draw: float,
    planned_steps: float,
    total_steps: int,
    config: RunConfig,
    hacking: bool | None = None,
) -> RunPlan:
    """A run's plan: its turn step from its uniform ``turn_draw`` (``CRV-9``), its planned
    steps and the world's stretch.

    With ``hacking`` None (a generated job) the label follows: the run hacks when its turn
    falls before ``total_steps`` (at a hacking share of 1, every run does). A table record that
    states its label draws the turn from the law given that label
    (:func:`~evalstop.sim.clock.conditional_turn_draw`). DPO and LoRA runs never turn.
    """
    world = config.world
    if kind is not JobKind.RLHF or (hacking is False and config.hacking_share <= 0.0):
        return RunPlan(math.inf, planned_steps, 1.0)
    share = config.hacking_share
    u = turn_draw
    if hacking is None and share >= 1.0:
        hacking = True  # every run hacks: the turn law given the label, below the end
    if hacking is not None:
        share = max(share, 1e-6)
        u = conditional_turn_draw(world.turn_range, share, total_steps, hacking, turn_draw)
    turn = turn_step(world.turn_range, share, u)
    if hacking is True and not turn < total_steps:
        turn = math.nextafter(float(total_steps), 0.0)
    elif hacking is False and turn < total_steps:
        turn = float(total_steps)
    return RunPlan(turn, planned_steps, world_stretch(world))


def draw_curves(
    kind: JobKind,
    plan: RunPlan,
    steps: np.ndarray,
    rng: np.random.Generator,
    config: RunConfig,
) -> CurveDraw:
    """A run's curve draw: the world's RLHF curves for RLHF, saturating ones otherwise."""
    return finish_curves([start_curves(kind, plan, steps, rng, config)], config)[0]


Started = RlhfRun | SaturatingRun
"""A run's curves once its stream is read (:func:`start_curves`): its draws and scalars, its
curves evaluated with other runs' (:func:`finish_curves`)."""


def start_curves(
    kind: JobKind,
    plan: RunPlan,
    steps: np.ndarray,
    rng: np.random.Generator,
    config: RunConfig,
) -> Started:
    """Every draw of a run's curves from ``rng`` (``CRV-6``): an RLHF run's
    (:func:`~evalstop.sim.curves.rlhf_start`), a DPO or LoRA run's
    (:func:`~evalstop.sim.curves.saturating_start`)."""
    world = config.world
    if kind is JobKind.RLHF:
        return rlhf_start(steps, plan=plan, world=world, rng=rng)
    return saturating_start(steps, kind=kind, plan=plan, world=world, rng=rng)


def finish_curves(started: Sequence[Started], config: RunConfig) -> list[CurveDraw]:
    """The curve draws of ``started`` runs, in order: their RLHF runs' evaluated together
    (:func:`~evalstop.sim.curves.rlhf_finish`), their DPO and LoRA runs' together
    (:func:`~evalstop.sim.curves.saturating_finish`), each the same bit for bit as alone."""
    rlhf = [run for run in started if isinstance(run, RlhfRun)]
    others = [run for run in started if isinstance(run, SaturatingRun)]
    rate, noise = config.world.decline_rate, config.loss_noise
    finished = iter(rlhf_finish(rlhf, decline_rate=rate, loss_noise=noise) if rlhf else ())
    saturated = iter(saturating_finish(others, loss_noise=noise) if others else ())
    return [next(finished) if isinstance(run, RlhfRun) else next(saturated) for run in started]


def draw_run(
    kind: JobKind,
    plan: RunPlan,
    steps: list[int],
    duration: int,
    rng: np.random.Generator,
    config: RunConfig,
) -> tuple[JobTruth, tuple[Observation, ...]]:
    """A run's hidden truth and its reports at checkpoint ``steps``, curves from ``rng``.

    One run alone: :func:`finish_runs` (table workloads, :mod:`evalstop.sim.attach`) and
    :func:`finish_jobs` (generated ones) evaluate many runs' curves at once, each the same.

    Args:
        kind: the job's kind (RLHF runs get the world's RLHF curves, others saturate).
        plan: its turn step (the hidden label follows from it), planned steps and stretch.
        steps: checkpoint steps, strictly increasing; the last is the run's end.
        duration: the true service time in seconds.
        rng: the job's curve stream.
        config: the workload's parameters (world, noise).

    Returns:
        The truth and one observation per checkpoint.
    """
    s = np.array(steps, dtype=np.float64)
    return finish_runs(
        [(kind, plan, steps, duration, start_curves(kind, plan, s, rng, config))], config
    )[0]


StartedRun = tuple[JobKind, RunPlan, list[int], int, Started]
"""A run with its stream read (:func:`start_curves`): its kind, plan, checkpoint steps, true
duration and started curves, as :func:`draw_run` reads them."""


def finish_runs(
    started: Sequence[StartedRun], config: RunConfig
) -> list[tuple[JobTruth, tuple[Observation, ...]]]:
    """:func:`draw_run`'s truth and reports of each run of ``started``, in order: every run's
    curves evaluated at once (:func:`finish_curves`, each the same bit for bit as alone,
    ``WRK-8``), then its truth and its reports at ``config``'s eval noise. A caller that reads
    each run's stream as it comes (a reused stream, ``WRK-1``) evaluates them together here."""
    draws = finish_curves([run for *_, run in started], config)
    return [
        (truth_of(kind, plan, steps, duration, draw), run_reports(draw, steps, config.sigma))
        for (kind, plan, steps, duration, _), draw in zip(started, draws, strict=True)
    ]


def run_truth(
    kind: JobKind,
    plan: RunPlan,
    steps: list[int],
    duration: int,
    rng: np.random.Generator,
    config: RunConfig,
) -> tuple[JobTruth, CurveDraw]:
    """:func:`draw_run`'s truth and the run's curve draw, whatever its eval noise (WRK-8:
    :func:`run_reports` gives its reports at any noise)."""
    draw = draw_curves(kind, plan, np.array(steps, dtype=np.float64), rng, config)
    return truth_of(kind, plan, steps, duration, draw), draw


def truth_of(
    kind: JobKind, plan: RunPlan, steps: list[int], duration: int, draw: CurveDraw
) -> JobTruth:
    """The hidden truth of a run of ``plan`` at checkpoint ``steps`` drawn as ``draw``."""
    return JobTruth(
        total_steps=steps[-1],
        duration=duration,
        hacking=kind is JobKind.RLHF and plan.turn < steps[-1],
        quality=draw.quality,
        peak_fraction=draw.peak_fraction,
    )


def run_reports(draw: CurveDraw, steps: list[int], sigma: float) -> tuple[Observation, ...]:
    """The reports at ``steps`` of a run drawn as ``draw``, at eval noise ``sigma``."""
    return reports_at(draw, steps, (sigma,))[0]


def reports_at(
    draw: CurveDraw, steps: list[int], sigmas: Sequence[float]
) -> list[tuple[Observation, ...]]:
    """:func:`run_reports` at each eval noise of ``sigmas``, the run's noise levels scored at
    once (:meth:`~evalstop.sim.curves.CurveDraw.scored`, ``WRK-8``). The steps are a
    generated run's checkpoint steps, ints >= 0 (``WRK-7``), so the observations are built
    without their validator (``MOD-5``)."""
    scores, proxy = draw.scored(sigmas)
    # tolist() gives the same Python floats as float() of each element, in one call.
    proxies = [None] * len(sigmas) if proxy is None else proxy.tolist()
    kls = None if draw.kl is None else draw.kl.tolist()
    losses = draw.loss.tolist()
    return [
        trusted_observations(steps, row, losses, proxy_row, kls)
        for row, proxy_row in zip(scores.tolist(), proxies, strict=True)
    ]


def draw_key(plan: RunPlan, total_steps: int) -> RunPlan:
    """A plan whose draw (:func:`run_truth`) equals ``plan``'s for a run of ``total_steps``
    steps: ``plan`` itself when the run turns before its end, else the plan that never turns,
    as a run's curves and truth read its turn step only when it falls before the end
    (``CRV-9``): a sweep draws a job that is healthy at two hacking shares once (``WRK-8``)."""
    return plan if plan.turn < total_steps else RunPlan(math.inf, plan.planned_steps, plan.stretch)


_Config = TypeVar("_Config", bound=RunConfig)

SweepSettings = tuple[list[_Config], list[tuple[int, float]]]
"""What drawing a job reads of a sweep's configs (:func:`sweep_settings`)."""


def sweep_settings(configs: Sequence[_Config]) -> SweepSettings[_Config]:
    """One config per distinct hacking share of ``configs`` (in order of first appearance)
    and each config's ``(index among them, sigma)``: the settings of a sweep (``WRK-8``),
    worked out once for all its jobs."""
    firsts: dict[float, _Config] = {}
    for config in configs:
        firsts.setdefault(config.hacking_share, config)
    index = {share: i for i, share in enumerate(firsts)}
    return list(firsts.values()), [(index[c.hacking_share], c.sigma) for c in configs]


def noise_levels(turns: list[float], settings: list[tuple[int, float]]) -> dict[float, list[float]]:
    """A job's draws in a sweep, keyed by their turn step, and each one's noise levels in
    config order: ``turns`` the turn steps of the job's draw keys (:func:`draw_key`) at each of
    the sweep's shares, ``settings`` the sweep's (:func:`sweep_settings`). A job's draw keys
    differ in their turn step alone (one world, one planned length), so a healthy job is
    one draw at every share (``WRK-8``)."""
    wanted: dict[float, list[float]] = {}
    for share, sigma in settings:
        sigmas = wanted.setdefault(turns[share], [])
        if sigma not in sigmas:
            sigmas.append(sigma)
    return wanted


@attrs.frozen(slots=True)
class StartedJob:
    """A job of a sweep with its streams read, its curves not yet evaluated
    (:func:`start_job`; :func:`finish_jobs` makes its jobs).

    Attributes:
        spec: its spec.
        steps: its checkpoint steps.
        duration: its true duration in seconds.
        turns: the turn step of its draw key at each distinct share of the sweep.
        draws: each of its draws: its key (:func:`draw_key`), its noise levels in config
            order and its started curves.
    """

    spec: JobSpec
    steps: list[int]
    duration: int
    turns: list[float]
    draws: list[tuple[RunPlan, list[float], Started]]


def start_job(
    spec: JobSpec,
    schedule: tuple[list[int], int, float],
    turn_draw: float,
    stream: Callable[[], np.random.Generator],
    sweep: SweepSettings[_Config],
) -> StartedJob:
    """A job's draws in a sweep (``WRK-8``): its plan at each share (:func:`run_plan`), one
    draw per distinct draw key, each read from a fresh ``stream()`` (its stream restarts at
    each draw). ``schedule`` is its checkpoint steps, true duration and planned steps, as
    WRK-7's schedule gives them: :func:`finish_jobs` builds its jobs on the trusted path
    (``MOD-5``), which relies on that schedule."""
    steps, duration, planned = schedule
    share_configs, settings = sweep
    kind, last = spec.kind, steps[-1]
    keys = [draw_key(run_plan(kind, turn_draw, planned, last, c), last) for c in share_configs]
    turns = [key.turn for key in keys]
    s = np.array(steps, dtype=np.float64)
    draws: list[tuple[RunPlan, list[float], Started]] = []
    for turn, sigmas in noise_levels(turns, settings).items():
        key = keys[turns.index(turn)]
        draws.append((key, sigmas, start_curves(kind, key, s, stream(), share_configs[0])))
    return StartedJob(spec, steps, duration, turns, draws)


def finish_jobs(started: Sequence[StartedJob], sweep: SweepSettings[_Config]) -> list[list[Job]]:
    """Each started job once per config of the sweep, in config order (``WRK-8``): every
    draw's curves evaluated at once (:func:`finish_curves`), a truth per draw and a job per
    draw and noise level (its noise levels scored at once, :func:`reports_at`), built without
    re-running the checks WRK-7's schedule guarantees (``trusted_job``, ``MOD-5``)."""
    share_configs, settings = sweep
    runs = [run for job in started for _, _, run in job.draws]
    curves = iter(finish_curves(runs, share_configs[0]))
    out = []
    for job in started:
        made: dict[tuple[float, float], Job] = {}
        for key, sigmas, _ in job.draws:
            draw = next(curves)
            truth = truth_of(job.spec.kind, key, job.steps, job.duration, draw)
            for sigma, reports in zip(sigmas, reports_at(draw, job.steps, sigmas), strict=True):
                made[key.turn, sigma] = trusted_job(job.spec, truth, reports)
        out.append([made[job.turns[share], sigma] for share, sigma in settings])
    return out
