"""Engine speed against its peers and against the work (issue 23's goals, printed met or not).

1. Peers: the same jobs (``generate``, 1,000 jobs per 64 GPUs at the default load 0.9, seed 0)
   through ``simulate`` under ``fifo`` and ``evalstop+fifo``, an idiomatic SimPy model and a
   bare ``heapq`` loop of the same system (``peers.py``: plain FIFO, and FIFO with the k = 2
   stop): every job's start, end and stop are checked equal first, then the median CPU time
   over interleaved repeats of each is compared.
2. Growth with deep queues: every built-in base, alone and wrapped by EvalStop, at 1x, 10x
   and 100x the work (jobs and GPUs together) at offered load 1.05 (a base alone) or 2.0
   (wrapped: EvalStop's stops free about half the GPU-time), so jobs queue at every scale
   (each row prints the time-weighted mean and the max queue, in jobs); the figure is
   CPU per log record, and its growth from the smallest scale to the largest (every figure
   the median of ``--repeats`` runs back to back: the growth goal reads each system's first
   and last, and fair-share's last is judged alone too; with one run of each 100x row, a
   full run measured fifo's growth at 2.02x, and the median of three an hour later 1.53x).
3. The whole shipped Philly trace (82,247 jobs, the cluster sized by PHL-3), every built-in
   base alone and wrapped: events per CPU second, the median of ``--repeats`` runs (with
   their range: machine noise moves a run by a few percent).
4. Memory per job a finished run holds beyond its workload (``tracemalloc``).

The output opens with what it was measured on (version, commit, Python, machine, day).
Times are CPU seconds of this process (``time.process_time``): the machine is shared, and CPU
time is what the implementations compete on. Ratios, not seconds, are the figures. Each row is
printed as soon as it is measured (a whole run takes minutes); at the end each goal is printed
met or NOT met with the figures it was judged on.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import attrs
from peers import outcome, peer_jobs, run_heapq, run_simpy

from evalstop import __version__
from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.engine.log import LogKind, LogRecord
from evalstop.sim.philly import TraceSpec, trace_workload
from evalstop.sim.run import Cluster, Result, simulate
from evalstop.sim.workload import WorkloadConfig, generate

__all__ = ["Verdict", "main", "queue_depth"]

T = TypeVar("T")
BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "las", "fair-share")
SYSTEMS = (*BASES, *(f"evalstop+{b}" for b in BASES))
DEEP_LOAD = 1.05
WRAPPED_LOAD = 2.0
"""Offered load for the EvalStop-wrapped systems: their stops free about half the offered
GPU-time, so at 1.05 they never queue past 10x (measured: mean queue 0 at 10x and 100x); at
2.0 the queue is deep at every scale, as at 1.05 for a base alone."""
GOALS = {
    "peers": "engine time <= 0.7x SimPy's at every size, fifo and evalstop+fifo",
    "growth": "CPU per log record at the largest scale <= 2.0x the smallest, every system, "
    "deep queues",
    "fair-share": "fair-share on the largest synthetic workload (deep queue) <= 4 s CPU",
    "philly": "the whole Philly trace >= 200,000 events per CPU second, every system",
    "memory": "memory per job in a finished run <= 500 B beyond the workload",
}


@attrs.frozen
class Verdict:
    """A goal judged: whether it is met, and the figures it was judged on."""

    met: bool
    figures: str


class Streamed:
    """A table printed one row at a time, as each is measured (fixed column widths)."""

    def __init__(self, title: str, header: Sequence[str], widths: Sequence[int]) -> None:
        self._widths = widths
        print(title)
        self.row(header)
        print("  ".join("-" * w for w in widths), flush=True)

    def row(self, cells: Sequence[str]) -> None:
        first = cells[0].ljust(self._widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], self._widths[1:], strict=True)]
        print("  ".join([first, *rest]).rstrip(), flush=True)


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


def peers(scales: Sequence[int], repeats: int) -> Verdict:
    headers = ["work", "evalstop s", "SimPy s", "heapq s", "/ SimPy", "/ heapq", "events/s"]
    table = Streamed(
        f"engine vs peers, CPU s, median of {repeats} (outcomes checked equal)",
        [*headers, "stopped"],
        [40, 10, 7, 7, 7, 7, 9, 7],
    )
    met, ratios = True, []
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
            ratios.append(f"{system} {len(jobs):,} {ev / sp:.2f}x")
            table.row(
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
    print()
    return Verdict(met, "; ".join(ratios))


def growth(scales: Sequence[int], repeats: int, systems: Sequence[str]) -> dict[str, Verdict]:
    """Each system's CPU per log record at each scale, with its queue, at load 1.05 for a base
    alone and 2.0 wrapped (:data:`WRAPPED_LOAD`), so that jobs queue at every scale."""
    works: dict[tuple[int, float], tuple[tuple[Job, ...], int]] = {}
    headers = ["system", *(f"{s}x: CPU, per record, queue mean/max" for s in scales), "growth"]
    table = Streamed(
        f"growth at load {DEEP_LOAD} (alone) and {WRAPPED_LOAD} (wrapped): CPU s (median of "
        f"{repeats}), CPU us per log record, queued jobs",
        headers,
        [22, *(max(len(h), 34) for h in headers[1:-1]), 6],
    )
    met, grown, fair = True, [], Verdict(True, "not run")
    for system in systems:
        per_record, cells = [], []
        load = WRAPPED_LOAD if system.startswith("evalstop+") else DEEP_LOAD
        for scale in scales:
            if (scale, load) not in works:
                works[scale, load] = workload(scale, load)
            jobs, gpus = works[scale, load]
            # every row is judged (the growth goal reads the first and the last of each
            # system): the median of repeats, back to back; only the first run's log is kept
            first, result = cpu(run, jobs, gpus, system)
            times = [first, *(cpu(run, jobs, gpus, system)[0] for _ in range(repeats - 1))]
            seconds = statistics.median(times)
            log = result.log
            mean, peak = queue_depth(log)
            per_record.append(seconds / len(log))
            cells.append(
                f"{seconds:.2f} s, {seconds / len(log) * 1e6:.1f} us, q {mean:,.0f}/{peak:,}"
            )
            if system == "fair-share" and scale == scales[-1]:
                fair = Verdict(seconds <= 4.0, f"{seconds:.2f} s at {len(jobs):,} jobs")
        ratio = per_record[-1] / per_record[0]
        met &= ratio <= 2.0
        grown.append(f"{system} {ratio:.2f}x")
        table.row([system, *cells, f"{ratio:.2f}x"])
    print()
    return {"growth": Verdict(met, "; ".join(grown)), "fair-share": fair}


def philly(systems: Sequence[str], repeats: int) -> Verdict:
    """Events per CPU second on the whole Philly trace, the median of ``repeats`` runs of each
    system back to back (their range printed beside it: a goal judged on the line says so)."""
    workload_, fitted = trace_workload(TraceSpec(load=0.9), seed=0)
    jobs, gpus = workload_.jobs, fitted.gpus
    table = Streamed(
        f"Philly, {len(jobs):,} jobs on {gpus} GPUs, CPU s: median of {repeats} (min-max)",
        ["system", "events", "CPU s", "events/s", "range events/s", "queue mean/max"],
        [22, 9, 7, 9, 17, 14],
    )
    met, rates = True, []
    for system in systems:
        first, result = cpu(run, jobs, gpus, system)  # the others' logs are not kept
        times = [first, *(cpu(run, jobs, gpus, system)[0] for _ in range(repeats - 1))]
        seconds = statistics.median(times)
        mean, peak = queue_depth(result.log)
        rate = result.events / seconds
        slowest, fastest = result.events / max(times), result.events / min(times)
        met &= rate >= 200_000
        rates.append(f"{system} {rate / 1000:,.0f}k")
        table.row(
            [
                system,
                f"{result.events:,}",
                f"{seconds:.2f}",
                f"{rate:,.0f}",
                f"{slowest / 1000:,.0f}k-{fastest / 1000:,.0f}k",
                f"{mean:,.0f}/{peak:,}",
            ]
        )
    print()
    return Verdict(met, "events/s: " + "; ".join(rates))


def memory(scale: int) -> Verdict:
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
        "log records per job)",
        flush=True,
    )
    return Verdict(per_job <= 500, f"{per_job:,.0f} B per job")


def provenance() -> str:
    """What the figures were measured on: the package's version and commit (when run from a
    git checkout; "modified" when tracked files differ from it), Python, the machine, the day."""
    here = Path(__file__).resolve().parent
    try:
        git = ["git", "-C", str(here)]
        commit = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        source = f"commit {commit}{' (modified)' if changed else ''}"
    except (OSError, subprocess.CalledProcessError):
        source = "not a git checkout"
    return (
        f"evalstop {__version__}, {source}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs ({platform.machine()}); {time.strftime('%Y-%m-%d')}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_engine.py")
    parser.add_argument("--scales", default="1,10,100", help="multiples of 1,000 jobs / 64 GPUs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--system", action="append", help="growth and Philly: these only")
    parser.add_argument("--skip", action="append", default=[], choices=sorted(GOALS))
    args = parser.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",")]
    systems = args.system or list(SYSTEMS)
    print(provenance(), end="\n\n", flush=True)
    verdicts: dict[str, Verdict] = {}
    if "peers" not in args.skip:
        verdicts["peers"] = peers(scales, args.repeats)
    if "growth" not in args.skip:
        grown = growth(scales, args.repeats, systems)
        verdicts["growth"] = grown["growth"]
        if "fair-share" in systems:
            verdicts["fair-share"] = grown["fair-share"]
    if "philly" not in args.skip:
        verdicts["philly"] = philly(systems, args.repeats)
    if "memory" not in args.skip:
        verdicts["memory"] = memory(min(scales[-1], 10))
    for name, verdict in verdicts.items():
        state = "met" if verdict.met else "NOT met"
        print(f"goal: {GOALS[name]}: {state} ({verdict.figures})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
