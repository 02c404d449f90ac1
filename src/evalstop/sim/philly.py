"""Microsoft's Philly trace, shipped in the package, and cluster-trace workloads (spec ``PHL``).

``evalstop/data/philly.csv.gz`` holds the 82,247 jobs of the Philly GPU cluster (Sept-Dec
2017) as published with the Pollux artifact: submission timestamp, duration, GPUs, GPU-time and
virtual cluster; ``evalstop/data/PHILLY-PROVENANCE.txt`` beside it says where it comes from and
under which licence (spec ``PHL-1``). The trace has no job ids: a job is named ``philly-<line>``
after its line in the CSV (the header is line 1). Its virtual cluster is its tenant.

:class:`TraceSpec` names a trace (``"philly"`` or a CSV path and its columns), the jobs to keep
and the cluster to fit them to; :func:`trace_workload` attaches kinds, labels and curves by an
:class:`~evalstop.sim.attach.AttachRule` and a seed. The fitted trace is cached per process,
so a sweep's worker reads and fits a trace once for all its seeds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import attrs

from evalstop.engine.collector import without_collector
from evalstop.sim.attach import AttachRule, TableWorkload, workload_from_records
from evalstop.sim.fit import FittedTrace, fit_to_cluster, parse_window, select
from evalstop.sim.tables import JobTable, TableError, read_job_table

__all__ = [
    "PHILLY",
    "PHILLY_COLUMNS",
    "TraceSpec",
    "fitted_trace",
    "load_trace",
    "philly_provenance",
    "philly_table",
    "trace_workload",
]

PHILLY = "philly"
"""The name that selects the shipped trace wherever a trace path is accepted."""

PHILLY_COLUMNS: Mapping[str, str] = {
    "arrival": "timestamp",
    "duration": "duration",
    "gpus": "num_gpus",
    "tenant": "cluster",
}
"""The Philly CSV's headers for the table fields (its ``gpu_time`` column is not read)."""


def _data(name: str) -> resources.abc.Traversable:
    return resources.files("evalstop") / "data" / name


@functools.cache
@without_collector  # WRK-10: the table read and renamed, no reference cycles
def philly_table() -> JobTable:
    """Every job of the shipped trace, in file order (read once per process, ~82k rows)."""
    with resources.as_file(_data("philly.csv.gz")) as path:
        table = read_job_table(path, PHILLY_COLUMNS)
    records = tuple(attrs.evolve(r, job_id=f"philly-{r.job_id}") for r in table.records)
    return JobTable(PHILLY, records, table.origin)


def philly_provenance() -> str:
    """The shipped notice: source, commit, licence and measured facts of the trace."""
    return _data("PHILLY-PROVENANCE.txt").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=4)
def _read(path: str, columns: tuple[tuple[str, str], ...]) -> JobTable:
    return read_job_table(Path(path), dict(columns))


def load_trace(source: str, columns: Mapping[str, str] | None = None) -> JobTable:
    """``"philly"`` for the shipped trace, else a CSV path read with ``columns`` (TAB-3);
    cached per process so that workers of a sweep read a trace once."""
    if source == PHILLY:
        if columns:
            raise ValueError("the shipped Philly trace takes no --columns")
        return philly_table()
    return _read(source, tuple(sorted((columns or {}).items())))


@attrs.frozen(slots=True)
class TraceSpec:
    """Which jobs of which trace, on which cluster (``PHL-4``): hashable, so a sweep's workers
    can cache the fitted trace by it.

    ``window`` is ``START..END`` text (:func:`~evalstop.sim.fit.parse_window`); ``jobs`` keeps
    the first so many after the filters; ``gpus`` None sizes the cluster to the trace at
    ``load``, a number fits the trace to that many GPUs at ``load`` (``PHL-3``).
    """

    source: str = PHILLY
    columns: tuple[tuple[str, str], ...] = ()
    window: str | None = None
    tenants: frozenset[str] | None = None
    min_duration: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    jobs: int | None = None
    gpus: int | None = None
    load: float = 0.9

    def describe(self) -> dict[str, object]:
        """JSON-ready: the trace and its filters."""
        return {
            "source": self.source,
            "window": self.window,
            "tenant_filter": None if self.tenants is None else sorted(self.tenants),
            "min_duration": self.min_duration,
            "jobs_limit": self.jobs,
        }


@functools.lru_cache(maxsize=8)
def fitted_trace(spec: TraceSpec) -> FittedTrace:
    """The spec's jobs fitted to its cluster; TableError or ValueError naming the problem."""
    table = load_trace(spec.source, dict(spec.columns))
    try:
        window = None if spec.window is None else parse_window(spec.window, table.origin)
    except ValueError as error:
        raise TableError("--trace-window", None, None, str(error)) from None
    records = select(
        table,
        window=window,
        tenants=spec.tenants,
        min_duration=spec.min_duration,
        limit=spec.jobs,
    )
    return fit_to_cluster(records, load=spec.load, gpus=spec.gpus)


def trace_workload(
    spec: TraceSpec, rule: AttachRule | None = None, seed: int = 0
) -> tuple[TableWorkload, FittedTrace]:
    """The trace's jobs with kinds, labels and curves attached by ``rule`` and ``seed``."""
    fitted = fitted_trace(spec)
    return workload_from_records(fitted.records, rule, seed), fitted
