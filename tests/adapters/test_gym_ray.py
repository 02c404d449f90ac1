"""The gym on Ray: the same files as the process pool (GYM-9, RAY-1).

Needs Ray (the ``adapters`` nox session installs it); skipped without it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def test_gym9_runs_on_a_local_ray_are_the_process_pools(tmp_path: Path) -> None:
    """GYM-9: six runs as Ray tasks on a fresh local Ray write the bytes two local workers
    write."""
    write_runs(range(6), tmp_path / "ray", overrides=SMALL, backend=RayBackend(cpus=2))
    write_runs(range(6), tmp_path / "pool", overrides=SMALL, workers=2)
    assert _files(tmp_path / "ray") == _files(tmp_path / "pool")
    assert len(_files(tmp_path / "pool")) == 12
