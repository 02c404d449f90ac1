"""Engine speed against its peers and against the work (issue 23's goals, printed met or not).

1. Peers: the same jobs (``generate``, 1,000 jobs per 64 GPUs at the default load 0.9, seed 0)
   through ``simulate`` under ``fifo`` and ``evalstop+fifo``, an idiomatic SimPy model and a
   bare ``heapq`` loop of the same system (``peers.py``: plain FIFO, and FIFO with the k = 2
   stop): every job's start, end and stop are checked equal first, then the median CPU time
   over interleaved repeats of each is compared.
2. Growth with deep queues: every built-in base, alone and wrapped by EvalStop, at 1x, 10x
   and 100x the work (jobs and GPUs together) at offered load 1.05, so jobs queue at every
   scale (each row prints the time-weighted mean and the max queue, in jobs); the figure is
   CPU per log record, and its growth from the smallest scale to the largest.
3. The whole shipped Philly trace (82,247 jobs, the cluster sized by PHL-3), every built-in
   base alone and wrapped: events per CPU second.
4. Memory per job a finished run holds beyond its workload (``tracemalloc``).

Times are CPU seconds of this process (``time.process_time``): the machine is shared, and CPU
time is what the implementations compete on. Ratios, not seconds, are the figures.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from peers import outcome, peer_jobs, run_heapq, run_simpy

from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.engine.log import LogKind, LogRecord
from evalstop.experiments.tables import format_table
from evalstop.sim.philly import TraceSpec, trace_workload
from evalstop.sim.run import Cluster, Result, simulate
from evalstop.sim.workload import WorkloadConfig, generate

__all__ = ["main", "queue_depth"]

T = TypeVar("T")
BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "las", "fair-share")
SYSTEMS = (*BASES, *(f"evalstop+{b}" for b in BASES))
DEEP_LOAD = 1.05
GOALS = {
    "peers": "engine time <= 0.7x SimPy's at every size, fifo and evalstop+fifo",
    "growth": "CPU per log record at the largest scale <= 2.0x the smallest, every system, "
    "deep queues",
    "fair-share": "fair-share on the largest synthetic workload (deep queue) <= 4 s CPU",
    "philly": "the whole Philly trace >= 200,000 events per CPU second, every system",
    "memory": "memory per job in a finished run <= 500 B beyond the workload",
}


def cpu(fn: Callable[..., T], *args: object) -> tuple[float, T]:
    """CPU seconds of ``fn(*args)`` in this process, and its value."""
    gc.collect()
    start = time.process_time()
    value = fn(*args)
    return time.process_time() - start, value


def workload(scale: int, load: float = 0.9) -> tuple[tuple[Job, ...], int]:
    work = generate(WorkloadConfig(n_jobs=1_000 * scale, gpus=64 * scale, load=load), seed=0)
    return work.jobs, work.config.gpus


def run(jobs: tuple[Job, ...], gpus: int, system: str) -> Result:
    return simulate(jobs, make_policy(system), Cluster(gpus=gpus))


def queue_depth(log: Iterable[LogRecord]) -> tuple[float, int]:
    """The time-weighted mean and the max number of queued jobs over a run's log."""
    queued = peak = 0
    area = 0.0
    first = last = -1
    for record in log:
        if first < 0:
            first = last = record.time
        area += queued * (record.time - last)
        last = record.time
        kind = record.kind
        if kind is LogKind.ARRIVE or kind is LogKind.PREEMPT:
            queued += 1
        elif kind is LogKind.START or (kind is LogKind.STOP and record.gpus == 0):
            queued -= 1
        peak = max(peak, queued)
    span = last - first
    return (area / span if span else 0.0), peak


