"""``evalstop watch``: a sidecar that follows live runs and stops the ones that decline.

Every poll it lists the runs under each DIR (each sub-folder is a run; new ones are picked up)
and, with ``--mlflow``, the runs of an MLflow experiment, with ``--slurm`` the running Slurm jobs
of a filter (spec ``SLM``); it folds each run's new evaluations
of ``--metric`` into that run's monitor and, when the rule fires, prints one JSON line, writes
the marker file ``evalstop-stop.json`` in the run folder (an MLflow run gets the tag
``evalstop.stop``) and runs ``--on-stop`` with the run's fields substituted (spec ``WCH``).
State lives in one SQLite file (``--state``): the watcher can be killed at any moment and
restarted. SIGTERM and SIGINT end it after the transaction in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, get_args

from evalstop.cli.errors import CliError
from evalstop.cli.knobs import add_knobs, add_side_options, build_detector, knobs
from evalstop.cli.watch_slurm import add_slurm_arguments, slurm_runs
from evalstop.core.registry import LIVE_DETECTORS
from evalstop.live.direction import ModeChoice, UnknownDirectionError
from evalstop.live.monitor import Monitor
from evalstop.watch.actions import ActionRunner, CommandError, argv_template
from evalstop.watch.bounded import BoundedListing
from evalstop.watch.folders import FolderRuns
from evalstop.watch.slurm import SlurmRuns
from evalstop.watch.source import Run, RunSource, Sides
from evalstop.watch.store import StateError, StateStore
from evalstop.watch.watcher import Watcher, watch

__all__ = ["MARKER", "add_arguments", "run"]

MARKER = "evalstop-stop.json"
"""The marker file written in a stopped run's folder (the callbacks' ``stop_file``)."""

GRACE = 5.0
"""Seconds a SIGTERM leaves running ``--on-stop`` commands before they are killed (and redone
at the next start): the watcher ends well within 10 s (``WCH-7``)."""

DEADLINE = 8.0
"""Seconds after a SIGTERM or SIGINT by which the watcher has exited, whatever it is blocked in
(a source whose server never answers): then it exits at once, the state file left as a
SIGKILL leaves it, which loses nothing (``WCH-15``, ``WCH-3``)."""


def _exit_at(deadline: float) -> threading.Timer:
    """Exit the process ``deadline`` seconds from now unless the returned timer is cancelled
    (``run`` cancels it when it returns in time)."""

    def force() -> None:
        _report(
            f"still busy {deadline:g} s after the signal (a source that does not answer?); "
            "exiting now, a restart goes on from the last commit"
        )
        os._exit(0)

    timer = threading.Timer(deadline, force)
    timer.daemon = True
    timer.start()
    return timer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="*", metavar="DIR", help="folders of runs to follow")
    parser.add_argument("--metric", metavar="KEY", required=True, help="the eval metric")
    parser.add_argument("--k", type=int, help="declines that trigger evalstop")
    add_side_options(parser)
    parser.add_argument(
        "--mode",
        choices=get_args(ModeChoice),
        help="as for replay (default: the monitor's, auto: from the metric's name)",
    )
    parser.add_argument(
        "--detector",
        choices=LIVE_DETECTORS,
        help="the stop rule (default: the monitor's); stopat needs a run's length, which a "
        "live run does not know",
    )
    parser.add_argument("--step-column", metavar="NAME", help="step column or key (CSV, JSONL)")
    parser.add_argument("--mlflow", metavar="URI", help="also follow the runs of this tracking URI")
    parser.add_argument("--experiment", metavar="NAME", help="MLflow experiment (default: all)")
    parser.add_argument(
        "--state", metavar="PATH", default="evalstop-watch.sqlite", help="SQLite state file"
    )
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between polls")
    parser.add_argument("--once", action="store_true", help="poll once and exit (cron)")
    parser.add_argument(
        "--on-stop",
        metavar="ARGV",
        help="command run at each stop, without a shell: split like a shell line, then "
        "{run}, {name}, {path}, {stop_step}, {best_step}, {best_value}, {metric}, {detector}, "
        "{evals} replaced inside each argument (a field is one argument, never re-parsed); the "
        "same facts are in EVALSTOP_RUN, EVALSTOP_NAME, ... Its output goes to stderr",
    )
    parser.add_argument(
        "--on-stop-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="kill an --on-stop command still running after this long, and leave behind a "
        "source's own stop action (an MLflow tag) that has not returned (default 60)",
    )
    parser.add_argument(
        "--on-stop-jobs",
        type=int,
        default=4,
        metavar="N",
        help="--on-stop commands run at once (default 4)",
    )
    add_knobs(parser)
    add_slurm_arguments(parser)


def _write_marker(folder: str, body: dict[str, Any]) -> None:
    path = Path(folder) / MARKER
    temporary = path.with_name(f".{MARKER}.tmp")
    temporary.unlink(missing_ok=True)  # never write through a symlink planted there
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(body, allow_nan=False) + "\n")
    os.replace(temporary, path)


def _announce(body: dict[str, Any]) -> None:
    if body["path"] is not None:
        try:
            _write_marker(body["path"], body)
        except OSError as error:
            _report(f"{body['path']}: cannot write {MARKER} ({error.strerror or error})")
    print(json.dumps(body, allow_nan=False), flush=True)


def _report(message: str) -> None:
    print(f"evalstop watch: {message}", file=sys.stderr, flush=True)


def _check(args: argparse.Namespace) -> list[Path]:
    if args.k is not None and args.k < 1:
        raise CliError(f"--k must be >= 1, got {args.k}")
    if not args.interval > 0:
        raise CliError(f"--interval must be > 0, got {args.interval}")
    if not args.on_stop_timeout > 0:
        raise CliError(f"--on-stop-timeout must be > 0, got {args.on_stop_timeout}")
    if args.on_stop_jobs < 1:
        raise CliError(f"--on-stop-jobs must be >= 1, got {args.on_stop_jobs}")
    if not args.dirs and args.mlflow is None and not args.slurm:
        raise CliError("give at least one DIR or --mlflow URI, or --slurm")
    if args.experiment is not None and args.mlflow is None:
        raise CliError("--experiment needs --mlflow")
    roots = [Path(d) for d in args.dirs]
    for root in roots:
        if not root.is_dir():
            raise CliError(f"{root}: not a directory")
    return roots


def _new_monitor(args: argparse.Namespace) -> Callable[[], Monitor]:
    """The monitor factory: the options given, the monitor's own defaults for the others."""
    try:
        detector = build_detector(args.detector, args.k, knobs(args))
    except ValueError as error:
        raise CliError(str(error)) from None
    options: dict[str, Any] = {} if args.mode is None else {"mode": args.mode}
    return lambda: Monitor(detector, metric=args.metric, **options)


