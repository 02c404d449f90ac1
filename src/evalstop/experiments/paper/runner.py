"""Run the planned simulations, in a process pool, with the same answers for any pool size.

Simulations are grouped by workload group (world, planned evaluations, seed): the workloads
of a group differ in hacking share and eval noise only, so a group draws its jobs once and
reports them at each share and noise level (spec ``WRK-8``), and a system whose decisions
cannot differ between two of them is simulated once (``REP-12``, ``REP-15``); groups are
independent and pure, and their figures are put back in plan order, so the worker count
changes the wall time only (spec ``REP-2``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence

import attrs

from evalstop.core.model import Job, JobKind
from evalstop.core.registry import make_policy
from evalstop.engine.collector import paused
from evalstop.experiments.leakage import Leakage, audit
from evalstop.experiments.paper.plan import (
    Settings,
    Sim,
    decides_on_eval_scores,
    detection_only,
)
from evalstop.experiments.paper.ray_backend import Backend
from evalstop.sim.attach import AttachRule
from evalstop.sim.detection import DetectionMetrics, detection_metrics, folded_outcomes
from evalstop.sim.metrics import JobOutcome, job_outcomes, kept_at, mean_retained, system_metrics
from evalstop.sim.philly import trace_workload
from evalstop.sim.run import Cluster, Result, simulate
from evalstop.sim.workload import generate_sweep, sweep_jobs

__all__ = [
    "LEARNED_SEEDS",
    "MAX_WORKERS_PER_CPU",
    "Drawn",
    "Figures",
    "GroupRun",
    "default_workers",
    "group_run",
    "max_workers",
    "run_audits",
    "run_group",
    "run_plan",
]


@attrs.frozen(slots=True)
class Figures:
    """The numbers of one simulation the experiments aggregate (NaN where undefined)."""

    jct_mean: float
    jct_p95: float
    wasted_gpu_time: float
    rlhf_gpu_time: float
    utilization: float
    quality_retained_rlhf: float
    stopped: float
    precision: float
    recall: float
    fpr: float
    f1: float
    delay_evals: float
    delay_gpu_hours: float


Group = tuple[Settings, tuple[Sim, ...]]

Drawn = dict[tuple[str, int], tuple[Job, ...]]
"""Default workloads drawn by the plan's groups, by (world, seed) (``REP-13``)."""


MAX_WORKERS_PER_CPU = 4
"""Most local workers per CPU (spec ``REP-9``): a safety bound, not a tuned figure."""


def default_workers() -> int:
    """One worker per core."""
    return max(1, os.cpu_count() or 1)


def max_workers() -> int:
    """The most local workers ``reproduce`` starts (spec ``REP-9``)."""
    return MAX_WORKERS_PER_CPU * default_workers()


@attrs.frozen(slots=True)
class GroupRun:
    """What one workload group gives back (spec ``REP-13``).

    Attributes:
        figures: each simulation of the group with its figures, in the group's order.
        audited: the group's jobs at the settings' hacking share and the world's sigma when
            the leakage audit reads that workload (the group is at the world's density), else
            None.
    """

    figures: tuple[tuple[Sim, Figures], ...]
    audited: tuple[Job, ...] | None = None


def run_group(group: Group) -> list[tuple[Sim, Figures]]:
    """Draw one workload group (its hacking shares and noise levels together) and run every
    system of the group on its share and noise level's workload, with the cyclic collector
    paused (spec ``REP-11``)."""
    return list(group_run(group).figures)


def group_run(group: Group) -> GroupRun:
    """:func:`run_group`'s figures, and the group's jobs the leakage audit reads, if any
    (``REP-13``)."""
    with paused(True):
        return _run_group(group)


def _audit_sim(settings: Settings, world: str, seed: int) -> Sim:
    """A simulation on the workload the leakage audit of ``world`` reads for ``seed``: the
    world's default workload (LEAK-3)."""
    return Sim.at(settings, world, seed, "srtf-est")


