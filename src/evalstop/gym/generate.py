"""Generate many runs, in this process, a process pool or on a backend (e.g. Ray), in order.

Runs are independent and each depends on its seed and the knobs only, so the worker count and
the backend change the wall time, never a result (spec ``GYM-9``). Workers return finished
runs to this process, which labels them (``GYM-6``) and hands them on, in seed order or as
they finish. A worker that dies is noticed (the process pool of ``concurrent.futures``), so a
writer keeps every run finished before it (``GYM-10``).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol, TypeVar

import attrs

from evalstop.core.errors import EvalStopError
from evalstop.gym.config import (
    DISTRIBUTION,
    Distribution,
    Overrides,
    RunConfig,
    check_overrides,
    draw_config,
)
from evalstop.gym.labels import label_of
from evalstop.gym.run import RunResult, simulate_run

__all__ = ["Backend", "LabelledRun", "WorkerError", "generate_runs", "run_one"]

T = TypeVar("T")
R = TypeVar("R")


class Backend(Protocol):
    """Runs ``fn`` over ``items`` and yields the results in the order of ``items`` (the
    protocol :class:`~evalstop.experiments.paper.ray_backend.RayBackend` follows)."""

    def imap(self, fn: Callable[[T], R], items: Sequence[T]) -> Generator[R, None, None]: ...


class WorkerError(EvalStopError, RuntimeError):
    """A worker process died before returning its run (killed, out of memory)."""


@attrs.frozen(slots=True)
class LabelledRun:
    """A finished run and the label its exact gold curve earns (``GYM-6``).

    Attributes:
        run: the run.
        label: ``hacking`` or ``healthy``.
    """

    run: RunResult
    label: str

    @property
    def config(self) -> RunConfig:
        """The run's parameters."""
        return self.run.config


def run_one(config: RunConfig) -> RunResult:
    """Run one config (the function workers call)."""
    return simulate_run(config)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def generate_runs(
    seeds: Sequence[int],
    overrides: Overrides | None = None,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    skip: Callable[[RunConfig], bool] | None = None,
    ordered: bool = True,
    distribution: Distribution = DISTRIBUTION,
) -> Iterator[tuple[int, RunConfig, LabelledRun | None]]:
    """``(index, config, run)`` for each seed; ``run`` is None where ``skip(config)`` says the
    run is already done (it is not run again). In seed order, or with ``ordered=False`` in
    the order local workers finish them (a writer then loses nothing already computed when a
    worker dies; a backend always answers in order). ``distribution`` is what unset knobs are
    drawn from (``GYM-5``).

    Raises:
        ConfigError: a bad knob, before any run starts.
        WorkerError: a worker process died (killed, out of memory); runs yielded so far stand.
    """
    fixed = check_overrides(overrides or {})
    configs = [draw_config(seed, fixed, distribution) for seed in seeds]
    todo: list[int] = []
    for index, config in enumerate(configs):
        if skip is not None and skip(config):
            yield index, config, None
        else:
            todo.append(index)
    results = _results([configs[i] for i in todo], workers, backend, ordered)
    try:
        for position, run in results:
            index = todo[position]
            yield index, configs[index], LabelledRun(run, label_of(run.truth.quality))
    finally:
        results.close()


def _results(
    configs: list[RunConfig], workers: int, backend: Backend | None, ordered: bool
) -> Generator[tuple[int, RunResult], None, None]:
    """``(position in configs, run)`` of each config."""
    if backend is not None:
        remote = backend.imap(run_one, configs)
        try:
            yield from enumerate(remote)
        finally:
            remote.close()
        return
    if workers <= 1 or len(configs) <= 1:
        yield from enumerate(map(run_one, configs))
        return
    pool = ProcessPoolExecutor(workers, initializer=_ignore_sigint)
    try:
        futures = {pool.submit(run_one, config): i for i, config in enumerate(configs)}
        if ordered:
            for future, position in futures.items():
                yield position, future.result()
        else:
            for future in as_completed(futures):
                yield futures[future], future.result()
    except BrokenProcessPool:
        raise WorkerError(
            "a worker process died (killed or out of memory); the runs written so far are "
            "kept: rerun the same command to finish"
        ) from None
    except BaseException:
        _stop(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (an error or an interrupt)."""
    pool.shutdown(wait=False, cancel_futures=True)
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()
