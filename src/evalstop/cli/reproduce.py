"""``evalstop reproduce``: every experiment of the paper, tables beside the paper's figures."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import attrs

from evalstop.cli.cluster_trace import add_trace_arguments, load_trace_workload, trace_spec
from evalstop.cli.errors import CliError
from evalstop.cli.output import OutputDir
from evalstop.cli.progress import ProgressBar
from evalstop.experiments.paper.plan import FULL, QUICK, WORLD_NAMES, Settings, plan
from evalstop.experiments.paper.plots import plot_names, write_plots
from evalstop.experiments.paper.ray_backend import Backend, BackendError, RayBackend
from evalstop.experiments.paper.report import render_report
from evalstop.experiments.paper.results import Results, build_results, results_json
from evalstop.experiments.paper.runner import (
    MAX_WORKERS_PER_CPU,
    Drawn,
    default_workers,
    max_workers,
    run_audits,
    run_plan,
)
from evalstop.experiments.plotting import PLOTS_HINT, plots_available
from evalstop.experiments.scoreboard.board import Scoreboard
from evalstop.experiments.scoreboard.reproduce import (
    SCOREBOARD_FILES,
    reproduce_scoreboard,
    write_scoreboard,
)
from evalstop.sim.attach import AttachRule
from evalstop.sim.worlds import WORLDS

__all__ = ["OUTPUT_NAMES", "add_arguments", "run"]

OUTPUT_NAMES = (
    "report.txt",
    "results.json",
    *(f"{name}.png" for world in WORLD_NAMES for name in plot_names(world)),
    *SCOREBOARD_FILES,
)
"""Every file ``--out`` receives (the plots only with the ``plots`` extra)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK.seeds} seeds a cell and {QUICK.jobs} jobs (about a minute of CPU) "
        f"instead of {FULL.seeds} seeds and {FULL.jobs} jobs",
    )
    parser.add_argument("--seeds", type=int, default=None, help="seeds a cell (overrides)")
    parser.add_argument("--jobs", type=int, default=None, help="jobs a workload (overrides)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write results.json and the PNG plots here",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help=f"worker processes (default one per core: {default_workers()}; "
        f"at most {max_workers()})",
    )
    parser.add_argument(
        "--world",
        choices=sorted(WORLDS),
        action="append",
        default=None,
        help="run this world only (repeatable; default: every world, paper and calibrated)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_trace_arguments(parser)
    parser.add_argument(
        "--backend",
        choices=("process", "ray"),
        default="process",
        help="run the simulations in local worker processes (default) or as Ray tasks: on a "
        "fresh local Ray with --workers CPUs, or on the cluster at --address (evalstop[ray])",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="with --backend ray: an existing Ray cluster (HOST:PORT, ray://HOST:PORT or auto)",
    )


def run(args: argparse.Namespace) -> int:
    settings = QUICK if args.quick else FULL
    if args.seeds is not None:
        if args.seeds < 1:
            raise CliError(f"--seeds must be >= 1, got {args.seeds}")
        settings = attrs.evolve(settings, seeds=args.seeds)
    if args.jobs is not None:
        if args.jobs < 1:
            raise CliError(f"--jobs must be >= 1, got {args.jobs}")
        settings = attrs.evolve(settings, jobs=args.jobs)
    if args.world:
        settings = attrs.evolve(
            settings, worlds=tuple(name for name in WORLD_NAMES if name in args.world)
        )
    workers = default_workers() if args.workers is None else args.workers
    if workers < 1:
        raise CliError(f"--workers must be >= 1, got {workers}")
    if workers > max_workers() and args.address is None:
        raise CliError(
            f"--workers must be at most {max_workers()} ({MAX_WORKERS_PER_CPU} per CPU, "
            f"{default_workers()} CPU(s) here), got {workers}"
        )
    output = None if args.out is None else OutputDir(args.out, "--out", OUTPUT_NAMES)

    backend, where = _backend(args, workers)
    settings = _with_trace(args, settings)

    sims = plan(settings)
    started = time.perf_counter()
    progress = ProgressBar(f"{len(sims)} simulations", enabled=not args.no_progress)
    try:
        drawn: Drawn = {}  # the default workloads the audit reads (REP-13)
        figures = run_plan(
            settings, sims, workers=workers, progress=progress, backend=backend, drawn=drawn
        )
    except BackendError as error:
        raise CliError(str(error)) from None
    results = build_results(settings, figures, run_audits(settings, drawn))
    elapsed = time.perf_counter() - started
    report = render_report(results)
    # the scoreboard is synthetic: none on a trace, as no plots (SCB-5)
    scoreboard = None if settings.trace is not None else reproduce_scoreboard(settings)
    if scoreboard is not None:
        report = f"{report}\n\n{scoreboard.text}"
    print(report)
    print(f"\n{len(sims)} simulations in {elapsed:.1f} s on {where}")
    if scoreboard is not None:
        print(f"detector scoreboard: {scoreboard.cpu_seconds:.1f} s of CPU")
    if output is not None:
        board = None if scoreboard is None else scoreboard.board
        for path in _write(output, report, results, board):
            print(f"wrote {path}")
    return 0


def _with_trace(args: argparse.Namespace, settings: Settings) -> Settings:
    """``settings`` on the trace the options name (PHL-5); the trace is read and fitted here,
    before any worker starts, so that a bad one is one CLI line."""
    spec = trace_spec(args, gpus=settings.gpus, jobs=settings.jobs, load=settings.load)
    if spec is None:
        return settings
    load_trace_workload(spec, AttachRule(hacking_share=settings.hacking_share), 0)
    return attrs.evolve(settings, trace=spec)


def _backend(args: argparse.Namespace, workers: int) -> tuple[Backend | None, str]:
    """The backend the options ask for, and how the summary line names it (RAY-1, RAY-2)."""
    if args.backend == "ray":
        where = f"Ray at {args.address}" if args.address else f"a local Ray with {workers} CPU(s)"
        return RayBackend(address=args.address, cpus=workers), where
    if args.address is not None:
        raise CliError("--address needs --backend ray")
    return None, f"{workers} worker(s)"


def _write(
    output: OutputDir, report: str, results: Results, board: Scoreboard | None
) -> list[Path]:
    """Stage the report, the results, the scoreboard and the plots, then put them in place
    together."""
    with output:
        output.write_text("report.txt", report + "\n")
        output.write_text(
            "results.json",
            json.dumps(results_json(results), indent=2, sort_keys=True, allow_nan=False) + "\n",
        )
        if results.settings.trace is not None:
            print("no plots on a trace: they draw the synthetic sweeps")
        elif plots_available():
            try:
                write_plots(results, output.staging)
            except OSError as error:
                raise CliError(
                    f"--out {output.folder}: cannot write the plots ({error.strerror})"
                ) from None
        else:
            print(PLOTS_HINT)
        if board is not None:
            try:
                write_scoreboard(board, output.staging, plot=plots_available())
            except OSError as error:
                raise CliError(
                    f"--out {output.folder}: cannot write the scoreboard ({error.strerror})"
                ) from None
        return output.commit()
