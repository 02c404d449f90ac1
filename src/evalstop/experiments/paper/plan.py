"""What each experiment needs: settings, swept values and the simulations (spec ``REP-1``).

A :class:`Sim` names one simulation: the world, the workload's swept parameters (noise,
hacking share, planned evaluations), a seed, a system and its k, every one resolved to a
value, so that experiments share simulations where they coincide (the main table's EvalStop
run is also the noise sweep's point at the world's sigma, and the density sweep's at the
world's density) and each is run once.
"""

from __future__ import annotations

import functools

import attrs

from evalstop.experiments.grid import (
    BASE_RATES,
    DENSITIES,
    DENSITY_KS,
    KS,
    PAPER_DETECTORS,
    PAPER_NOISES,
)
from evalstop.sim.philly import TraceSpec
from evalstop.sim.workload import WorkloadConfig
from evalstop.sim.worlds import WORLDS, world_named

__all__ = [
    "BASES",
    "DENSITY_WORLDS",
    "FULL",
    "MAIN_BASE",
    "MAIN_SYSTEMS",
    "QUICK",
    "WORLD_NAMES",
    "Settings",
    "Sim",
    "decides_on_eval_scores",
    "detection_only",
    "plan",
    "reads_eval_scores",
    "world_plan",
]

MAIN_BASE = "srtf-est"
MAIN_SYSTEMS = ("srtf-est", "evalstop+srtf-est", "stopat-0.65+srtf-est", "lossplateau+srtf-est")
BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "las")
DENSITY_WORLDS = ("paper",)
"""The worlds the density sweep runs in: the paper's rule is judged in the paper's world (a
density-40 simulation costs four of density 10, so the calibrated world is left out to keep
the full run's time in bounds)."""

WORLD_NAMES = tuple(WORLDS)
"""Every world ``reproduce`` runs by default: paper, then calibrated."""


@attrs.frozen(slots=True)
class Settings:
    """The fixed workload parameters, how many seeds a cell gets and which worlds run."""

    seeds: int = attrs.field(validator=attrs.validators.ge(1))
    jobs: int = attrs.field(validator=attrs.validators.ge(1))
    gpus: int = 64
    load: float = 0.9
    hacking_share: float = 0.6
    k: int = 2
    worlds: tuple[str, ...] = WORLD_NAMES
    trace: TraceSpec | None = None
    """A cluster trace's arrivals, durations and GPUs instead of synthetic ones (PHL-5)."""

    def config(self, sim: Sim) -> WorkloadConfig:
        """The workload of ``sim`` (its seed aside)."""
        return WorkloadConfig(
            n_jobs=self.jobs,
            gpus=self.gpus,
            load=self.load,
            hacking_share=sim.hacking_share,
            eval_noise=sim.noise,
            world=sim.world,
            evals_per_run=sim.evals,
        )


QUICK = Settings(seeds=3, jobs=400)
"""``--quick``: fewer, smaller cells; for a first look (about a minute of CPU time)."""

FULL = Settings(seeds=10, jobs=1000)
"""The default: 10 seeds a cell, 1,000 jobs on 64 GPUs."""


@attrs.frozen(slots=True, order=True)
class Sim:
    """One simulation: world, workload (noise, hacking share, planned evaluations, seed) and
    system (name, k)."""

    world: str
    noise: float
    hacking_share: float
    evals: int
    seed: int
    system: str
    k: int

    @classmethod
    def at(
        cls,
        settings: Settings,
        world: str,
        seed: int,
        system: str,
        *,
        noise: float | None = None,
        share: float | None = None,
        evals: int | None = None,
        k: int | None = None,
    ) -> Sim:
        """The simulation of ``system`` in ``world``, every unnamed parameter at its default
        (the world's sigma and density, the settings' hacking share and k).

        A system that never reads an eval score runs at the world's sigma whatever ``noise``
        says: eval noise changes nothing else in a workload, so its figures are the same at
        every sigma and its noise-sweep cells are one simulation (REP-1).
        """
        defaults = world_named(world)
        if noise is None or not reads_eval_scores(system):
            noise = defaults.eval_noise
        return cls(
            world,
            noise,
            settings.hacking_share if share is None else share,
            defaults.rlhf_evals if evals is None else evals,
            seed,
            system,
            settings.k if k is None else k,
        )