def _run_group(group: Group) -> GroupRun:
    settings, sims = group
    firsts: dict[tuple[float, float], Sim] = {}  # the first sim of each share and noise
    for sim in sims:
        firsts.setdefault((sim.hacking_share, sim.noise), sim)
    folds_only = all(detection_only(sim) for sim in sims)  # reads RLHF jobs alone (REP-16)
    drawn = _workloads(settings, tuple(firsts.values()), rlhf_only=folds_only)
    workloads = dict(zip(firsts, drawn, strict=True))
    audit = _audit_sim(settings, sims[0].world, sims[0].seed)
    audited = None
    if _group_of(audit) == _group_of(sims[0]) and (audit.hacking_share, audit.noise) in workloads:
        audited = workloads[audit.hacking_share, audit.noise][0]
    out: list[tuple[Sim, Figures]] = []
    runs: _Runs = {}
    for sim in sims:
        workload, cluster, jobs = workloads[sim.hacking_share, sim.noise]
        if detection_only(sim):  # no schedule changes its figures (REP-14)
            out.append((sim, _folded_figures(sim, workload, jobs)))
            continue
        result, outcomes = _outcomes(sim, (workload, cluster, jobs), runs)
        system = system_metrics(result, list(outcomes.values()))
        platform = (
            system.jct.mean,
            system.jct.p95,
            float(system.wasted_gpu_time),
            float(system.rlhf_gpu_time),
            system.utilization,
        )
        detection = detection_metrics(outcomes.values(), jobs)
        figures = _figures(platform, system.quality_retained_rlhf, system.stopped, detection)
        out.append((sim, figures))
    return GroupRun(tuple(out), audited)


_Drawn = tuple[tuple[Job, ...], Cluster, dict[int, Job]]
_Runs = dict[tuple[str, int], tuple[Result, dict[int, JobOutcome], float]]


def _outcomes(sim: Sim, drawn: _Drawn, runs: _Runs) -> tuple[Result, dict[int, JobOutcome]]:
    """``sim``'s run and its outcomes: simulated, or, for a system that decides on no eval
    score, derived from the group's run of the same system on another of its workloads, where
    its decisions cannot differ: at another sigma, re-kept (REP-12); at another hacking share,
    which changes no report such a system reads (CRV-6), its log read with this workload's
    jobs, then re-kept (REP-15). ``runs`` keeps the group's runs that others derive from."""
    workload, cluster, jobs = drawn
    blind = not decides_on_eval_scores(sim.system)
    key = (sim.system, sim.k)
    run = runs.get(key) if blind else None
    if run is None:
        result = simulate(workload, make_policy(sim.system, k=sim.k), cluster)
        outcomes = job_outcomes(result)
        if blind:
            runs[key] = (result, outcomes, sim.hacking_share)
        return result, outcomes
    result, outcomes, share = run
    if share != sim.hacking_share:  # other truths and labels, the same log (REP-15)
        result = attrs.evolve(result, jobs=workload)
        outcomes = job_outcomes(result)
    return result, kept_at(outcomes.values(), jobs)


def _figures(
    platform: tuple[float, float, float, float, float],
    retained: float,
    stopped: int,
    detection: DetectionMetrics,
) -> Figures:
    """The figures of a simulation: ``platform`` (JCT mean and p95, wasted and RLHF GPU-time,
    utilisation), the RLHF quality retained, the jobs stopped and the detection metrics."""
    return Figures(
        *platform,
        retained,
        float(stopped),
        detection.precision,
        detection.recall,
        detection.fpr,
        detection.f1,
        detection.delay_evals,
        detection.delay_gpu_hours,
    )


def _folded_figures(sim: Sim, workload: tuple[Job, ...], jobs: dict[int, Job]) -> Figures:
    """The detection figures of ``sim``'s system on ``workload`` from its detector folded
    over each RLHF job's reports (DQ-4, REP-14); the platform figures, which need a
    schedule, are NaN."""
    (detector,) = make_policy(sim.system, k=sim.k).detectors
    outcomes = folded_outcomes(detector, workload)
    stopped = sum(o.stopped for o in outcomes)
    detection = detection_metrics(outcomes, jobs)
    return _figures((math.nan,) * 5, mean_retained(outcomes), stopped, detection)


def _rule(sim: Sim) -> AttachRule:
    """The attachment rule of ``sim``'s cell: its world, noise, share and density (PHL-5)."""
    return AttachRule(
        hacking_share=sim.hacking_share,
        world=sim.world,
        eval_noise=sim.noise,
        evals_per_run=sim.evals,
    )


def _workload(settings: Settings, sim: Sim) -> tuple[tuple[Job, ...], Cluster]:
    """The jobs of ``sim``'s workload and the cluster they run on."""
    jobs, cluster, _ = _workloads(settings, (sim,))[0]
    return jobs, cluster


