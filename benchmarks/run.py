"""``python benchmarks/run.py``: every benchmark, one after the other (``nox -s bench``).

Benchmarks live outside the package: they measure it, they are not part of it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCHMARKS = ("bench_engine", "bench_simulator", "bench_monitor", "bench_scale")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    for name in BENCHMARKS:
        module = importlib.import_module(name)
        print(f"== {name} ==", flush=True)
        module.main([])
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
