"""The gym on Ray: the same files as the process pool (GYM-9, RAY-1).

Needs Ray (the ``adapters`` nox session installs it); skipped without it.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalstop.experiments.paper.ray_backend import RayBackend
from evalstop.gym import write_runs

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="needs Ray: pip install 'evalstop[ray]'"
)

SMALL = {"steps": 30, "evals": 5, "proxy_samples": 40, "eval_samples": 8}


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "summary.json"
    }


def _close(a: Any, b: Any) -> bool:
    """Equal JSON values, floats to within 1e-9 relative (GYM-9's Ray exception)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def _parsed(name: str, data: bytes) -> Any:
    """A JSONL file as its list of objects, a JSON file as its value."""
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return json.loads(data)


def test_gym9_runs_on_a_local_ray_are_the_process_pools(tmp_path: Path) -> None:
    """GYM-9: six runs as Ray tasks on a fresh local Ray write the same files as two local
    workers: the same names, labels, steps and parameters, every float equal to within 1e-9
    relative (Ray's workers run BLAS single-threaded, which rounds the last digit otherwise)."""
    write_runs(range(6), tmp_path / "ray", overrides=SMALL, backend=RayBackend(cpus=2))
    write_runs(range(6), tmp_path / "pool", overrides=SMALL, workers=2)
    ray, pool = _files(tmp_path / "ray"), _files(tmp_path / "pool")
    assert ray.keys() == pool.keys()
    assert len(pool) == 12
    for name in pool:
        assert _close(_parsed(name, ray[name]), _parsed(name, pool[name])), name
