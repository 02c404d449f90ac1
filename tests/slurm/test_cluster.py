"""The test cluster itself (spec SLM-9): what it offers, and that it fails loudly."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from slurm.cluster import Cluster, ClusterError


def test_slm9_the_node_has_eight_gpus_of_device_files(cluster: Cluster) -> None:
    """SLM-9: one idle node, 8 GPUs (character devices), its configuration in its folder."""
    node = cluster.run("scontrol", "show", "node", cluster.host).stdout
    assert "Gres=gpu:8" in node
    for index in range(8):
        assert stat.S_ISCHR((cluster.root / "dev" / f"gpu{index}").stat().st_mode)
    conf = cluster.conf.read_text(encoding="utf-8")
    assert "SelectType=select/cons_tres" in conf
    assert "SchedulerType=sched/backfill" in conf
    assert str(cluster.conf).startswith(str(cluster.root))


def test_slm9_a_cluster_that_cannot_start_raises_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SLM-9: programs missing: a ClusterError naming them and the packages; no process."""
    monkeypatch.setenv("PATH", "/nonexistent")
    broken = Cluster(tmp_path / "broken")
    with pytest.raises(ClusterError, match=r"not on PATH: munged, slurmctld.*slurm-wlm munge"):
        broken.start()
    assert broken.leftovers() == []


def test_slm9_a_daemon_that_exits_fails_the_start_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SLM-9: daemons that cannot start (a bad configuration) are an error quoting their
    logs, and the daemons already started (munged) are stopped."""
    broken = Cluster(tmp_path / "bad")
    real = broken._write_files

    def corrupt() -> None:
        real()
        with broken.conf.open("a", encoding="utf-8") as conf:
            conf.write("NoSuchOption=1\n")

    monkeypatch.setattr(broken, "_write_files", corrupt)
    says = r"(slurmctld|slurmd) exited with 1\n--- (.|\n)*unrecognized key: NoSuchOption"
    with pytest.raises(ClusterError, match=says):
        broken.start(timeout=30)
    assert broken.leftovers() == []
