"""A workload's builders run with the cyclic garbage collector paused and make no reference
cycles (WRK-10)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalstop.core.model import JobKind
from evalstop.sim import attach, philly, tables, workload
from evalstop.sim.attach import AttachRule, workload_from_records
from evalstop.sim.philly import philly_table
from evalstop.sim.tables import TableError, read_job_table
from evalstop.sim.workload import (
    WorkloadConfig,
    generate,
    generate_noise_sweep,
    generate_sweep,
    sweep_jobs,
)

CONFIG = WorkloadConfig(n_jobs=60, gpus=16)
SWEEP = [CONFIG, WorkloadConfig(n_jobs=60, gpus=16, eval_noise=0.05, hacking_share=0.3)]
NOISES = [CONFIG, WorkloadConfig(n_jobs=60, gpus=16, eval_noise=0.05)]

BUILDS: dict[str, Callable[[Path], object]] = {  # each given a folder of its own
    "generate": lambda _: generate(CONFIG, seed=4),
    "generate_noise_sweep": lambda _: generate_noise_sweep(NOISES, seed=4),
    "generate_sweep": lambda _: generate_sweep(SWEEP, seed=4),
    "sweep_jobs": lambda _: sweep_jobs(SWEEP, seed=4, kind=JobKind.RLHF),
    "workload_from_records": lambda _: workload_from_records(philly_table().records[:300], seed=2),
    "read_job_table": lambda folder: read_job_table(_csv(folder)),
    "philly_table": lambda _: _uncached_philly_table(),
}
# a function each builder calls in its own module (once a job, or a row, or once the table
# is renamed): spied on to see the collector
STARTS = {
    "workload_from_records": (attach, "_start"),
    "read_job_table": (tables, "_parse_row"),
    "philly_table": (philly, "JobTable"),
}


def _csv(folder: Path) -> Path:
    """A small job table in ``folder``."""
    path = folder / "jobs.csv"
    rows = [f"{i},{i * 7},{1 + i % 4},{100 + i}" for i in range(200)]
    path.write_text("id,arrival,gpus,duration\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _uncached_philly_table() -> object:
    """The shipped table read afresh (it is cached once read, PHL-1)."""
    philly_table.cache_clear()
    return philly_table()


@pytest.fixture
def enabled() -> Iterator[None]:
    """The collector on, as a caller leaves it, and on again after the test."""
    gc.enable()
    yield
    gc.enable()


@pytest.mark.usefixtures("enabled")
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_wrk10_the_collector_is_paused_while_a_workload_is_built(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """WRK-10: the collector is off at every job a builder makes and on again after it."""
    module, function = STARTS.get(name, (workload, "_start"))
    seen: list[bool] = []
    original: Callable[..., Any] = getattr(module, function)

    def spied(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, function, spied)
    BUILDS[name](tmp_path)
    assert seen
    assert set(seen) == {False}
    assert gc.isenabled()


@pytest.mark.usefixtures("enabled")
def test_wrk10_the_collector_is_restored_when_a_build_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """WRK-10: a build that raises inside the pause leaves the collector on; one started with
    the collector off leaves it off; the caller's records are read before the pause."""

    def failing(*args: Any, **kwargs: Any) -> Any:
        assert not gc.isenabled()
        raise RuntimeError("boom")

    monkeypatch.setattr(workload, "_start", failing)
    with pytest.raises(RuntimeError, match="boom"):
        generate(CONFIG, seed=4)
    assert gc.isenabled()
    monkeypatch.undo()
    gc.disable()
    generate(CONFIG, seed=4)
    assert not gc.isenabled()
    gc.enable()

    def rows() -> Iterator[dict[str, object]]:
        assert gc.isenabled()  # a caller's generator runs with the collector as it left it
        yield {"arrival": 0, "gpus": 1, "duration": 10}
        yield {"arrival": 5, "gpus": 0, "duration": 10}

    with pytest.raises(TableError):
        workload_from_records(rows(), AttachRule())
    assert gc.isenabled()


@pytest.mark.usefixtures("enabled")
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_wrk10_a_build_leaves_no_cyclic_garbage(name: str, tmp_path: Path) -> None:
    """WRK-10: what the paused collector would have found after a build: nothing."""
    gc.collect()
    gc.disable()
    try:
        built = BUILDS[name](tmp_path)
        assert built
        del built
        assert gc.collect() == 0
    finally:
        gc.enable()