def _sources(args: argparse.Namespace, roots: list[Path]) -> list[RunSource]:
    sides = _sides(args)
    sources: list[RunSource] = [FolderRuns(roots, args.metric, args.step_column, sides)]
    if args.mlflow is not None:
        from evalstop.watch.mlflow import MlflowRuns

        try:
            sources.append(MlflowRuns(args.mlflow, args.experiment, args.metric))
        except ImportError as error:
            raise CliError(str(error)) from None
    slurm = slurm_runs(args, args.metric, sides, _report)
    if slurm is not None:
        sources.append(slurm)
    return sources


def _sides(args: argparse.Namespace) -> Sides:
    """The side signals read beside ``--metric`` (``WCH-16``)."""
    given = frozenset(n for n in (args.proxy_metric, args.kl_metric) if n is not None)
    proxy = "proxy_reward" if args.proxy_metric is None else args.proxy_metric
    kl = "kl" if args.kl_metric is None else args.kl_metric
    return Sides(proxy, kl, given)


def _settings(args: argparse.Namespace, template: Monitor) -> dict[str, Any]:
    """What a state file must have been made with: the rule's inputs (``WCH-5``). A side
    signal's key is recorded only when given, so a state made before the options still fits."""
    settings = {"metric": args.metric, "mode": template.mode, "detector": template.detector.name}
    for key, name in (("proxy_metric", args.proxy_metric), ("kl_metric", args.kl_metric)):
        if name is not None:
            settings[key] = name
    return settings


def _discoverer(sources: list[RunSource], wait: float) -> Callable[[], list[Run]]:
    """Every source's runs at each poll; a server's listing is waited for at most ``wait``
    seconds (``WCH-15``). Folders are listed directly (their reads are bounded already), and
    so are Slurm jobs: each Slurm command has its own timeout (``SLM``)."""
    reported: set[str] = set()
    direct = (FolderRuns, SlurmRuns)
    listings = [s if isinstance(s, direct) else BoundedListing(s, wait) for s in sources]

    def discover() -> list[Run]:
        runs: list[Run] = []
        for source in listings:
            found, problems = source.runs()
            runs.extend(found)
            for problem in problems:
                if problem not in reported:
                    reported.add(problem)
                    _report(problem)
        return runs

    return discover


def run(args: argparse.Namespace) -> int:
    roots = _check(args)
    try:
        argv = None if args.on_stop is None else argv_template(args.on_stop)
    except CommandError as error:
        raise CliError(str(error)) from None
    new_monitor = _new_monitor(args)
    try:
        template = new_monitor()
    except UnknownDirectionError as error:
        raise CliError(f"--metric: {error}") from None
    settings = _settings(args, template)
    sources = _sources(args, roots)
    stopping = False

    timers: list[threading.Timer] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if not stopping:
            timers.append(_exit_at(DEADLINE))
        stopping = True

    # Before the state file is locked: a watcher that holds the lock handles SIGTERM.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        store = StateStore(args.state, settings)
    except StateError as error:
        _restore(previous, timers)
        raise CliError(str(error)) from None
    runner = ActionRunner(
        sources, argv, timeout=args.on_stop_timeout, jobs=args.on_stop_jobs, report=_report
    )
    try:
        watcher = Watcher(store, args.metric, new_monitor, _announce, _report, runner)
        try:
            watch(
                watcher,
                _discoverer(sources, max(1.0, args.interval)),
                interval=args.interval,
                once=args.once,
                stopping=lambda: stopping,
                idle=lambda: not runner.busy(),
            )
        finally:
            runner.close(GRACE)
        watcher.deliver_pending()  # record the actions that finished meanwhile
    except StateError as error:
        raise CliError(str(error)) from None
    except sqlite3.Error as error:
        raise CliError(
            f"{args.state}: cannot write the state file ({error}); nothing of the poll in "
            "flight was recorded, a restart reads it again"
        ) from None
    finally:
        store.close()
        _restore(previous, timers)
    return 0


def _restore(previous: dict[signal.Signals, Any], timers: list[threading.Timer]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    for timer in timers:
        timer.cancel()  # ended in time
