"""``evalstop replay``: would a detector have stopped these recorded runs, and where?

Reads each PATH as a trace (format detected, or forced with ``--format``), runs the detector
over it through the online monitor and prints the stop step, the best checkpoint and the steps
a stop saves, as a table or JSON (spec ``RPL``). Every file is read before anything is
printed, so a bad file ends the command with one error line and no partial output.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from evalstop.cli.errors import CliError
from evalstop.cli.knobs import add_knobs, add_side_options, build_detector, knobs
from evalstop.core.registry import DEFAULT_DETECTOR, DETECTOR_NAMES, default_detector
from evalstop.experiments.tables import format_table
from evalstop.live.direction import UnknownDirectionError
from evalstop.traces import Trace, TraceError, TraceFormat, read_trace
from evalstop.traces.replay import ReplayResult, replay
from evalstop.traces.tensorboard import tensorboard_runs
from evalstop.watch.folders import run_sources
from evalstop.watch.follow import latest_trainer_state

__all__ = ["add_arguments", "parse_where", "render", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="training logs to replay")
    parser.add_argument("--metric", metavar="KEY", help="metric to replay (default: the only one)")
    parser.add_argument(
        "--k", type=int, help="declines that trigger evalstop (given alone: --detector evalstop)"
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "max", "min"),
        default="auto",
        help="auto (default): from the metric's name (min for a loss, error, mse, mae, nll, "
        "perplexity, wer, kl, ...; max for an accuracy, f1, auc, reward, score, ...; another "
        "name is an error asking for the mode); max: higher is better; min: lower is better",
    )
    parser.add_argument(
        "--detector",
        choices=DETECTOR_NAMES,
        help="evalstop (k declines), noise-aware (a drop beyond the run's own noise), "
        "lossplateau (patience 3), never, or stopat (fixed fraction of the run; replay knows "
        "each run's length), ewma, divergence, kl-budget, bocpd, learned (default: "
        f"{DEFAULT_DETECTOR}, the one default of every entry point, as for watch; --k alone: "
        "evalstop)",
    )
    parser.add_argument(
        "--fraction", type=float, default=0.65, help="progress at which stopat fires (0.65)"
    )
    add_knobs(parser)
    parser.add_argument(
        "--format",
        choices=[f.value for f in TraceFormat],
        default=None,
        help="force the file format instead of detecting it",
    )
    parser.add_argument(
        "--step-column", metavar="NAME", help="step column or key (CSV, W&B CSV, JSONL)"
    )
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COLUMN=VALUE",
        help="read only rows whose COLUMN equals VALUE (CSV, JSONL; repeatable)",
    )
    parser.add_argument(
        "--order",
        choices=("sort", "log"),
        default="sort",
        help="sort: order by step, a repeated step is an error (default); log: file order, "
        "a step that goes back is a restart that replaces the later records",
    )
    parser.add_argument(
        "--loss-metric",
        metavar="KEY",
        help="metric lossplateau watches (default: the replayed metric itself)",
    )
    add_side_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def parse_where(items: list[str]) -> dict[str, str]:
    """``["a=b", "c=d"]`` as ``{"a": "b", "c": "d"}``; CliError for an item without ``=``."""
    where: dict[str, str] = {}
    for item in items:
        column, eq, value = item.partition("=")
        if not eq or not column:
            raise CliError(f"--where: expected COLUMN=VALUE, got {item!r}")
        where[column] = value
    return where


def _trace(args: argparse.Namespace, path: str, metric: str | None) -> Trace:
    """``metric`` of the log at ``path``, read with the command's reading options."""
    return read_trace(
        path,
        metric,
        format=args.format,
        step_column=args.step_column,
        where=parse_where(args.where),
        order=args.order,
    )


def _read(args: argparse.Namespace, path: str, metric: str | None) -> Trace:
    try:
        return _trace(args, path, metric)
    except TraceError as error:
        raise CliError(str(error)) from None


def _side(args: argparse.Namespace, path: str, given: str | None, default: str) -> Trace | None:
    """The side signal ``given`` (an error when missing) or ``default`` (None when missing)."""
    if given is not None:
        return _read(args, path, given)
    try:
        return _trace(args, path, default)
    except TraceError:
        return None