def peers(scales: Sequence[int], repeats: int) -> bool:
    rows, met = [], True
    for scale in scales:
        jobs, gpus = workload(scale)
        peer = peer_jobs(jobs)
        for system, stop in (("fifo", False), ("evalstop+fifo", True)):
            mine = outcome(run(jobs, gpus, system).log)
            same = mine == run_simpy(peer, gpus, stop) == run_heapq(peer, gpus, stop)
            assert same, f"{system}: outcomes differ"
            times: dict[str, list[float]] = {"evalstop": [], "simpy": [], "heapq": []}
            events = 0
            for _ in range(repeats):  # interleaved, so that load changes hit all three
                seconds, result = cpu(run, jobs, gpus, system)
                times["evalstop"].append(seconds)
                events = result.events
                times["simpy"].append(cpu(run_simpy, peer, gpus, stop)[0])
                times["heapq"].append(cpu(run_heapq, peer, gpus, stop)[0])
            ev, sp, hq = (statistics.median(times[k]) for k in ("evalstop", "simpy", "heapq"))
            met &= ev <= 0.7 * sp
            rows.append(
                [
                    f"{len(jobs):,} jobs, {gpus:,} GPUs, {system}",
                    f"{ev:.3f}",
                    f"{sp:.3f}",
                    f"{hq:.3f}",
                    f"{ev / sp:.2f}x",
                    f"{ev / hq:.2f}x",
                    f"{events / ev:,.0f}",
                    str(sum(1 for v in mine.values() if v[2])),
                ]
            )
    headers = ["work", "evalstop s", "SimPy s", "heapq s", "/ SimPy", "/ heapq", "events/s"]
    title = f"engine vs peers, CPU s, median of {repeats} (outcomes checked equal)"
    print(format_table([*headers, "stopped"], rows, title=title))
    return met


def growth(scales: Sequence[int], repeats: int, systems: Sequence[str]) -> dict[str, bool]:
    """Each system's CPU per log record at each scale, with its queue, at load 1.05."""
    works = {scale: workload(scale, DEEP_LOAD) for scale in scales}
    rows, met, fair = [], True, True
    for system in systems:
        per_record, cells = [], []
        for scale in scales:
            jobs, gpus = works[scale]
            reps = repeats if scale < 100 else 1
            runs = [cpu(run, jobs, gpus, system) for _ in range(reps)]
            seconds = statistics.median(s for s, _ in runs)
            log = runs[0][1].log
            mean, peak = queue_depth(log)
            per_record.append(seconds / len(log))
            cells.append(
                f"{seconds:.2f} s, {seconds / len(log) * 1e6:.1f} us, q {mean:,.0f}/{peak:,}"
            )
            if system == "fair-share" and scale == scales[-1]:
                fair = seconds <= 4.0
        ratio = per_record[-1] / per_record[0]
        met &= ratio <= 2.0
        rows.append([system, *cells, f"{ratio:.2f}x"])
    headers = ["system", *(f"{s}x: CPU, per record, queue mean/max" for s in scales), "growth"]
    title = f"growth at load {DEEP_LOAD}: CPU s, CPU us per log record, queued jobs"
    print(format_table(headers, rows, title=title))
    return {"growth": met, "fair-share": fair}


def philly(systems: Sequence[str]) -> bool:
    workload_, fitted = trace_workload(TraceSpec(load=0.9), seed=0)
    jobs, gpus = workload_.jobs, fitted.gpus
    rows, met = [], True
    for system in systems:
        seconds, result = cpu(run, jobs, gpus, system)
        mean, peak = queue_depth(result.log)
        rate = result.events / seconds
        met &= rate >= 200_000
        rows.append(
            [
                system,
                f"{result.events:,}",
                f"{seconds:.2f}",
                f"{rate:,.0f}",
                f"{mean:,.0f}/{peak:,}",
            ]
        )
    headers = ["system", "events", "CPU s", "events/s", "queue mean/max"]
    print(format_table(headers, rows, title=f"Philly, {len(jobs):,} jobs on {gpus} GPUs"))
    return met


def memory(scale: int) -> bool:
    jobs, gpus = workload(scale)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = run(jobs, gpus, "evalstop+srtf-est")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    per_job = held / len(jobs)
    print(
        f"memory: a finished evalstop+srtf-est run of {len(jobs):,} jobs holds "
        f"{per_job:,.0f} B per job beyond its workload ({len(result.log) / len(jobs):.1f} "
        "log records per job)"
    )
    return per_job <= 500


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_engine.py")
    parser.add_argument("--scales", default="1,10,100", help="multiples of 1,000 jobs / 64 GPUs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--system", action="append", help="growth and Philly: these only")
    parser.add_argument("--skip", action="append", default=[], choices=sorted(GOALS))
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",")]
    systems = args.system or list(SYSTEMS)
    verdicts: dict[str, bool] = {}
    if "peers" not in args.skip:
        verdicts["peers"] = peers(scales, args.repeats)
    if "growth" not in args.skip:
        grown = growth(scales, args.repeats, systems)
        verdicts["growth"] = grown["growth"]
        if "fair-share" in systems:
            verdicts["fair-share"] = grown["fair-share"]
    if "philly" not in args.skip:
        verdicts["philly"] = philly(systems)
    if "memory" not in args.skip:
        verdicts["memory"] = memory(min(scales[-1], 10))
    for name, met in verdicts.items():
        print(f"goal: {GOALS[name]}: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
