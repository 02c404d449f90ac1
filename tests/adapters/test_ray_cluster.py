"""The plan on a real Ray cluster: a head and a worker process, CPU only (RAY-1).

Starts ``ray start --head`` and ``ray start --address`` as subprocesses in their own sessions
and temporary directory (so no other Ray user on the machine can find or join this cluster),
runs a small reproduction plan on it and on the process pool, and compares ``results.json``
byte for byte. Torn down afterwards, process group by process group. Needs Ray (the
``adapters`` nox session installs it); skipped without it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalstop.experiments.paper.plan import Settings, Sim, plan
from evalstop.experiments.paper.ray_backend import RayBackend
from evalstop.experiments.paper.results import build_results, results_json
from evalstop.experiments.paper.runner import Figures, run_audits, run_plan

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="needs Ray: pip install 'evalstop[ray]'"
)

RAY = str(Path(sys.executable).with_name("ray"))
SMALL = Settings(seeds=2, jobs=40, worlds=("paper",))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 15.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _reap(temp_dir: str) -> None:
    """Kill, by pid, any Ray process of this cluster that left its process group."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if temp_dir.encode() in command:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A head and one worker node on this machine; yields the head's address."""
    temp_dir = tempfile.mkdtemp(prefix="esray-", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # Its own HOME and no token authentication: a token another Ray user left in ~/.ray
    # must not decide whether this cluster's nodes and driver can talk to each other.
    isolated = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "HOME": temp_dir}
    saved = {name: os.environ.get(name) for name in isolated}
    os.environ.update(isolated)
    env = dict(os.environ)
    common = ["--block", "--num-cpus=1", "--num-gpus=0"]
    nodes: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> None:
        nodes.append(
            subprocess.Popen(
                [RAY, "start", *args, *common],
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    try:
        start("--head", f"--port={port}", f"--temp-dir={temp_dir}", "--include-dashboard=false")
        _wait(lambda: _head_answers(address, env), nodes)
        start(f"--address={address}")
        _wait_for_two_nodes(address, nodes)
        yield address
    finally:
        for node in reversed(nodes):
            _stop(node)
        _reap(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _head_answers(address: str, env: dict[str, str]) -> bool:
    done = subprocess.run(
        [RAY, "status", f"--address={address}"], env=env, capture_output=True, check=False
    )
    return done.returncode == 0


def _wait_for_two_nodes(address: str, nodes: list[subprocess.Popen[bytes]]) -> None:
    """Join as a driver until the worker node is alive, then leave."""
    ray: Any = importlib.import_module("ray")
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        _wait(lambda: sum(node["Alive"] for node in ray.nodes()) >= 2, nodes)
    finally:
        ray.shutdown()


def _wait(ready: object, nodes: list[subprocess.Popen[bytes]], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(node.poll() is not None for node in nodes):
            raise RuntimeError("a Ray node exited while starting")
        if ready():  # type: ignore[operator]
            return
        time.sleep(1.0)
    raise RuntimeError("the Ray cluster did not come up in time")


def _json(settings: Settings, figures: dict[Sim, Figures]) -> str:
    results = build_results(settings, figures, run_audits(settings))
    return json.dumps(results_json(results), indent=2, sort_keys=True, allow_nan=False)


def test_ray1_results_json_on_a_ray_cluster_is_the_process_pools(ray_cluster: str) -> None:
    """RAY-1: on a head and a worker node, the plan's results.json is byte-identical to the
    two-process pool's, and the progress callback sees every group in order."""
    sims = plan(SMALL)
    seen: list[tuple[int, int]] = []
    on_ray = run_plan(
        SMALL,
        sims,
        backend=RayBackend(address=ray_cluster),
        progress=lambda done, total: seen.append((done, total)),
    )
    pooled = run_plan(SMALL, sims, workers=2)
    assert _json(SMALL, on_ray) == _json(SMALL, pooled)
    total = seen[-1][1]
    assert seen == [(done, total) for done in range(1, total + 1)]