def reads_eval_scores(system: str) -> bool:
    """True when ``system`` reads eval scores: any wrapped base. No base policy reads them;
    every wrapper does, if only to keep the checkpoint with the best observed score."""
    _, plus, _ = system.partition("+")
    return bool(plus)


def decides_on_eval_scores(system: str) -> bool:
    """False when ``system``'s decisions read no eval score: a base alone, or a base wrapped
    by ``stopat`` (estimated progress) or ``lossplateau`` (the loss). Such a system starts
    and stops every job at the same times at every sigma and every hacking share of a group,
    which change a job's quality and eval scores only (CRV-6); a wrapper still keeps the best
    *observed* checkpoint, which the runner re-derives on each workload (REP-12, REP-15)."""
    detector, plus, base = system.partition("+")
    if not plus:
        return False
    blind = detector == "lossplateau" or detector.startswith("stopat")
    return not blind or reads_eval_scores(base)


def detection_only(sim: Sim) -> bool:
    """True for a cell of the density sweep alone (REP-8, REP-14): a density other than its
    world's, where the plan runs only a detector over a base alone, and the tables read
    detection quality only. Its figures come from folding the detector over each job's
    reports (DQ-4), as no schedule changes them."""
    _, plus, base = sim.system.partition("+")
    return bool(plus) and "+" not in base and sim.evals != world_named(sim.world).rlhf_evals


def _system(detector: str, base: str) -> str:
    return f"{detector}+{base}"


def _seed_plan(settings: Settings, world: str, seed: int) -> set[Sim]:
    evalstop = _system("evalstop", MAIN_BASE)
    at = functools.partial(Sim.at, settings, world, seed)
    sims = {at(system) for system in MAIN_SYSTEMS}
    for base in BASES:
        sims.update((at(base), at(_system("evalstop", base))))
    for noise in PAPER_NOISES:
        sims.add(at(MAIN_BASE, noise=noise))
        sims.update(at(_system(d, MAIN_BASE), noise=noise) for d in PAPER_DETECTORS)
    for share in BASE_RATES:
        sims.add(at(MAIN_BASE, share=share))
        sims.update(at(_system(d, MAIN_BASE), share=share) for d in PAPER_DETECTORS)
    sims.update(at(evalstop, k=k) for k in KS)
    for evals in DENSITIES if world in DENSITY_WORLDS else ():
        sims.update(at(evalstop, evals=evals, noise=noise) for noise in PAPER_NOISES)
        sims.update(at(evalstop, evals=evals, k=k) for k in DENSITY_KS)
    return sims


def world_plan(settings: Settings, world: str) -> set[Sim]:
    """Every simulation of ``world``: the five experiments and the density sweep (EvalStop
    only: it reports detection quality, which needs no base run)."""
    sims: set[Sim] = set()
    for seed in range(settings.seeds):
        if settings.trace is None:
            sims |= _seed_plan(settings, world, seed)
        else:  # on a trace: the main and composability tables only (PHL-5)
            systems = {*MAIN_SYSTEMS, *BASES, *(_system("evalstop", b) for b in BASES)}
            sims.update(Sim.at(settings, world, seed, system) for system in systems)
    return sims


def plan(settings: Settings) -> tuple[Sim, ...]:
    """Every simulation of every world of ``settings``, without duplicates, in a fixed order."""
    sims: set[Sim] = set()
    for world in settings.worlds:
        sims |= world_plan(settings, world)
    return tuple(sorted(sims))
