"""``evalstop watch``: a sidecar that follows live runs and stops the ones that decline.

Every poll it lists the runs under each DIR (each sub-folder is a run; new ones are picked up)
and, with ``--mlflow``, the runs of an MLflow experiment; it folds each run's new evaluations
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
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, get_args

from evalstop.cli.errors import CliError
from evalstop.cli.knobs import add_knobs, knobs
from evalstop.cli.watch_slurm import add_slurm_arguments, slurm_runs
from evalstop.core.detectors import Detector
from evalstop.core.registry import DETECTOR_NAMES, make_detector
from evalstop.live.direction import ModeChoice
from evalstop.live.monitor import Monitor
from evalstop.live.store import StateError, StateStore
from evalstop.live.watch import Run, Watcher, watch

if TYPE_CHECKING:
    from evalstop.adapters.slurm import SlurmRuns
from evalstop.traces.follow import discover_runs

__all__ = ["MARKER", "add_arguments", "run"]

MARKER = "evalstop-stop.json"
"""The marker file written in a stopped run's folder (the callbacks' ``stop_file``)."""

_FIELDS = (
    "run",
    "name",
    "path",
    "metric",
    "detector",
    "stop_step",
    "best_step",
    "best_value",
    "evals",
)
# stopat needs a run's length, which a live run does not know.
_LIVE_DETECTORS = tuple(name for name in DETECTOR_NAMES if not name.startswith("stopat"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="*", metavar="DIR", help="folders of runs to follow")
    parser.add_argument("--metric", metavar="KEY", required=True, help="the eval metric")
    parser.add_argument("--k", type=int, help="declines that trigger evalstop")
    parser.add_argument(
        "--mode",
        choices=get_args(ModeChoice),
        help="as for replay (default: the monitor's, auto: from the metric's name)",
    )
    parser.add_argument(
        "--detector",
        choices=_LIVE_DETECTORS,
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
        metavar="CMD",
        help="shell command run at each stop; {run}, {name}, {path}, {stop_step}, {best_step}, "
        "{best_value}, {metric}, {detector} are replaced by the run's (shell-quoted) fields",
    )
    add_knobs(parser)
    add_slurm_arguments(parser)


def _substitute(template: str, body: dict[str, Any]) -> str:
    fields = {name: shlex.quote("" if body[name] is None else str(body[name])) for name in _FIELDS}
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError) as error:
        raise CliError(f"--on-stop: bad placeholder in {template!r} ({error})") from None


def _write_marker(folder: str, body: dict[str, Any]) -> None:
    path = Path(folder) / MARKER
    temporary = path.with_name(f".{MARKER}.tmp")
    temporary.write_text(json.dumps(body, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _announcer(args: argparse.Namespace) -> Callable[[dict[str, Any]], None]:
    def announce(body: dict[str, Any]) -> None:
        if body["path"] is not None:
            try:
                _write_marker(body["path"], body)
            except OSError as error:
                _report(f"{body['path']}: cannot write {MARKER} ({error.strerror})")
        print(json.dumps(body, allow_nan=False), flush=True)

    return announce


def _actor(
    args: argparse.Namespace,
    mark: Callable[[dict[str, Any]], None] | None,
    slurm: SlurmRuns | None = None,
) -> Callable[[dict[str, Any]], None]:
    def act(body: dict[str, Any]) -> None:
        for problem in [] if slurm is None else slurm.act(body):
            _report(problem)
        if body["path"] is None and mark is not None:
            try:
                mark(body)
            except Exception as error:  # the tracking server's own errors
                _report(f"{body['run']}: cannot tag the run ({error})")
        if args.on_stop:
            command = _substitute(args.on_stop, body)
            code = subprocess.run(command, shell=True, check=False).returncode
            if code != 0:
                _report(f"{body['run']}: --on-stop exited with {code}")

    return act


def _report(message: str) -> None:
    print(f"evalstop watch: {message}", file=sys.stderr, flush=True)


def _check(args: argparse.Namespace) -> list[Path]:
    if args.k is not None and args.k < 1:
        raise CliError(f"--k must be >= 1, got {args.k}")
    if not args.interval > 0:
        raise CliError(f"--interval must be > 0, got {args.interval}")
    if not args.dirs and args.mlflow is None and not args.slurm:
        raise CliError("give at least one DIR or --mlflow URI, or --slurm")
    if args.experiment is not None and args.mlflow is None:
        raise CliError("--experiment needs --mlflow")
    roots = [Path(d) for d in args.dirs]
    for root in roots:
        if not root.is_dir():
            raise CliError(f"{root}: not a directory")
    if args.on_stop:
        _substitute(args.on_stop, dict.fromkeys(_FIELDS, 0))
    return roots


def _new_monitor(args: argparse.Namespace) -> Callable[[], Monitor]:
    """The monitor factory: the options given, the monitor's own defaults for the others."""
    detector: Detector[Any] | None = None
    given = knobs(args)
    if args.detector is not None or args.k is not None or given:
        default = "noise-aware" if given and args.k is None else "evalstop"
        name = default if args.detector is None else args.detector
        try:
            detector = make_detector(name, **({} if args.k is None else {"k": args.k}), **given)
        except ValueError as error:
            raise CliError(str(error)) from None
    options: dict[str, Any] = {} if args.mode is None else {"mode": args.mode}
    return lambda: Monitor(detector, metric=args.metric, **options)


def run(args: argparse.Namespace) -> int:
    roots = _check(args)
    new_monitor = _new_monitor(args)
    template = new_monitor()
    settings = {"metric": args.metric, "mode": template.mode, "detector": template.detector.name}
    mlflow = None
    if args.mlflow is not None:
        from evalstop.adapters.mlflow import MlflowRuns

        try:
            mlflow = MlflowRuns(args.mlflow, args.experiment, args.metric)
        except ImportError as error:
            raise CliError(str(error)) from None
    slurm = slurm_runs(args, args.metric)
    stopping = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    # Before the state file is locked: a watcher that holds the lock handles SIGTERM.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        store = StateStore(args.state, settings)
    except StateError as error:
        _restore(previous)
        raise CliError(str(error)) from None

    reported: set[str] = set()

    def discover() -> list[Run]:
        runs, problems = discover_runs(roots, args.metric, args.step_column)
        if mlflow is not None:
            found, trouble = mlflow.runs()
            runs.extend(found)
            problems.extend(trouble)
        if slurm is not None:
            found, trouble = slurm.runs()
            runs.extend(found)
            problems.extend(trouble)
        for problem in problems:
            if problem not in reported:
                reported.add(problem)
                _report(problem)
        return runs

    try:
        watcher = Watcher(
            store,
            args.metric,
            new_monitor,
            _announcer(args),
            _report,
            _actor(args, None if mlflow is None else mlflow.mark, slurm),
        )
        watch(watcher, discover, interval=args.interval, once=args.once, stopping=lambda: stopping)
    finally:
        store.close()
        _restore(previous)
    return 0


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
