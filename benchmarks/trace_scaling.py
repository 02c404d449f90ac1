"""Reading time and peak memory of the trace readers as the file grows (spec TRC-13).

For each size, a long CSV and a JSONL file of many runs is written, and one run of a fixed
1,000 readings is read from it with ``where`` -- in a fresh process, so the peak resident
memory (``ru_maxrss``) is the reader's alone. Linear time shows as a flat MB per CPU-second
and a flat CPU ms per MiB column (CPU time: wall time on a shared machine also measures the
neighbours); memory that follows the curve kept, not the file, shows as a flat peak-memory
column. The last two rows read a CSV and a JSONL file whose every row is the curve, to show
memory per reading kept.

    python benchmarks/trace_scaling.py [--sizes 16,64,256,1024] [--dir /tmp/evalstop-bench]

Sizes are MiB. Nothing here is tuned to data: the rows are synthetic (uniform noise).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

TARGET_ROWS = 1_000
READ = """
import resource, sys, time
from evalstop.traces import read_trace
start, cpu = time.perf_counter(), time.process_time()
where = None if sys.argv[3] == "-" else {"run": sys.argv[3]}
trace = read_trace(sys.argv[1], sys.argv[2], where=where)
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(trace), elapsed, cpu, peak)
"""


def write_file(path: Path, size: int, kind: str, every_row: bool) -> int:
    """Write about ``size`` bytes; return the rows written."""
    rng = random.Random(0)
    rows = 0
    target_every = max(1, (size // (30 if kind == "csv" else 64)) // TARGET_ROWS)
    with path.open("w", encoding="utf-8") as out:
        if kind == "csv":
            out.write("run,step,acc,loss\n")
        written = 0
        while written < size:
            lines = []
            for _ in range(10_000):
                run = "target" if every_row or rows % target_every == 0 else f"r{rows % 97}"
                step, acc, loss = rows, rng.random(), rng.random()
                if kind == "csv":
                    lines.append(f"{run},{step},{acc:.6f},{loss:.6f}\n")
                else:
                    record = {
                        "run": run,
                        "step": step,
                        "acc": round(acc, 6),
                        "loss": round(loss, 6),
                    }
                    lines.append(json.dumps(record) + "\n")
                rows += 1
            chunk = "".join(lines)
            out.write(chunk)
            written += len(chunk)
    return rows


def measure(path: Path, where: str) -> tuple[int, float, float, int]:
    proc = subprocess.run(
        [sys.executable, "-c", READ, str(path), "acc", where],
        capture_output=True,
        text=True,
        check=True,
    )
    kept, elapsed, cpu, peak_kib = proc.stdout.split()
    return int(kept), float(elapsed), float(cpu), int(peak_kib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,256,1024", help="file sizes in MiB")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/evalstop-bench"))
    parser.add_argument("--every-row-size", type=int, default=200, help="MiB; 0 to skip")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    header = (
        f"{'file':>6} {'MiB':>6} {'rows':>11} {'kept':>8} {'wall s':>7} {'cpu s':>7} "
        f"{'MB/cpu-s':>8} {'ms/MiB':>7} {'peak MiB':>9}"
    )
    print(header)
    cases = [(int(s), kind, False) for s in args.sizes.split(",") for kind in ("csv", "jsonl")]
    if args.every_row_size:
        cases += [(args.every_row_size, kind, True) for kind in ("csv", "jsonl")]
    for mib, kind, every_row in cases:
        path = args.dir / f"bench-{mib}.{kind}"
        rows = write_file(path, mib * 2**20, kind, every_row)
        kept, elapsed, cpu, peak = measure(path, "-" if every_row else "target")
        size = path.stat().st_size
        label = f"{kind}{'*' if every_row else ''}"
        print(
            f"{label:>6} {size / 2**20:6.0f} {rows:11,} {kept:8,} {elapsed:7.1f} {cpu:7.1f} "
            f"{size / 1e6 / cpu:8.1f} {cpu * 1e3 / (size / 2**20):7.0f} {peak / 1024:9.0f}",
            flush=True,
        )
        path.unlink()
    print("* every row is the curve: memory follows the readings kept")


if __name__ == "__main__":
    main()
