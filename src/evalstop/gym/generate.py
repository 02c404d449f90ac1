"""Generate many runs, in this process, a process pool or on a backend (e.g. Ray), in order.

Runs are independent and each depends on its seed and the knobs only, so the worker count and
the backend change the wall time, never a result (spec ``GYM-9``). Workers return finished
runs to this process, which labels them (``GYM-6``) and hands them on in seed order.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Protocol, TypeVar

import attrs

from evalstop.gym.config import Overrides, RunConfig, check_overrides, draw_config
from evalstop.gym.labels import label_of
from evalstop.gym.run import RunResult, simulate_run

__all__ = ["Backend", "LabelledRun", "generate_runs", "run_one"]

T = TypeVar("T")
R = TypeVar("R")


class Backend(Protocol):
    """Runs ``fn`` over ``items`` and yields the results in the order of ``items`` (the
    protocol :class:`~evalstop.experiments.paper.ray_backend.RayBackend` follows)."""

    def imap(self, fn: Callable[[T], R], items: Sequence[T]) -> Generator[R, None, None]: ...


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
) -> Iterator[tuple[int, RunConfig, LabelledRun | None]]:
    """``(index, config, run)`` for each seed, in order; ``run`` is None where ``skip(config)``
    says the run is already done (it is not run again).

    Raises:
        ConfigError: a bad knob, before any run starts.
    """
    fixed = check_overrides(overrides or {})
    configs = [draw_config(seed, fixed) for seed in seeds]
    done = [skip is not None and skip(config) for config in configs]
    todo = [config for config, finished in zip(configs, done, strict=True) if not finished]
    results = _results(todo, workers, backend)
    try:
        for index, config in enumerate(configs):
            if done[index]:
                yield index, config, None
                continue
            run = next(results)
            yield index, config, LabelledRun(run, label_of(run.truth.quality))
    finally:
        results.close()


def _results(
    configs: list[RunConfig], workers: int, backend: Backend | None
) -> Generator[RunResult, None, None]:
    if backend is not None:
        remote = backend.imap(run_one, configs)
        try:
            yield from remote
        finally:
            remote.close()
        return
    if workers <= 1 or len(configs) <= 1:
        yield from map(run_one, configs)
        return
    pool = multiprocessing.Pool(workers, initializer=_ignore_sigint)
    try:
        yield from pool.imap(run_one, configs)
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    finally:
        pool.close()
        pool.join()
