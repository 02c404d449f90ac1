"""``evalstop gym``: generate real overoptimisation runs with their hidden truth (spec ``GYM``).

``evalstop gym --runs N --seed S --out DIR`` writes ``DIR/run-NNNN/metrics.jsonl`` (what a
platform observes, readable by ``evalstop replay`` and ``evalstop watch``),
``DIR/run-NNNN/truth.json`` and ``DIR/summary.json``. A knob left unset is drawn per run from
the distribution of ``GYM-5``; one set is used by every run. ``--split dev|test`` starts at
the split's first seed instead of ``--seed``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalstop.cli.errors import CliError
from evalstop.cli.progress import ProgressBar
from evalstop.experiments.paper.ray_backend import BackendError, RayBackend
from evalstop.experiments.paper.runner import default_workers, max_workers
from evalstop.gym.config import KNOB_LIMITS, ConfigError
from evalstop.gym.corpora import GymError, write_runs
from evalstop.gym.generate import WorkerError
from evalstop.gym.splits import SPLIT_SIZE, SPLITS

__all__ = ["add_arguments", "run"]

_KNOB_HELP = {
    "proxy_samples": ("N", int, "initial-policy samples the proxy is fitted on"),
    "kl_coef": ("C", float, "KL penalty coefficient"),
    "lr": ("LR", float, "policy-gradient step size"),
    "steps": ("N", int, "optimisation steps a run"),
    "evals": ("N", int, "evaluations (checkpoints) a run, from step 0 to the last"),
    "eval_samples": ("N", int, "held-out responses each evaluation averages gold over"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=100, help="runs to generate (100)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--seed", type=int, default=0, help="seed of the first run (0)")
    where.add_argument(
        "--split", choices=sorted(SPLITS), help="start at the split's first seed (GYM-8)"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--workers", type=int, default=None, help=f"worker processes ({default_workers()})"
    )
    parser.add_argument(
        "--backend",
        choices=("process", "ray"),
        default="process",
        help="local worker processes (default) or Ray tasks (evalstop[ray])",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="with --backend ray: an existing Ray cluster",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    group = parser.add_argument_group("knobs (unset: drawn per run, GYM-5)")
    for name, (metavar, kind, text) in _KNOB_HELP.items():
        low, high = KNOB_LIMITS[name]
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=None,
            metavar=metavar,
            help=f"{text} ({low:g} to {high:g})",
        )


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.runs <= SPLIT_SIZE * 100:
        raise CliError(f"--runs {args.runs}: must be between 1 and {SPLIT_SIZE * 100}")
    start = SPLITS[args.split] if args.split else args.seed
    if args.split and args.runs > SPLIT_SIZE:
        raise CliError(f"--runs {args.runs}: a split holds at most {SPLIT_SIZE} runs")
    if start < 0:
        raise CliError(f"--seed {start}: must be >= 0")
    workers = default_workers() if args.workers is None else args.workers
    if not 1 <= workers <= max_workers() and args.address is None:
        raise CliError(f"--workers {workers}: must be between 1 and {max_workers()}")
    if args.address is not None and args.backend != "ray":
        raise CliError("--address needs --backend ray")
    backend = RayBackend(address=args.address, cpus=workers) if args.backend == "ray" else None
    overrides = {
        name: getattr(args, name) for name in _KNOB_HELP if getattr(args, name) is not None
    }
    try:
        summary = write_runs(
            range(start, start + args.runs),
            args.out,
            overrides=overrides,
            workers=workers,
            backend=backend,
            progress=ProgressBar("gym", not args.no_progress, unit="runs"),
        )
    except (ConfigError, GymError, BackendError, WorkerError) as error:
        raise CliError(str(error)) from None
    labels = summary["labels"]
    print(
        f"{summary['runs']} runs in {args.out}: {labels['hacking']} hacking, "
        f"{labels['healthy']} healthy ({summary['time']['wall_seconds']:.1f} s)"
    )
    return 0
