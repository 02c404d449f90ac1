"""Corpora of gym runs: in memory, or written into a folder (spec ``GYM-8``, ``GYM-10``).

:func:`generate_split` returns the first runs of the ``dev`` or ``test`` split as values;
:func:`write_runs` writes runs into a folder, each whole or not at all, keeping the runs an
interrupted generation already finished (a run folder whose parameters match is not run
again) and refusing a folder that holds other runs.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalstop.core.errors import EvalStopError
from evalstop.gym.config import DISTRIBUTION, Distribution, Overrides, RunConfig, check_overrides
from evalstop.gym.generate import Backend, LabelledRun, generate_runs
from evalstop.gym.splits import SPLITS, split_seeds
from evalstop.gym.writer import (
    clean_staging,
    config_matches,
    existing_label,
    run_name,
    summarise,
    write_json,
    write_run,
)

__all__ = ["GymError", "generate_split", "write_runs", "write_split"]


class GymError(EvalStopError, OSError):
    """The output folder cannot take the runs (another corpus is there, the disk is full)."""


def generate_split(
    split: str,
    runs: int,
    *,
    overrides: Overrides | None = None,
    workers: int = 1,
    backend: Backend | None = None,
    distribution: Distribution = DISTRIBUTION,
) -> list[LabelledRun]:
    """The first ``runs`` runs of ``split`` (``dev`` or ``test``), labelled, in seed order,
    unset knobs drawn from ``distribution`` (``GYM-5``).

    Raises:
        ConfigError: an unknown split, a bad ``runs`` or a bad knob.
    """
    seeds = split_seeds(split, runs)
    return [
        run
        for _, _, run in generate_runs(
            seeds, overrides, workers=workers, backend=backend, distribution=distribution
        )
        if run is not None
    ]


def write_split(split: str, runs: int, out: Path, **options: Any) -> dict[str, Any]:
    """:func:`write_runs` over the first ``runs`` seeds of ``split``; the summary."""
    return write_runs(split_seeds(split, runs), out, **options)


def write_runs(
    seeds: Sequence[int],
    out: Path,
    *,
    overrides: Overrides | None = None,
    workers: int = 1,
    backend: Backend | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Write run ``i`` (seed ``seeds[i]``) to ``out/run-NNNN`` and ``out/summary.json``;
        returns the summary. ``progress(done, total)`` after each run. Runs are written as workers
    finish them (``GYM-10``), each run's files depending on its seed and the knobs alone.

        Raises:
            ConfigError: a bad knob, before anything is written.
            GymError: ``out`` holds other runs, or cannot be written.
            WorkerError: a worker died; the runs finished before are written.
    """
    fixed = check_overrides(overrides or {})
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    clocks = (time.perf_counter(), time.process_time(), children.ru_utime + children.ru_stime)
    try:
        out.mkdir(parents=True, exist_ok=True)
        clean_staging(out)
    except OSError as error:
        raise GymError(f"--out {out}: {error.strerror or error}") from None
    index_of = {seed: i for i, seed in enumerate(seeds)}

    def skip(config: RunConfig) -> bool:
        match = config_matches(out, index_of[config.seed], config)
        if match is False:
            name = run_name(index_of[config.seed])
            raise GymError(f"--out {out}: {name} holds another run; choose an empty folder")
        return bool(match)

    labels: dict[int, tuple[RunConfig, str]] = {}
    total = len(seeds)
    for index, config, run in generate_runs(
        seeds, fixed, workers=workers, backend=backend, skip=skip, ordered=False
    ):
        if run is None:
            labels[index] = (config, existing_label(out, index))
        else:
            try:
                write_run(out, index, run)
            except OSError as error:
                raise GymError(
                    f"--out {out}: cannot write {run_name(index)}: {error.strerror or error}"
                ) from None
            labels[index] = (config, run.label)
        if progress is not None:
            progress(len(labels), total)
    return _finish(out, summarise(labels[i] for i in sorted(labels)), fixed, seeds, clocks)


def _finish(
    out: Path,
    summary: dict[str, Any],
    fixed: Overrides,
    seeds: Sequence[int],
    clocks: tuple[float, float, float],
) -> dict[str, Any]:
    """Complete the summary (knobs, split, time) and write ``summary.json``."""
    summary["knobs"] = dict(sorted(fixed.items()))
    summary["split"] = next(
        (name for name, start in SPLITS.items() if seeds and seeds[0] == start), None
    )
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary["time"] = {
        "cpu_seconds_main": round(time.process_time() - clocks[1], 3),
        "cpu_seconds_workers": round(workers.ru_utime + workers.ru_stime - clocks[2], 3),
        "wall_seconds": round(time.perf_counter() - clocks[0], 3),
    }
    try:
        write_json(out / "summary.json", summary)
    except OSError as error:
        raise GymError(f"--out {out}: cannot write summary.json: {error.strerror}") from None
    return summary
