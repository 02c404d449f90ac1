"""Online monitor throughput and memory per job (spec ``MON-10``).

Feeds at least 200,000 observations across 10,000 interleaved jobs (each eval round visits
every job once, in a shuffled order; scores rise to a per-job peak and fall, with noise, so
jobs stop at different times) and prints observations per second for the default monitor
(noise-aware) and ``DeclineDetector(k=2)``, one ``observe`` call each and in one
``observe_many`` batch, beside a bare loop (issue 12's goal: 1,000,000 per second; every
path is printed against it). Then feeds runs of 10, 100 and 1,000 observations per job to
jobs that never stop and prints the monitor's memory per job (``tracemalloc``) and its
serialised state per job: both stay flat as runs grow longer.
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

__all__ = [
    "bare_loop",
    "main",
    "memory_per_job",
    "one_pass",
    "report",
    "stopped",
    "stream",
    "throughput",
]

Observation = tuple[JobKey, int, float]
DETECTORS: dict[str, Detector[Any] | None] = {
    "default (noise-aware)": None,
    "DeclineDetector(k=2)": DeclineDetector(k=2),
}
"""The monitors measured: the default one and the paper's rule."""
GOAL = 1_000_000
"""Issue 12's goal, observations per second."""
Rates = dict[tuple[str, bool], float]


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


def one_pass(observations: Sequence[Observation], monitor: Monitor, batched: bool) -> float:
    """CPU seconds to feed ``observations`` to ``monitor``: one ``observe`` call each, or one
    ``observe_many`` call over the whole stream (spec ``MON-17``)."""
    gc.collect()
    if batched:
        start = time.process_time()
        monitor.observe_many(observations)
        return time.process_time() - start
    observe = monitor.observe
    start = time.process_time()
    for key, step, score in observations:
        observe(key, step, score)
    return time.process_time() - start


def stopped(monitor: Monitor) -> int:
    """Jobs the monitor has stopped."""
    return sum(1 for key in monitor if (s := monitor.job_state(key)) and s.watch.fired_step)


def throughput(
    observations: Sequence[Observation], repeats: int
) -> tuple[dict[tuple[str, bool], float], dict[str, int], float]:
    """Median observations per second of every (detector, batched) path and of the bare loop,
    the repeats interleaved (one round runs each once, in turn); stopped jobs per detector
    (checked equal between the two paths)."""
    times: dict[tuple[str, bool], list[float]] = {}
    stops: dict[str, int] = {}
    bare: list[float] = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        bare_loop(observations)
        bare.append(time.process_time() - start)
        for label, detector in DETECTORS.items():
            for batched in (False, True):
                monitor = Monitor(detector)
                times.setdefault((label, batched), []).append(
                    one_pass(observations, monitor, batched)
                )
                assert stops.setdefault(label, stopped(monitor)) == stopped(monitor), label
    n = len(observations)
    rates = {path: n / statistics.median(seconds) for path, seconds in times.items()}
    return rates, stops, n / statistics.median(bare)


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


def report(label: str, rates: Rates, stops: dict[str, int], bare: float, title: str) -> None:
    """The throughput table of one build and its goal lines."""
    rows = [
        [
            name,
            f"{stops[name]:,}",
            f"{rates[name, False]:,.0f}",
            f"{rates[name, True]:,.0f}",
            f"{bare / rates[name, True]:.1f}x",
        ]
        for name in DETECTORS
    ]
    header = ["monitor", "stopped", "obs/s, observe", "obs/s, observe_many", "bare / many"]
    print(format_table(header, rows, title=f"{title}; build: {label}"))
    for (name, batched), rate in rates.items():
        verdict = "met" if rate >= GOAL else "NOT met"
        path = "observe_many" if batched else "observe"
        print(f"goal: Monitor >= {GOAL:,} obs/s, {name}, {path}, {label}: {verdict} ({rate:,.0f})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_monitor.py")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--evals", type=int, default=20, help="evaluations per job")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-jobs", type=int, default=200)
    args = parser.parse_args(argv)
    observations = stream(args.jobs, args.evals)
    rates, stops, bare = throughput(observations, args.repeats)
    stopped_bare = sum(1 for job in bare_loop(observations).values() if job[7] is not None)
    # the bare loop does the k = 2 rule's bookkeeping: the same jobs stop
    assert stopped_bare == stops["DeclineDetector(k=2)"], (stopped_bare, stops)
    title = (
        f"monitor throughput: {len(observations):,} observations, {args.jobs:,} interleaved "
        f"jobs, CPU time, median of {args.repeats} interleaved rounds; a bare loop doing the "
        f"k = 2 rule's bookkeeping: {bare:,.0f} obs/s ({stopped_bare:,} stopped)"
    )
    report("pure Python", rates, stops, bare, title)
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
