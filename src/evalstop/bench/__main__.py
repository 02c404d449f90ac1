"""``python -m evalstop.bench``: every benchmark, one after the other."""

from __future__ import annotations

import importlib

for name in ("simulator", "monitor", "reproduce"):
    try:
        module = importlib.import_module(f"evalstop.bench.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"evalstop.bench.{name}":
            raise
        continue
    print(f"== {name} ==")
    module.main([])
    print()