def _run_logs(folder: Path) -> list[str]:
    """The logs ``evalstop watch`` reads in a run folder (``WCH-1``'s precedence), else those
    of each of its sub-folders (a folder of runs, as ``watch DIR`` takes); empty for none."""
    try:
        found = _logs_of(folder)
        if found:
            return found
        return [log for sub in sorted(folder.iterdir()) if sub.is_dir() for log in _logs_of(sub)]
    except OSError:
        return []  # the reader reports the folder itself


def _logs_of(folder: Path) -> list[str]:
    state = latest_trainer_state(folder)
    if state is not None:
        return [str(state)]
    return [source.key for source in run_sources(folder, "-") if source.key != str(folder)]


def _expand(paths: list[str], fmt: str | None) -> list[str]:
    """Each PATH, a TensorBoard log directory replaced by its runs, a run folder by the logs
    ``watch`` reads in it, a folder of runs by each run's (spec ``RPL-1``, ``RPL-10``)."""
    expanded: list[str] = []
    for path in paths:
        folder = Path(path)
        try:
            is_dir = folder.is_dir()
        except OSError:  # e.g. a name too long: the reader reports it
            is_dir = False
        runs = tensorboard_runs(folder) if is_dir and fmt in (None, "tensorboard") else []
        logs = _run_logs(folder) if is_dir and not runs and fmt is None else []
        if runs and runs != [folder]:
            expanded.extend(str(run) for run in runs)
        elif logs:
            expanded.extend(logs)
        else:
            expanded.append(path)
    return expanded


def _number(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.6g}"


def render(results: list[ReplayResult]) -> str:
    """The readable table of replay results."""
    first = results[0]
    rows = [
        [
            r.path,
            r.metric,
            str(r.n_evals),
            str(r.stop_step) if r.stopped else "-",
            "-" if r.best_step is None else str(r.best_step),
            _number(r.best_value),
            str(r.steps_saved),
            _number(r.regret),
        ]
        for r in results
    ]
    modes = sorted({r.mode for r in results})
    title = f"replay: {first.detector}, mode {'/'.join(modes)}"
    header = ["file", "metric", "evals", "stop step", "best step", "best", "steps saved", "regret"]
    for row, result in zip(rows, results, strict=True):
        row.append("-" if result.relative_regret is None else f"{result.relative_regret:.1%}")
        row.append(
            result.stop_class if result.stopped else "fired at end" if result.fired_at_end else "-"
        )
    header += ["regret / gain", "stop"]
    return format_table(header, rows, title=title)


def run(args: argparse.Namespace) -> int:
    if args.k is not None and args.k < 1:
        raise CliError(f"--k must be >= 1, got {args.k}")
    if not 0.0 < args.fraction <= 1.0:
        raise CliError(f"--fraction must be in (0, 1], got {args.fraction}")
    parse_where(args.where)
    try:
        detector = build_detector(args.detector, args.k, knobs(args), fraction=args.fraction)
    except ValueError as error:
        raise CliError(str(error)) from None
    if detector is None:
        detector = default_detector()  # the one default of every entry point (SIG-11)
    traces = [
        (
            _read(args, path, args.metric),
            None if args.loss_metric is None else _read(args, path, args.loss_metric),
            _side(args, path, args.proxy_metric, "proxy_reward"),
            _side(args, path, args.kl_metric, "kl"),
        )
        for path in _expand(args.paths, args.format)
    ]
    for trace, _, proxy, kl in traces:
        missing = [
            name
            for name, side in (("proxy_reward", proxy), ("kl", kl))
            if side is None and name in getattr(detector, "needs", ())
        ]
        if missing:  # SIG-8: said, never silent
            print(
                f"evalstop: note: {trace.path}: no {missing[0]} to read; {detector.name} "
                "judges it by its eval-only fallback (spec SIG-8)",
                file=sys.stderr,
            )
    try:
        results = [replay(trace, detector, args.mode, *sides) for trace, *sides in traces]
    except UnknownDirectionError as error:
        raise CliError(f"--metric: {error}") from None
    if args.json:
        payload: Any = [r.to_json_dict() for r in results]
        if len(payload) == 1:
            payload = payload[0]
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        print(render(results))
    return 0
