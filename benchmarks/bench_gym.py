"""The gym's throughput and memory (issue 22's goal: 500 runs at the default size in at most
5 minutes of CPU on a 2-core machine, peak memory under 1 GB with 2 workers).

Runs ``evalstop gym --runs N --workers W`` in a child process (the dev split's first ``N``
seeds, default distribution, a temporary output folder) and prints runs per second of wall
time, CPU seconds of the whole process tree (the command and its workers, from
``resource.getrusage`` of the children), CPU per run, and the peak resident set size of the
largest process (the command or one worker; Linux reports it in KiB). CPU time, unlike wall
time, does not depend much on what else the machine runs; say so when quoting wall figures
from a shared machine.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "measure"]

SRC = Path(__file__).resolve().parents[1] / "src"


def measure(runs: int, workers: int) -> dict[str, float]:
    """Generate ``runs`` runs with ``workers`` workers in a child; its figures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "evalstop.cli",
            "gym",
            "--runs",
            str(runs),
            "--split",
            "dev",
            "--workers",
            str(workers),
            "--out",
            str(Path(folder) / "gym"),
            "--no-progress",
        ]
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env={"PYTHONPATH": str(SRC)})
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "runs": runs,
        "workers": workers,
        "wall_s": wall,
        "cpu_s": cpu,
        "runs_per_s": runs / wall,
        "cpu_per_run_s": cpu / runs,
        "peak_rss_mib": after.ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="runs to generate (500)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    args = parser.parse_args(argv)
    figures = measure(args.runs, args.workers)
    print(
        f"gym: {figures['runs']:.0f} runs, {figures['workers']:.0f} workers: "
        f"{figures['runs_per_s']:.2f} runs/s wall ({figures['wall_s']:.1f} s), "
        f"{figures['cpu_s']:.1f} s CPU ({figures['cpu_per_run_s']:.3f} s a run), "
        f"peak RSS {figures['peak_rss_mib']:.0f} MiB (largest process)"
    )
    print("goal: <= 300 s CPU for 500 runs, peak RSS < 1024 MiB with 2 workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
