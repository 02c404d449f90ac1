"""What each experiment of the paper needs: settings, swept values and the simulations.

A :class:`Sim` names one simulation: the workload's swept parameters, a seed, a system and
its k. Experiments share simulations where they coincide (the main table's EvalStop run is
also the noise sweep's point at the default sigma), so each is run once.
"""

from __future__ import annotations

import attrs

from evalstop.sim.workload import WorkloadConfig

__all__ = [
    "BASES",
    "BASE_RATES",
    "DETECTORS",
    "FULL",
    "KS",
    "MAIN_BASE",
    "MAIN_SYSTEMS",
    "NOISES",
    "QUICK",
    "Settings",
    "Sim",
    "plan",
]

MAIN_BASE = "srtf-est"
MAIN_SYSTEMS = ("srtf-est", "evalstop+srtf-est", "stopat-0.65+srtf-est", "lossplateau+srtf-est")
BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "las")
DETECTORS = ("evalstop", "stopat-0.65", "lossplateau")
NOISES = (0.01, 0.02, 0.05, 0.08, 0.12)
BASE_RATES = (0.2, 0.4, 0.6, 0.8)
KS = (1, 2, 3, 4, 5)


@attrs.frozen(slots=True)
class Settings:
    """The fixed workload parameters and how many seeds a cell gets."""

    seeds: int = attrs.field(validator=attrs.validators.ge(1))
    jobs: int = attrs.field(validator=attrs.validators.ge(1))
    gpus: int = 64
    load: float = 0.9
    noise: float = 0.02
    hacking_share: float = 0.6
    k: int = 2

    def config(self, noise: float, hacking_share: float) -> WorkloadConfig:
        return WorkloadConfig(
            n_jobs=self.jobs,
            gpus=self.gpus,
            load=self.load,
            hacking_share=hacking_share,
            eval_noise=noise,
        )


QUICK = Settings(seeds=3, jobs=400)
"""``--quick``: fewer, smaller cells; for a first look in well under a minute."""

FULL = Settings(seeds=10, jobs=1000)
"""The default: 10 seeds a cell, 1,000 jobs on 64 GPUs."""


@attrs.frozen(slots=True, order=True)
class Sim:
    """One simulation: workload (noise, hacking share, seed) and system (name, k)."""

    noise: float
    hacking_share: float
    seed: int
    system: str
    k: int


def _system(detector: str, base: str) -> str:
    return f"{detector}+{base}"


def plan(settings: Settings) -> tuple[Sim, ...]:
    """Every simulation the five experiments need, without duplicates, in a fixed order."""
    sims: set[Sim] = set()
    sigma, share, k = settings.noise, settings.hacking_share, settings.k
    for seed in range(settings.seeds):
        for system in MAIN_SYSTEMS:
            sims.add(Sim(sigma, share, seed, system, k))
        for base in BASES:
            sims.add(Sim(sigma, share, seed, base, k))
            sims.add(Sim(sigma, share, seed, _system("evalstop", base), k))
        for noise in NOISES:
            sims.add(Sim(noise, share, seed, MAIN_BASE, k))
            for detector in DETECTORS:
                sims.add(Sim(noise, share, seed, _system(detector, MAIN_BASE), k))
        for rate in BASE_RATES:
            sims.add(Sim(sigma, rate, seed, MAIN_BASE, k))
            for detector in DETECTORS:
                sims.add(Sim(sigma, rate, seed, _system(detector, MAIN_BASE), k))
        for k_value in KS:
            sims.add(Sim(sigma, share, seed, _system("evalstop", MAIN_BASE), k_value))
    return tuple(sorted(sims))
