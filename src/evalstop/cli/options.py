"""Command-line options shared by ``simulate`` and ``reproduce``: the workload and cluster."""

from __future__ import annotations

import argparse
import math

from evalstop.cli.errors import CliError
from evalstop.core.model import JobKind
from evalstop.sim.workload import DEFAULT_MIX, MAX_HORIZON, WorkloadConfig
from evalstop.sim.worlds import PAPER, WORLDS

__all__ = [
    "DEFAULT_GPUS",
    "DEFAULT_JOBS",
    "MAX_HORIZON",
    "add_workload_arguments",
    "parse_mix",
    "workload_config",
]

DEFAULT_GPUS = 64
DEFAULT_JOBS = 1000
_GPUS_HELP = "GPUs in the cluster (default 64; with --trace: sized to the trace's load)"
_JOBS_HELP = "jobs to submit (default {jobs}; with --trace: every job of the window)"


def parse_mix(text: str) -> dict[JobKind, float]:
    """Parse ``rlhf=0.6,dpo=0.25,lora=0.15`` into shares; CliError on anything else."""
    mix: dict[JobKind, float] = {}
    kinds = {kind.value: kind for kind in JobKind}
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        if not eq or name.strip().lower() not in kinds:
            raise CliError(
                f"--mix: bad entry {part.strip()!r}; write kind=share for kinds "
                f"{', '.join(kinds)}, e.g. rlhf=0.6,dpo=0.25,lora=0.15"
            )
        try:
            share = float(value)
        except ValueError:
            raise CliError(f"--mix: share {value!r} of {name} is not a number") from None
        if not (share >= 0 and math.isfinite(share)):
            raise CliError(f"--mix: share of {name} must be >= 0, got {value}")
        mix[kinds[name.strip().lower()]] = share
    total = sum(mix.values())
    if not 0 < total < math.inf:
        raise CliError("--mix: the shares must add up to a finite number above 0")
    return mix


def _default_mix() -> str:
    return ",".join(f"{kind.value}={share:g}" for kind, share in DEFAULT_MIX.items())


def add_workload_arguments(parser: argparse.ArgumentParser, *, jobs: int = DEFAULT_JOBS) -> None:
    """Add the workload and cluster options to ``parser``."""
    group = parser.add_argument_group("workload and cluster")
    group.add_argument("--gpus", type=int, default=None, help=_GPUS_HELP)
    group.add_argument("--jobs", type=int, default=None, help=_JOBS_HELP.format(jobs=jobs))
    group.add_argument(
        "--arrival-rate",
        type=float,
        default=None,
        metavar="PER_HOUR",
        help="Poisson arrivals per hour (default: set from --load)",
    )
    group.add_argument(
        "--load",
        type=float,
        default=0.9,
        help="offered load used when --arrival-rate is not given (default 0.9)",
    )
    group.add_argument(
        "--mix",
        type=parse_mix,
        default=dict(DEFAULT_MIX),
        help=f"job mix as kind=share pairs (default {_default_mix()})",
    )
    group.add_argument(
        "--hacking-share",
        type=float,
        default=0.6,
        help="fraction of RLHF jobs that reward-hack, 0 to 1 (default 0.6)",
    )
    group.add_argument(
        "--noise",
        type=float,
        default=None,
        help="eval-score noise sigma, in units of a run's gain (default: the world's, "
        f"{', '.join(f'{w.name} {w.eval_noise:g}' for w in WORLDS.values())})",
    )
    group.add_argument(
        "--world",
        choices=sorted(WORLDS),
        default=PAPER.name,
        help="the simulated world: curves, evaluation density and default noise "
        f"(default {PAPER.name}; see spec/curves.md CRV-7)",
    )
    group.add_argument(
        "--evals-per-run",
        type=int,
        default=None,
        metavar="N",
        help="evaluations planned over an RLHF run's estimated length (default: the world's)",
    )
    group.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")


def workload_config(args: argparse.Namespace) -> WorkloadConfig:
    """Validate the parsed options into a config; CliError names the bad option."""
    checks = [
        (args.gpus is None or args.gpus >= 1, f"--gpus must be >= 1, got {args.gpus}"),
        (args.jobs is None or args.jobs >= 1, f"--jobs must be >= 1, got {args.jobs}"),
        (
            args.arrival_rate is None
            or (args.arrival_rate > 0 and math.isfinite(args.arrival_rate)),
            f"--arrival-rate must be > 0, got {args.arrival_rate}",
        ),
        (args.load > 0 and math.isfinite(args.load), f"--load must be > 0, got {args.load}"),
        (
            0.0 <= args.hacking_share <= 1.0,
            f"--hacking-share must be in [0, 1], got {args.hacking_share}",
        ),
        (
            args.noise is None or (args.noise >= 0 and math.isfinite(args.noise)),
            f"--noise must be >= 0, got {args.noise}",
        ),
        (
            args.evals_per_run is None or args.evals_per_run >= 1,
            f"--evals-per-run must be >= 1, got {args.evals_per_run}",
        ),
        (args.seed >= 0, f"--seed must be >= 0, got {args.seed}"),
    ]
    for ok, message in checks:
        if not ok:
            raise CliError(message)
    config = WorkloadConfig(
        n_jobs=DEFAULT_JOBS if args.jobs is None else args.jobs,
        gpus=DEFAULT_GPUS if args.gpus is None else args.gpus,
        load=args.load,
        arrival_rate=args.arrival_rate,
        mix=args.mix,
        hacking_share=args.hacking_share,
        eval_noise=args.noise,
        world=args.world,
        evals_per_run=args.evals_per_run,
    )
    try:
        config.check_horizon()  # WRK-6, said with the option's name
    except ValueError as error:
        option = "--arrival-rate" if args.arrival_rate is not None else "--load"
        raise CliError(f"{option}: {str(error).split(': ', 1)[1]}; raise it") from None
    return config
