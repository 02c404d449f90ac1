"""``--trace``: run ``simulate`` or ``reproduce`` on a cluster trace instead of a synthetic one.

``--trace philly`` is Microsoft's Philly trace shipped in the package; ``--trace PATH`` any CSV
whose headers ``--columns`` maps to the table fields (spec ``TAB-3``, ``PHL-4``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from evalstop.cli.errors import CliError
from evalstop.sim.attach import AttachRule, TableWorkload
from evalstop.sim.fit import FittedTrace
from evalstop.sim.philly import PHILLY, TraceSpec, trace_workload
from evalstop.sim.tables import FIELDS, TableError, parse_columns

__all__ = ["add_trace_arguments", "load_trace_workload", "trace_spec"]


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--trace``, ``--trace-window``, ``--columns`` and the trace filters."""
    group = parser.add_argument_group("cluster trace (instead of a synthetic workload)")
    group.add_argument(
        "--trace",
        metavar="philly|PATH",
        default=None,
        help="arrivals, durations, GPUs (and tenants) from a cluster trace: 'philly' (82,247 "
        "jobs of Microsoft's Philly cluster, shipped) or a CSV; kinds and curves are "
        "attached by the declared rule (spec TAB-4) with --seed",
    )
    group.add_argument(
        "--trace-window",
        metavar="START..END",
        default=None,
        help="only jobs submitted in [START, END): offsets from the first submission "
        "(3600, 12h, 7d) or ISO dates for a timestamped trace, e.g. 2017-10-02..2017-10-09; "
        "either side may be empty",
    )
    group.add_argument(
        "--columns",
        metavar="FIELD=HEADER,...",
        default=None,
        help=f"the CSV's headers for the table fields ({', '.join(FIELDS)}), e.g. "
        "arrival=submit_time,gpus=num_gpu,duration=duration",
    )
    group.add_argument(
        "--trace-tenants",
        metavar="A,B,...",
        default=None,
        help="only jobs of these tenants (Philly: virtual clusters)",
    )
    group.add_argument(
        "--trace-min-duration",
        type=int,
        default=0,
        metavar="SECONDS",
        help="only jobs that ran at least this long (default 0)",
    )


def trace_spec(
    args: argparse.Namespace, *, gpus: int | None, jobs: int | None, load: float
) -> TraceSpec | None:
    """The trace the options ask for, or None without ``--trace``; CliError on bad input."""
    if args.trace is None:
        for option, value in (
            ("--trace-window", args.trace_window),
            ("--columns", args.columns),
            ("--trace-tenants", args.trace_tenants),
        ):
            if value is not None:
                raise CliError(f"{option} needs --trace")
        return None
    source = str(args.trace)
    if source != PHILLY and not Path(source).is_file():
        raise CliError(f"--trace {source}: no such file (or 'philly' for the shipped trace)")
    columns: dict[str, str] = {}
    if args.columns is not None:
        if source == PHILLY:
            raise CliError("--columns: the shipped Philly trace needs none")
        try:
            columns = parse_columns(args.columns)
        except TableError as error:
            raise CliError(str(error)) from None
    if args.trace_min_duration < 0:
        raise CliError(f"--trace-min-duration must be >= 0, got {args.trace_min_duration}")
    if not (load > 0 and math.isfinite(load)):
        raise CliError(f"--load must be > 0, got {load}")
    tenants = None
    if args.trace_tenants is not None:
        tenants = frozenset(t.strip() for t in args.trace_tenants.split(",") if t.strip())
    return TraceSpec(
        source=source,
        columns=tuple(sorted(columns.items())),
        window=args.trace_window,
        tenants=tenants,
        min_duration=args.trace_min_duration,
        jobs=jobs,
        gpus=gpus,
        load=load,
    )


def load_trace_workload(
    spec: TraceSpec, rule: AttachRule, seed: int
) -> tuple[TableWorkload, FittedTrace]:
    """Read, cut, fit and attach; a bad trace or window is one CliError line."""
    try:
        return trace_workload(spec, rule, seed)
    except TableError as error:
        raise CliError(str(error)) from None
