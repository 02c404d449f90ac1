"""Cutting a cluster trace to a window and fitting it to a cluster (spec ``PHL-2``, ``PHL-3``).

A trace's jobs are selected by an arrival window, tenants and a minimum duration, then fitted
to a cluster:

- with a cluster size given, jobs wider than the cluster are capped at its size and arrival
  times are multiplied by one factor so that the offered load (GPU-seconds demanded per
  second of the arrival span, over the cluster's GPUs) equals the target load: the trace's
  arrival pattern, durations and widths are kept, only its pace changes;
- without one, the cluster is sized to the trace: the smallest multiple of 8 GPUs (a server)
  at which the offered load is at most the target, and at least the widest job; arrivals
  keep their real times.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence

import attrs

from evalstop.sim.tables import JobRecord, JobTable, TableError

__all__ = [
    "SERVER_GPUS",
    "FittedTrace",
    "TraceWindow",
    "fit_to_cluster",
    "offered_demand",
    "parse_window",
    "select",
]

SERVER_GPUS = 8
"""A cluster sized to a trace is a whole number of 8-GPU servers (Philly's larger servers)."""

_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}
_OFFSET = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


@attrs.frozen(slots=True)
class TraceWindow:
    """Arrivals in ``[start, end)`` seconds from the trace's first arrival (end None: open)."""

    start: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    end: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"window end {self.end} s must be after its start {self.start} s")

    def contains(self, arrival: int) -> bool:
        return arrival >= self.start and (self.end is None or arrival < self.end)


def _bound(text: str, origin: dt.datetime | None) -> int | None:
    text = text.strip()
    if not text:
        return None
    match = _OFFSET.match(text)
    if match:
        return round(float(match.group(1)) * _UNITS[match.group(2) or "s"])
    try:
        stamp = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither an offset (e.g. 7d, 12h, 3600) nor an ISO date"
        ) from None
    if origin is None:
        raise ValueError(f"{text!r} is a date, but this trace's arrivals are plain seconds")
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return max(0, math.ceil((stamp - origin).total_seconds()))


def parse_window(text: str, origin: dt.datetime | None = None) -> TraceWindow:
    """Parse ``START..END``: each an offset from the first arrival (``3600``, ``12h``, ``7d``),
    an ISO date or time when the trace has timestamps, or empty for open (``PHL-2``)."""
    start_text, dots, end_text = text.partition("..")
    if not dots:
        raise ValueError(f"bad window {text!r}; write START..END, e.g. 2017-10-02..2017-10-09")
    start = _bound(start_text, origin)
    return TraceWindow(0 if start is None else start, _bound(end_text, origin))


def select(
    table: JobTable,
    *,
    window: TraceWindow | None = None,
    tenants: frozenset[str] | None = None,
    min_duration: int = 0,
    limit: int | None = None,
) -> tuple[JobRecord, ...]:
    """The table's jobs in ``window``, of ``tenants``, lasting at least ``min_duration`` s, in
    arrival order, the first ``limit`` of them; shifted so the first arrives at 0 (``PHL-2``).

    A job with only a step count passes the duration filter. No job left is a TableError.
    """
    kept = sorted(
        (
            r
            for r in table.records
            if (window is None or window.contains(r.arrival))
            and (tenants is None or r.tenant in tenants)
            and (r.duration is None or r.duration >= min_duration)
        ),
        key=lambda r: r.arrival,
    )
    if limit is not None:
        kept = kept[:limit]
    if not kept:
        raise TableError(table.source, None, None, "no job left after the window and filters")
    origin = kept[0].arrival
    if origin == 0:  # already shifted (a table's earliest job arrives at 0, TAB-1)
        return tuple(kept)
    return tuple(attrs.evolve(r, arrival=r.arrival - origin) for r in kept)


def offered_demand(records: Sequence[JobRecord]) -> float:
    """GPU-seconds demanded per second of the arrival span (a span of at least one second);
    a job with only a step count counts as no work."""
    span = max(1, max(r.arrival for r in records) - min(r.arrival for r in records))
    return sum(r.gpus * (r.duration or 0) for r in records) / span


@attrs.frozen(slots=True)
class FittedTrace:
    """Records fitted to a cluster, and how (``PHL-3``)."""

    records: tuple[JobRecord, ...]
    gpus: int
    time_scale: float
    capped: int
    offered_load: float

    def describe(self) -> dict[str, float | int]:
        """JSON-ready: the cluster, the arrival time scale, capped jobs, the offered load."""
        return {
            "jobs": len(self.records),
            "gpus": self.gpus,
            "time_scale": self.time_scale,
            "capped_jobs": self.capped,
            "offered_load": self.offered_load,
        }


def fit_to_cluster(
    records: Sequence[JobRecord], *, load: float, gpus: int | None = None
) -> FittedTrace:
    """Fit ``records`` to ``gpus`` at ``load``, or size the cluster when ``gpus`` is None."""
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"load must be > 0, got {load}")
    if not records:
        raise ValueError("no records to fit")
    if gpus is None:
        demand = offered_demand(records)
        sized = SERVER_GPUS * max(1, math.ceil(demand / load / SERVER_GPUS))
        widest = max(r.gpus for r in records)
        gpus = max(sized, widest)
        return FittedTrace(tuple(records), gpus, 1.0, 0, demand / gpus)
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    capped = sum(1 for r in records if r.gpus > gpus)
    fitted = [attrs.evolve(r, gpus=gpus) if r.gpus > gpus else r for r in records]
    scale = offered_demand(fitted) / (load * gpus)
    scaled = tuple(attrs.evolve(r, arrival=round(r.arrival * scale)) for r in fitted)
    return FittedTrace(scaled, gpus, scale, capped, offered_demand(scaled) / gpus)