def _workloads(
    settings: Settings, sims: tuple[Sim, ...], *, rlhf_only: bool = False
) -> list[_Drawn]:
    """The jobs (also by id) of each of ``sims``' workloads, which differ in hacking share and
    noise only, and the cluster they run on; a synthetic group is drawn at once (WRK-8), its
    RLHF jobs alone when ``rlhf_only`` (WRK-9)."""
    if settings.trace is None:
        configs = [settings.config(sim) for sim in sims]
        if rlhf_only:
            sweep = sweep_jobs(configs, sims[0].seed, JobKind.RLHF)
        else:
            sweep = tuple(w.jobs for w in generate_sweep(configs, sims[0].seed))
        cluster = Cluster(gpus=settings.gpus)
        return [(jobs, cluster, {job.job_id: job for job in jobs}) for jobs in sweep]
    out = []
    for sim in sims:
        table, fitted = trace_workload(settings.trace, _rule(sim), sim.seed)
        jobs = table.jobs
        out.append((jobs, Cluster(gpus=fitted.gpus), {job.job_id: job for job in jobs}))
    return out


def _group_of(sim: Sim) -> tuple[str, int, int]:
    """The workload group of ``sim``: world, density and seed (REP-2, WRK-8)."""
    return (sim.world, sim.evals, sim.seed)


def _groups(settings: Settings, sims: Sequence[Sim]) -> list[Group]:
    ordered = sorted(sims, key=lambda sim: (_group_of(sim), sim))
    return [(settings, tuple(members)) for _, members in itertools.groupby(ordered, key=_group_of)]


def run_plan(
    settings: Settings,
    sims: Sequence[Sim],
    *,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    backend: Backend | None = None,
    drawn: Drawn | None = None,
) -> dict[Sim, Figures]:
    """Figures of every simulation in ``sims``; ``progress(done, total)`` after each group.

    ``backend`` runs the groups elsewhere (e.g. a
    :class:`~evalstop.experiments.paper.ray_backend.RayBackend`, spec ``RAY-1``) instead of in
    ``workers`` local processes. ``drawn``, when given, receives the default workloads the
    groups drew, for :func:`run_audits` (spec ``REP-13``).
    """
    figures, workloads = _run_groups(settings, sims, workers, progress, backend)
    if drawn is not None:
        drawn.update(workloads)
    return figures


def _run_groups(
    settings: Settings,
    sims: Sequence[Sim],
    workers: int,
    progress: Callable[[int, int], None] | None,
    backend: Backend | None,
) -> tuple[dict[Sim, Figures], Drawn]:
    """Every group's figures, in plan order, and the default workloads the groups drew."""
    groups = _groups(settings, sims)
    total = len(groups)
    figures: dict[Sim, Figures] = {}
    drawn: Drawn = {}

    def take(done: int, run: GroupRun) -> None:
        figures.update(run.figures)
        if run.audited is not None:
            first = run.figures[0][0]
            drawn[first.world, first.seed] = run.audited
        if progress is not None:
            progress(done, total)

    if backend is not None:
        with contextlib.closing(backend.imap(group_run, groups)) as remote:
            for done, run in enumerate(remote, start=1):
                take(done, run)
        return {sim: figures[sim] for sim in sims}, drawn
    pool = None if workers <= 1 else multiprocessing.Pool(workers, initializer=_worker_signals)
    results: Iterator[GroupRun]
    results = map(group_run, groups) if pool is None else pool.imap(group_run, groups)
    try:
        for done, run in enumerate(results, start=1):
            take(done, run)
    except BaseException:
        if pool is not None:  # an error or an interrupt: no worker outlives the run
            pool.terminate()
            pool.join()
        raise
    if pool is not None:
        pool.close()
        pool.join()
    return {sim: figures[sim] for sim in sims}, drawn


LEARNED_SEEDS = 3
"""The learned predictors (LEAK-4) fit on the first 3 seeds' workloads (3,000 jobs at the full
run's size, as the LEAK-3 test): enough for a 10% margin, and a tenth of the CPU of 10 seeds."""


def run_audits(settings: Settings, drawn: Drawn | None = None) -> dict[str, Leakage]:
    """The leakage audit of each world, over its default workloads of every seed (LEAK-3), its
    learned predictors over the first :data:`LEARNED_SEEDS` of them (LEAK-4); a workload in
    ``drawn`` (by world and seed) is read from there instead of drawn again (REP-13)."""
    drawn = {} if drawn is None else drawn
    out: dict[str, Leakage] = {}
    for world in settings.worlds:
        per_seed = [
            drawn[world, seed]
            if (world, seed) in drawn
            else _workload(settings, _audit_sim(settings, world, seed))[0]
            for seed in range(settings.seeds)
        ]
        jobs = [job for workload in per_seed for job in workload]
        learned = [job for workload in per_seed[:LEARNED_SEEDS] for job in workload]
        out[world] = audit(jobs, learned_on=learned)
    return out


def _worker_signals() -> None:
    """Workers leave SIGINT to the parent (which stops them) and die on SIGTERM (spec
    ``REP-5``): a Ctrl-C reaches the whole process group, and no worker prints a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
