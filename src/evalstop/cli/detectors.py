"""``evalstop detectors``: the regret-first scoreboard of every registered detector (``SCB``).

Runs :func:`evalstop.experiments.scoreboard.board.run_scoreboard`, prints its table, and writes
``scoreboard.json`` and (with matplotlib) ``scoreboard.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evalstop.cli.errors import CliError
from evalstop.cli.output import OutputDir
from evalstop.experiments.scoreboard.board import render, run_scoreboard, to_json
from evalstop.experiments.scoreboard.gym import GYM_RUNS
from evalstop.experiments.scoreboard.plot import write_plot

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="250 jobs a simulated workload instead of 1000"
    )
    parser.add_argument("--seed", type=int, default=1, help="workload seed (1)")
    parser.add_argument(
        "--gym-runs",
        type=int,
        default=None,
        help=f"gym test runs to score ({GYM_RUNS}; 50 with --quick; 0: no gym track)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="folder of real RLHF curves laid out as the corpus (default: the package's copy)",
    )
    parser.add_argument(
        "--healthy",
        type=Path,
        help="folder of CSVs of healthy runs (first column the step): every other column is "
        "scored as a healthy curve, its direction from its name",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("scoreboard"), help="where to write the JSON and PNG"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")


def run(args: argparse.Namespace) -> int:
    if args.seed < 0:
        raise CliError(f"--seed must be >= 0, got {args.seed}")
    if args.gym_runs is not None and not 0 <= args.gym_runs <= 10_000:
        raise CliError(f"--gym-runs must be between 0 and 10000, got {args.gym_runs}")
    for option, folder in (("--data", args.data), ("--healthy", args.healthy)):
        if folder is not None and not folder.is_dir():
            raise CliError(f"{option}: {folder} is not a folder")
    output = OutputDir(args.out, "--out", ("scoreboard.json", "scoreboard.png"))
    try:
        board = run_scoreboard(
            quick=args.quick,
            seed=args.seed,
            data=args.data,
            healthy=args.healthy,
            gym_runs=args.gym_runs,
        )
    except (ValueError, OSError) as error:
        raise CliError(str(error)) from None
    payload = to_json(board)
    with output:  # all or nothing, the previous files kept as .prev (spec REP-6)
        output.write_text("scoreboard.json", json.dumps(payload, indent=2, allow_nan=False) + "\n")
        try:
            write_plot(board, output.staging)
        except OSError as error:
            raise CliError(f"--out {args.out}: {error.strerror or error}") from None
        written = output.commit()
    if args.json:
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        print(render(board))
        print()
        print(render(board, board.tradeoff))
        print()
        print("wrote " + ", ".join(str(p) for p in written))
    return 0
