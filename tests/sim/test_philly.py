"""The shipped Philly trace, windows, filters and fitting a trace to a cluster (PHL-1 to PHL-3)."""

from __future__ import annotations

import datetime as dt

import pytest

from evalstop.sim.fit import TraceWindow, fit_to_cluster, offered_demand, parse_window, select
from evalstop.sim.philly import (
    TraceSpec,
    fitted_trace,
    load_trace,
    philly_provenance,
    philly_table,
    trace_workload,
)
from evalstop.sim.tables import JobRecord, JobTable, TableError


def test_phl1_the_shipped_trace_and_its_notice() -> None:
    """PHL-1: 82,247 jobs with tenants and widths as PROVENANCE states; named by line."""
    table = philly_table()
    assert len(table.records) == 82_247
    assert table.origin == dt.datetime(2017, 9, 4, 10, 30, 41, tzinfo=dt.UTC)
    widths = [r.gpus for r in table.records]
    assert widths.count(1) == 76_627 and widths.count(8) == 1_643 and max(widths) == 128
    assert len({r.tenant for r in table.records}) == 15
    assert table.records[0].job_id == "philly-2" and min(r.arrival for r in table.records) == 0
    notice = philly_provenance()
    assert "Apache-2.0" in notice and "msr-fiddle/philly-traces" in notice
    assert load_trace("philly") is table


def _table(*arrivals: int, gpus: int = 1, duration: int = 100) -> JobTable:
    records = tuple(
        JobRecord(f"j{i}", a, gpus, duration=duration + i, tenant="ab"[i % 2])
        for i, a in enumerate(arrivals)
    )
    return JobTable("t", records)


def test_phl2_window_tenants_duration_and_limit() -> None:
    """PHL-2: [start, end) by arrival, tenants, minimum duration and a limit, shifted to 0."""
    table = _table(0, 10, 20, 30, 40, 50)
    kept = select(table, window=TraceWindow(10, 50))
    assert [r.job_id for r in kept] == ["j1", "j2", "j3", "j4"]
    assert [r.arrival for r in kept] == [0, 10, 20, 30]
    assert [r.job_id for r in select(table, tenants=frozenset({"a"}))] == ["j0", "j2", "j4"]
    assert [r.job_id for r in select(table, min_duration=104)] == ["j4", "j5"]
    assert [r.job_id for r in select(table, limit=2)] == ["j0", "j1"]
    with pytest.raises(TableError, match="no job left"):
        select(table, window=TraceWindow(60))


def test_phl2_parse_window() -> None:
    """PHL-2: offsets with units, ISO dates against the trace's origin, open sides, errors."""
    origin = dt.datetime(2017, 10, 1, tzinfo=dt.UTC)
    assert parse_window("1d..36h") == TraceWindow(86_400, 129_600)
    assert parse_window("90m..") == TraceWindow(5_400, None)
    assert parse_window("..3600") == TraceWindow(0, 3_600)
    assert parse_window("2017-10-02..2017-10-03", origin) == TraceWindow(86_400, 172_800)
    for text, needle in [
        ("7d", "START..END"),
        ("tomorrow..", "neither an offset"),
        ("2017-10-02..", "plain seconds"),
        ("5d..1d", "must be after"),
    ]:
        with pytest.raises(ValueError, match=needle):
            parse_window(text)


def test_phl3_fit_to_a_given_cluster_scales_time_to_the_load() -> None:
    """PHL-3: widths capped at the cluster, arrivals scaled so the offered load is the target;
    durations kept."""
    records = [JobRecord(f"j{i}", 100 * i, 4 if i else 16, duration=50) for i in range(11)]
    fitted = fit_to_cluster(records, load=0.5, gpus=8)
    assert fitted.capped == 1 and fitted.records[0].gpus == 8
    assert [r.duration for r in fitted.records] == [50] * 11
    assert fitted.offered_load == pytest.approx(0.5, rel=0.01)
    assert offered_demand(fitted.records) / 8 == pytest.approx(0.5, rel=0.01)
    # demand = (8 + 40) * 50 / 1000 s = 2.4 GPUs; at load 0.5 on 8 GPUs: time * 0.6
    assert fitted.time_scale == pytest.approx(0.6)


def test_phl3_size_the_cluster_to_the_trace() -> None:
    """PHL-3: without GPUs, the smallest multiple of 8 at or under the load, at least the
    widest job; real arrival times."""
    records = [JobRecord(f"j{i}", 10 * i, 1, duration=1000) for i in range(101)]
    fitted = fit_to_cluster(records, load=0.9)  # demand 101000/1000 = 101 GPUs
    assert fitted.gpus == 120 and fitted.time_scale == 1.0
    assert fitted.records == tuple(records)
    pair = [JobRecord("w", 0, 64, duration=10), JobRecord("n", 1000, 1, duration=10)]
    assert fit_to_cluster(pair, load=0.9).gpus == 64  # demand 0.65 GPUs: 8, but 64 wide


def test_phl4_trace_spec_is_cached_and_attached_by_seed() -> None:
    """PHL-4: a spec is fitted once per process; the attached workload depends on the seed."""
    spec = TraceSpec(window="2017-10-02..2017-10-03", jobs=300, gpus=64, load=0.9)
    assert fitted_trace(spec) is fitted_trace(spec)
    one, fitted = trace_workload(spec, seed=1)
    two, _ = trace_workload(spec, seed=2)
    assert len(one.jobs) == 300 and fitted.gpus == 64
    assert {j.spec.name for j in one.jobs} == {j.spec.name for j in two.jobs}
    assert [j.spec.kind for j in one.jobs] != [j.spec.kind for j in two.jobs]
    assert all(j.spec.name.startswith("philly-") for j in one.jobs if j.spec.name)
