"""``reproduce --workers`` is capped at a multiple of the CPU count (REP-9)."""

from __future__ import annotations

import os

import pytest

from evalstop.cli import main
from evalstop.cli import reproduce as reproduce_module
from evalstop.experiments.paper.runner import MAX_WORKERS_PER_CPU

SMALL = ["reproduce", "--seeds", "1", "--jobs", "5", "--no-progress"]


class ReachedError(Exception):
    """Raised in place of running the plan: the options passed validation."""


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    def refuse(*args: object, **kwargs: object) -> None:
        raise ReachedError

    monkeypatch.setattr(reproduce_module, "run_plan", refuse)


@pytest.mark.parametrize("extra", [[], ["--backend", "ray"]])
@pytest.mark.parametrize("workers", [2 * MAX_WORKERS_PER_CPU + 1, 10**6, 10**30])
def test_absurd_workers_are_one_line(
    two_cpus: None, workers: int, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-9: more than 4 workers per CPU (process pool or local Ray) is one CLI-1 line naming
    the limit, before any worker or Ray starts."""
    assert main([*SMALL, *extra, "--workers", str(workers)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--workers must be at most {2 * MAX_WORKERS_PER_CPU}" in err
    assert str(workers) in err


def test_the_limit_itself_is_accepted(two_cpus: None) -> None:
    """REP-9: exactly 4 workers per CPU passes validation (the plan is then run)."""
    with pytest.raises(ReachedError):
        main([*SMALL, "--workers", str(2 * MAX_WORKERS_PER_CPU)])


def test_a_cluster_address_is_not_capped(two_cpus: None) -> None:
    """REP-9: with --address the cluster's CPUs decide, so --workers is not checked."""
    with pytest.raises(ReachedError):
        main([*SMALL, "--backend", "ray", "--address", "auto", "--workers", "1000"])
