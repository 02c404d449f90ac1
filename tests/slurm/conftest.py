"""The fixtures of ``tests/slurm``: the real cluster they run against (spec ``SLM-9``).

One cluster per test session, in a fresh temporary folder; it is stopped after the last test
and the session fails if any of its processes is left. A cluster that cannot start is an
error of every test that needs it, never a skip. These tests are collected only with
``EVALSTOP_SLURM=1`` (tests/conftest.py), which the nox session sets.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm.cluster import Cluster, ensure_user

OTHER_USER = "evalstop-other"
"""A second local user whose jobs the watcher must never touch."""


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="evalstop-slurm-"))
    root.chmod(0o755)
    ensure_user(OTHER_USER)
    instance = Cluster(root / "cluster")
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()
        left = instance.leftovers()
        shutil.rmtree(root, ignore_errors=True)
        assert left == [], f"processes of the cluster left running: {left}"


@pytest.fixture
def workdir(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder for one test's run folders, readable by every user; its jobs are cancelled
    after the test, whatever its outcome."""
    folder = Path(tempfile.mkdtemp(prefix="runs-", dir=cluster.root.parent))
    folder.chmod(0o777)
    yield folder
    cluster.run("scancel", "--user=root", check=False)
    cluster.run("scancel", f"--user={OTHER_USER}", check=False)
    deadline = time.monotonic() + 20
    while cluster.run("squeue", "-h", "-o", "%i", check=False).stdout.strip():
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)


class Sidecar:
    """``evalstop watch --slurm ...`` as a child process; its stdout and stderr in files."""

    def __init__(self, cluster: Cluster, folder: Path, *args: str) -> None:
        self.out, self.err = folder / "watch.out", folder / "watch.err"
        self._argv = [sys.executable, "-m", "evalstop", "watch", "--slurm", *args]
        self.env = {**cluster.env, "PYTHONUNBUFFERED": "1"}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Sidecar:
        with self.out.open("ab") as out, self.err.open("ab") as err:
            self.process = subprocess.Popen(self._argv, stdout=out, stderr=err, env=self.env)
        return self

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> int:
        """SIGTERM, and the exit code (WCH-7: it ends after the transaction in flight)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(20)

    def lines(self) -> list[str]:
        return self.out.read_text(encoding="utf-8").splitlines()

    def problems(self) -> list[str]:
        return self.err.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def sidecars(cluster: Cluster) -> Iterator[list[Sidecar]]:
    """The sidecars a test starts (append them); each is ended after the test."""
    started: list[Sidecar] = []
    yield started
    for sidecar in started:
        if sidecar.process is not None and sidecar.process.poll() is None:
            sidecar.process.kill()
            sidecar.process.wait(10)
