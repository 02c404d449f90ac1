"""``evalstop watch --slurm``: the options that make a filter's Slurm jobs runs (spec ``SLM-7``).

``--slurm`` adds, at every poll, the running jobs of the filter (``--slurm-user``, default the
watcher's own user; ``--slurm-partition``; ``--slurm-name REGEX``) as runs, each read from the
run folder ``--slurm-folder`` finds; a stop sends ``--slurm-signal`` (default TERM) and, after
``--slurm-grace`` seconds (default 30) with the job still running, cancels it.
"""

from __future__ import annotations

import argparse
import os
import pwd
import signal
from collections.abc import Callable

from evalstop.cli.errors import CliError
from evalstop.watch.slurm import SlurmClient, SlurmRuns
from evalstop.watch.slurm_jobs import JobFilter, SlurmError, parse_folder_rule
from evalstop.watch.source import Sides

__all__ = ["add_slurm_arguments", "slurm_runs"]

_SIGNALS = frozenset(s.name.removeprefix("SIG") for s in signal.Signals if "_" not in s.name)
_OPTIONS = ("slurm_user", "slurm_partition", "slurm_name", "slurm_folder", "slurm_signal",
            "slurm_grace")  # fmt: skip


def add_slurm_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--slurm`` options of ``evalstop watch``."""
    group = parser.add_argument_group("Slurm jobs (spec SLM)")
    group.add_argument("--slurm", action="store_true", help="also follow the filter's Slurm jobs")
    group.add_argument("--slurm-user", metavar="NAME", help="their owner (default: yours)")
    group.add_argument("--slurm-partition", metavar="NAME", help="their partition (default: any)")
    group.add_argument("--slurm-name", metavar="REGEX", help="a pattern their whole name matches")
    group.add_argument(
        "--slurm-folder",
        metavar="RULE",
        help="where a job's run folder is: workdir (default), comment, or file:DIR (the job "
        "writes the path into DIR/<job id>)",
    )
    group.add_argument("--slurm-signal", metavar="NAME", help="the signal a stop sends (TERM)")
    group.add_argument(
        "--slurm-grace", metavar="SECONDS", type=float, help="then scancel after (default 30)"
    )


def _signal_name(text: str) -> str:
    name = text.upper().removeprefix("SIG")
    if name not in _SIGNALS:
        raise CliError(f"--slurm-signal: unknown signal {text!r}")
    return name


def slurm_runs(
    args: argparse.Namespace, metric: str, sides: Sides, report: Callable[[str], None]
) -> SlurmRuns | None:
    """The Slurm runs the options ask for, or None without ``--slurm``; their folders are
    read with the same side-signal keys as every other run folder (``WCH-16``).

    Raises:
        CliError: a bad option value, or a ``--slurm-*`` option without ``--slurm``.
    """
    if not args.slurm:
        for option in _OPTIONS:
            if getattr(args, option) is not None:
                raise CliError(f"--{option.replace('_', '-')} needs --slurm")
        return None
    grace = 30.0 if args.slurm_grace is None else args.slurm_grace
    if not grace >= 0:
        raise CliError(f"--slurm-grace must be >= 0, got {args.slurm_grace}")
    user = args.slurm_user if args.slurm_user is not None else pwd.getpwuid(os.geteuid()).pw_name
    try:
        job_filter = JobFilter(user, args.slurm_partition, args.slurm_name)
        rule = parse_folder_rule("workdir" if args.slurm_folder is None else args.slurm_folder)
    except SlurmError as error:
        raise CliError(str(error)) from None
    return SlurmRuns(
        SlurmClient(),
        job_filter,
        rule,
        metric,
        step_column=args.step_column,
        sides=sides,
        signal=_signal_name("TERM" if args.slurm_signal is None else args.slurm_signal),
        grace=grace,
        report=report,
    )
