"""Simulator throughput: the default 64-GPU workload against ten times the work.

Prints, for each size, the median over repeats of the simulation wall time (workload
generation is timed apart), events per second, and the ratio of the large run's time to the
small one's (target: the default run under 1 s, ten times the work under twelve times the
time).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from evalstop.core.registry import make_policy
from evalstop.experiments.tables import format_table
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate

__all__ = ["main", "measure"]


def measure(gpus: int, jobs: int, policy: str, repeats: int, seed: int = 0) -> dict[str, float]:
    """Median generation time, simulation time and events/s of one workload size."""
    config = WorkloadConfig(n_jobs=jobs, gpus=gpus)
    gen_times: list[float] = []
    sim_times: list[float] = []
    events = 0
    for _ in range(repeats):
        start = time.perf_counter()
        workload = generate(config, seed)
        gen_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = simulate(workload, make_policy(policy), Cluster(gpus=gpus))
        sim_times.append(time.perf_counter() - start)
        events = result.events
    sim = statistics.median(sim_times)
    return {
        "gpus": gpus,
        "jobs": jobs,
        "events": events,
        "generate_s": statistics.median(gen_times),
        "simulate_s": sim,
        "events_per_s": events / sim,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_simulator.py")
    parser.add_argument(
        "--policy",
        action="append",
        help="system(s) to time (default: evalstop+srtf-est, the CLI default, and evalstop+fifo)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for policy in args.policy or ["evalstop+srtf-est", "evalstop+fifo"]:
        small = measure(64, 1_000, policy, args.repeats)
        large = measure(640, 10_000, policy, args.repeats)
        for r in (small, large):
            ratio = large["simulate_s"] / small["simulate_s"]
            rows.append(
                [
                    policy,
                    f"{int(r['gpus'])} GPUs, {int(r['jobs']):,} jobs",
                    f"{int(r['events']):,}",
                    f"{r['generate_s']:.3f}",
                    f"{r['simulate_s']:.3f}",
                    f"{r['events_per_s']:,.0f}",
                    "" if r is small else f"{ratio:.2f}x",
                ]
            )
    print(
        format_table(
            ["system", "workload", "events", "generate s", "simulate s", "events/s", "10x/1x"],
            rows,
            title=f"simulator benchmark, median of {args.repeats} "
            "(targets: 1x < 1 s, 10x/1x < 12x)",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
