"""Engine speed against its peers and against the work (issue 12's goals, printed met or not).

1. The same jobs (``generate``, 1,000 jobs per 64 GPUs, seed 0) through ``simulate`` under
   ``fifo`` and ``evalstop+fifo``, an idiomatic SimPy model and a bare ``heapq`` loop
   (``peers.py``): every job's start and end are checked equal for ``fifo`` first, then the
   median CPU time over interleaved repeats of each is compared.
2. Growth: every built-in base, alone and wrapped by EvalStop, at 1x, 10x and 100x the work
   (jobs and GPUs together, same load); the time of each 10x step.
3. Memory per job a finished run holds beyond its workload (``tracemalloc``).

Times are CPU seconds of this process (``time.process_time``): the machine is shared, and CPU
time is what the three implementations compete on. Ratios, not seconds, are the figures.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import TypeVar

from peers import outcome, peer_jobs, run_heapq, run_simpy

from evalstop.core.registry import make_policy
from evalstop.experiments.tables import format_table
from evalstop.sim.run import Cluster, Result, simulate
from evalstop.sim.workload import Workload, WorkloadConfig, generate

__all__ = ["main"]

T = TypeVar("T")
BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "las")
GOALS = {
    "peers": "engine time <= SimPy's at every size, fifo and evalstop+fifo",
    "growth": "10x the work in <= 11x the time, every built-in base, wrapped or not",
    "memory": "memory per job in a finished run <= 1 KB beyond the workload",
}


def cpu(fn: Callable[..., T], *args: object) -> tuple[float, T]:
    """CPU seconds of ``fn(*args)`` in this process, and its value."""
    gc.collect()
    start = time.process_time()
    value = fn(*args)
    return time.process_time() - start, value


def workload(scale: int) -> Workload:
    return generate(WorkloadConfig(n_jobs=1_000 * scale, gpus=64 * scale), seed=0)


def run(work: Workload, system: str) -> Result:
    return simulate(work, make_policy(system), Cluster(gpus=work.config.gpus))


def peers(scales: Sequence[int], repeats: int) -> bool:
    rows, met = [], True
    for scale in scales:
        work = workload(scale)
        jobs, gpus = peer_jobs(work.jobs), work.config.gpus
        mine = outcome(run(work, "fifo").log)
        assert mine == run_simpy(jobs, gpus) == run_heapq(jobs, gpus), "outcomes differ"
        for system in ("fifo", "evalstop+fifo"):
            times: dict[str, list[float]] = {"evalstop": [], "simpy": [], "heapq": []}
            events = 0
            for _ in range(repeats):  # interleaved, so that load changes hit all three
                seconds, result = cpu(run, work, system)
                times["evalstop"].append(seconds)
                events = result.events
                times["simpy"].append(cpu(run_simpy, jobs, gpus)[0])
                times["heapq"].append(cpu(run_heapq, jobs, gpus)[0])
            ev, sp, hq = (statistics.median(times[k]) for k in ("evalstop", "simpy", "heapq"))
            met &= ev <= sp
            rows.append(
                [
                    f"{len(jobs):,} jobs, {gpus:,} GPUs, {system}",
                    f"{ev:.3f}",
                    f"{sp:.3f}",
                    f"{hq:.3f}",
                    f"{ev / sp:.2f}x",
                    f"{ev / hq:.2f}x",
                    f"{events / ev:,.0f}",
                ]
            )
    headers = ["work", "evalstop s", "SimPy s", "heapq s", "/ SimPy", "/ heapq", "events/s"]
    title = f"engine vs peers, CPU s, median of {repeats} (outcomes checked equal)"
    print(format_table(headers, rows, title=title))
    return met


def growth(scales: Sequence[int], repeats: int) -> bool:
    """Each system's time at each scale; the peers' fifo models beside them as the yardstick
    (their growth is the machine's share: an O(log n) event loop on this interpreter)."""
    works = {scale: workload(scale) for scale in scales}
    peer = {scale: (peer_jobs(works[scale].jobs), works[scale].config.gpus) for scale in scales}
    rows, met = [], True
    runners: list[tuple[str, Callable[[int], object]]] = [
        ("SimPy (fifo model)", lambda scale: run_simpy(*peer[scale])),
        ("heapq (fifo model)", lambda scale: run_heapq(*peer[scale])),
    ]

    def engine(system: str) -> Callable[[int], object]:
        return lambda scale: run(works[scale], system)

    runners += [(system, engine(system)) for system in (*BASES, *(f"evalstop+{b}" for b in BASES))]
    for name, runner in runners:
        seconds = []
        for scale in scales:
            reps = repeats if scale < 100 else 1
            seconds.append(statistics.median(cpu(runner, scale)[0] for _ in range(reps)))
        steps = [b / a for a, b in itertools.pairwise(seconds)]
        if not name.endswith("model)"):
            met &= all(step <= 11 for step in steps)
        rows.append([name, *(f"{s:.3f}" for s in seconds), *(f"{r:.1f}x" for r in steps)])
    headers = [
        "system",
        *(f"{s}x s" for s in scales),
        *(f"{b}x/{a}x" for a, b in itertools.pairwise(scales)),
    ]
    print(format_table(headers, rows, title="growth: CPU s at each scale, and each 10x step"))
    return met


def memory(scale: int) -> bool:
    work = workload(scale)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = run(work, "evalstop+srtf-est")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    per_job = held / len(work.jobs)
    print(
        f"memory: a finished evalstop+srtf-est run of {len(work.jobs):,} jobs holds "
        f"{per_job:,.0f} B per job beyond its workload ({len(result.log) / len(work.jobs):.1f} "
        "log records per job)"
    )
    return per_job <= 1024


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_engine.py")
    parser.add_argument("--scales", default="1,10,100", help="multiples of 1,000 jobs / 64 GPUs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", action="append", default=[], choices=sorted(GOALS))
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",")]
    checks: dict[str, Callable[[], bool]] = {
        "peers": lambda: peers(scales, args.repeats),
        "growth": lambda: growth(scales, args.repeats),
        "memory": lambda: memory(min(scales[-1], 10)),
    }
    verdicts = {name: check() for name, check in checks.items() if name not in args.skip}
    for name, met in verdicts.items():
        print(f"goal: {GOALS[name]}: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
