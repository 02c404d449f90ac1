"""Online monitor throughput and memory per job (spec ``MON-10``).

Feeds at least 200,000 observations across 10,000 interleaved jobs (each eval round visits
every job once, in a shuffled order; scores rise to a per-job peak and fall, with noise, so
jobs stop at different times) and prints observations per second for the default monitor
(noise-aware) and ``DeclineDetector(k=2)``, one ``observe`` call each and in one
``observe_many`` batch, beside a bare loop (issue 12's goal: 1,000,000 per call). Then
feeds runs of 10, 100 and 1,000 observations per job to jobs that never stop and prints the
monitor's memory per job (``tracemalloc``) and its serialised state per job: both stay flat
as runs grow longer.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.experiments.tables import format_table
from evalstop.live.monitor import JobKey, Monitor

__all__ = ["batch_throughput", "main", "memory_per_job", "stream", "throughput"]

Observation = tuple[JobKey, int, float]
_K2 = DeclineDetector(k=2)


def stream(jobs: int, evals: int, seed: int = 0) -> list[Observation]:
    """``jobs * evals`` observations: eval rounds, each visiting every job in random order."""
    rng = random.Random(seed)
    peaks = [rng.uniform(0.3, 1.5) * evals for _ in range(jobs)]
    keys: list[JobKey] = [f"job-{j}" if j % 2 else j for j in range(jobs)]
    order = list(range(jobs))
    out: list[Observation] = []
    for i in range(evals):
        rng.shuffle(order)
        for j in order:
            quality = 1.0 - ((i - peaks[j]) / evals) ** 2
            out.append((keys[j], 100 * (i + 1), quality + rng.gauss(0.0, 0.01)))
    return out


def throughput(
    observations: Sequence[Observation], repeats: int, detector: Detector[Any] | None = None
) -> tuple[float, int, int]:
    """Median observations per second of one ``observe`` call each, over ``repeats`` fresh
    monitors of ``detector`` (None: the default); stops; jobs."""
    rates: list[float] = []
    stops = jobs = 0
    for _ in range(repeats):
        monitor = Monitor(detector)
        observe = monitor.observe
        gc.collect()
        start = time.process_time()
        for key, step, score in observations:
            observe(key, step, score)
        rates.append(len(observations) / (time.process_time() - start))
        jobs = len(monitor)
        stops = sum(1 for key in monitor if (s := monitor.job_state(key)) and s.watch.fired_step)
    return statistics.median(rates), stops, jobs


def batch_throughput(
    observations: Sequence[Observation], repeats: int, detector: Detector[Any] | None = None
) -> tuple[float, int]:
    """Median observations per second of one ``observe_many`` call over the whole stream
    (spec ``MON-17``); the stops it returned."""
    rates: list[float] = []
    stops = 0
    for _ in range(repeats):
        monitor = Monitor(detector)
        gc.collect()
        start = time.process_time()
        stops = len(monitor.observe_many(observations))
        rates.append(len(observations) / (time.process_time() - start))
    return statistics.median(rates), stops


def bare_loop(observations: Sequence[Observation], k: int = 2) -> dict[JobKey, list[Any]]:
    """What a user would write instead of the monitor: the same bookkeeping in one loop (the
    stale-step and stopped checks, the decline count, the best checkpoint, the fired step)."""
    jobs: dict[JobKey, list[Any]] = {}
    isfinite = math.isfinite
    for key, step, score in observations:
        job = jobs.get(key)
        if job is None:  # last step, seen, declines, previous, evals, best step, best, fired
            job = jobs[key] = [-1, 0, 0, None, 0, None, None, None]
        elif job[7] is not None or step <= job[0]:
            continue
        job[0], job[1] = step, job[1] + 1
        if isfinite(score):
            job[2] = job[2] + 1 if job[3] is not None and score < job[3] else 0
            job[3], job[4] = score, job[4] + 1
            if job[6] is None or score > job[6]:
                job[5], job[6] = step, score
            if job[2] >= k:
                job[7] = step
    return jobs


def bare_throughput(observations: Sequence[Observation], repeats: int) -> float:
    """Median observations per second of :func:`bare_loop`."""
    rates = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        bare_loop(observations)
        rates.append(len(observations) / (time.process_time() - start))
    return statistics.median(rates)


def memory_per_job(jobs: int, evals: int) -> tuple[float, float]:
    """Bytes per job held by a monitor after ``evals`` rising scores per job (tracemalloc),
    and serialised JSON bytes per job."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    monitor = Monitor()
    for i in range(evals):
        for j in range(jobs):
            # Strictly rising scores, so no job ever stops; steps start at 1,000 so that
            # CPython's cache of small ints does not flatter the shorter runs.
            monitor.observe(j, 1_000 + i, i + j / jobs)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return held / jobs, len(monitor.to_json()) / jobs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_monitor.py")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--evals", type=int, default=20, help="evaluations per job")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-jobs", type=int, default=200)
    args = parser.parse_args(argv)
    observations = stream(args.jobs, args.evals)
    bare = bare_throughput(observations, args.repeats)
    stopped_bare = sum(1 for job in bare_loop(observations).values() if job[7] is not None)
    rows, default_rate = [], 0.0
    for label, detector in (("default (noise-aware)", None), ("DeclineDetector(k=2)", _K2)):
        rate, stops, jobs = throughput(observations, args.repeats, detector)
        batch, batch_stops = batch_throughput(observations, args.repeats, detector)
        assert batch_stops == stops, (label, batch_stops, stops)
        if detector is _K2:  # the bare loop does the k = 2 rule's bookkeeping
            assert stopped_bare == stops, (stopped_bare, stops)
        else:
            default_rate = rate
        rows.append([label, f"{stops:,}", f"{rate:,.0f}", f"{bare / rate:.1f}x", f"{batch:,.0f}"])
    print(
        format_table(
            ["monitor", "stopped", "obs/s, observe", "bare / observe", "obs/s, observe_many"],
            rows,
            title=f"monitor throughput: {len(observations):,} observations, {jobs:,} "
            f"interleaved jobs, CPU time, median of {args.repeats}; a bare loop doing the "
            f"k = 2 rule's bookkeeping: {bare:,.0f} obs/s ({stopped_bare:,} stopped)",
        )
    )
    print(
        "goal: Monitor >= 1,000,000 obs/s on this stream (default monitor, one observe call "
        f"each): {'met' if default_rate >= 1e6 else 'NOT met'} ({default_rate:,.0f})"
    )
    rows = []
    for evals in (10, 100, 1000):
        traced, serialised = memory_per_job(args.memory_jobs, evals)
        rows.append([f"{evals:,}", f"{traced:,.0f}", f"{serialised:,.0f}"])
    print(
        format_table(
            ["obs per job", "bytes/job (tracemalloc)", "JSON bytes/job"],
            rows,
            title=f"monitor memory per job, {args.memory_jobs} jobs that never stop",
        )
    )
    print(
        "a job holds a fixed set of values; a small step up from 100 to 1,000 observations "
        "is its counters passing 256, the end of CPython's cache of shared small ints"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
