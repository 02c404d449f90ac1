"""``evalstop watch --slurm`` against a real one-node cluster (spec SLM; ``nox -s slurm``).

Each job replays a real curve of the corpus, one evaluation a second; the node has 8 GPUs and
the jobs ask for more, so some wait in Slurm's queue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from evalstop.traces import Trace, TraceFormat, replay
from slurm.cluster import Cluster
from slurm.conftest import OTHER_USER, Sidecar
from slurm.jobs import METRIC, Curve, curves, outcome, submit

INTERVAL = 0.5
"""The watcher's poll interval in these tests, seconds."""

SLURM_LATENCY = 5.0
"""What the tests allow Slurm between a job's exit and the start of a job that waited for its
GPUs (measured: under a second on a shared 2-core machine, docs/slurm.md)."""


def by_name() -> dict[str, Curve]:
    return {curve.name: curve for curve in curves()}


STOPS = [
    "PAR ppo_gemma2-2b_ultrafb: ODIN",
    "PAR ppo_gemma2-2b_ultrafb: Reg",
    "PAR ppo_gemma2-2b_ultrafb: Meanstd",
    "PAR ppo_gemma2-2b_ultrafb: Clip",
]
"""Hacking curves the default rule stops at their sixth evaluation (step 16200)."""

RUNS_ON = ["PAR data_efficiency: PARref1", "PAR data_efficiency: PARref3"]
"""Healthy curves the default rule never stops."""


def replayed_stop(curve: Curve) -> int | None:
    steps, values = zip(*curve.points, strict=True)
    trace = Trace("curve", METRIC, TraceFormat.JSONL, steps, values)
    return replay(trace, None, "max").stop_step


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.2)


def idle(cluster: Cluster) -> bool:
    return not cluster.run("squeue", "-h", "-o", "%i").stdout.strip()


def sidecar(cluster: Cluster, runs: Path, *args: str) -> Sidecar:
    return Sidecar(
        cluster,
        runs,
        "--metric", METRIC, "--mode", "max", "--interval", str(INTERVAL),
        "--state", str(runs / "watch.sqlite"), *args,
    )  # fmt: skip


def test_slm8_slm1_stops_free_gpus_at_once_and_another_users_job_is_never_signalled(
    cluster: Cluster, workdir: Path, sidecars: list[Sidecar]
) -> None:
    """SLM-8, SLM-1, SLM-5: three of root's jobs stop and free 6 GPUs; the two pending jobs
    start on them within Slurm's latency; the other user's hacking job runs to its end."""
    curve = by_name()
    ids = {}
    for index, name in enumerate(STOPS[:3]):
        ids[f"stop{index}"] = submit(
            cluster, workdir / f"stop{index}", curve[name], name=f"s{index}", gpus=2
        )
    ids["other"] = submit(
        cluster, workdir / "other", curve[STOPS[3]], name="o", gpus=2, user=OTHER_USER
    )
    for index, name in enumerate(RUNS_ON):
        ids[f"wait{index}"] = submit(
            cluster, workdir / f"wait{index}", curve[name], name=f"w{index}", gpus=3
        )
    watcher = sidecar(cluster, workdir).start()
    sidecars.append(watcher)
    wait_for(lambda: idle(cluster), 60, "every job to end")
    assert watcher.stop() == 0
    assert watcher.problems() == []
    decided = [json.loads(line) for line in watcher.lines()]
    assert sorted(d["run"] for d in decided) == sorted(f"slurm:{ids[f'stop{i}']}" for i in range(3))
    ends = {}
    for index, name in enumerate(STOPS[:3]):
        folder = workdir / f"stop{index}"
        done = outcome(folder)
        marker = json.loads((folder / "evalstop-stop.json").read_text(encoding="utf-8"))
        assert done.reason == "signal" and done.signals == ("SIGTERM",)
        assert marker["stop_step"] == replayed_stop(curve[name])  # WCH-2: replay's decision
        assert done.kept == marker["best_step"]
        assert marker["slurm"]["job_id"] == ids[f"stop{index}"]
        assert done.end is not None
        ends[index] = done.end
    other = outcome(workdir / "other")
    assert other.reason == "finished" and other.signals == () and other.evals == 10
    assert not (workdir / "other" / "evalstop-stop.json").exists()
    for index in range(2):
        waited = outcome(workdir / f"wait{index}")
        assert waited.reason == "finished" and waited.start is not None
        freed = sorted(ends.values())[index + 1]  # 3 GPUs: the second freed pair, then the third
        assert freed < waited.start < freed + SLURM_LATENCY


def signalled(folder: Path) -> bool:
    try:
        marker = json.loads((folder / "evalstop-stop.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(marker.get("slurm", {}).get("signalled_at"))


def test_slm6_slm5_a_watcher_killed_twice_signals_once_and_cancels_after_the_grace(
    cluster: Cluster, workdir: Path, sidecars: list[Sidecar]
) -> None:
    """SLM-6, SLM-5, SLM-1: jobs that ignore the stop signal get it at most once and are
    cancelled once their grace is over, across two SIGKILLs of the watcher (each timed to
    land while it acts); a job outside the name filter is never touched."""
    curve = by_name()
    ids = {}
    for index, name in enumerate(STOPS):
        folder = workdir / f"train{index}"
        ids[index] = submit(
            cluster, folder, curve[name], name=f"train-{index}", gpus=2, ignore=("SIGUSR2",),
            tail_seconds=20.0,
        )  # fmt: skip
    outside = submit(cluster, workdir / "eval", curve[STOPS[0]], name="eval-0", gpus=0)
    args = ("--slurm-name", "train-.*", "--slurm-signal", "usr2", "--slurm-grace", "2")
    first = sidecar(cluster, workdir, *args).start()
    sidecars.append(first)
    wait_for(lambda: any(signalled(workdir / f"train{i}") for i in ids), 60, "a first signal")
    first.kill()
    second = sidecar(cluster, workdir, *args).start()
    sidecars.append(second)
    wait_for(lambda: bool(second.lines()), 30, "the second watcher's first line")
    second.kill()
    third = sidecar(cluster, workdir, *args).start()
    sidecars.append(third)
    wait_for(lambda: idle(cluster), 60, "every job to end")
    assert third.stop() == 0
    assert third.problems() == []
    decided = {json.loads(line)["run"] for line in third.lines()}
    assert len(third.lines()) <= len(ids) + 2  # a line repeats only after a kill (WCH-4)
    assert decided == {f"slurm:{ids[i]}" for i in ids}
    lost = 0
    for index in ids:
        folder = workdir / f"train{index}"
        signals = outcome(folder).signals
        assert signals in (("SIGUSR2", "SIGTERM"), ("SIGTERM",)), (folder, signals)
        if signals == ("SIGTERM",):  # killed between recording the signal and sending it
            lost += 1
            continue
        log = (folder / "signals.log").read_text(encoding="utf-8").split()
        asked, cancelled = float(log[0]), float(log[2])
        assert 2.0 <= cancelled - asked < 2.0 + 4 * INTERVAL + SLURM_LATENCY
    assert lost <= 2  # one action in flight at each kill at most
    assert outcome(workdir / "eval").reason == "finished"
    assert outcome(workdir / "eval").signals == ()
    assert f"slurm:{outside}" not in decided


def test_slm2_slm3_slm4_bad_input_is_one_line_each_and_the_other_jobs_are_served(
    cluster: Cluster, workdir: Path, sidecars: list[Sidecar]
) -> None:
    """SLM-2, SLM-3, SLM-4: a job without its folder, a malformed squeue answer and a
    controller that goes away mid-run are one problem line each; the two good jobs are still
    followed, decided while the controller is away, and stopped once it is back."""
    curve = by_name()
    shim = workdir / "bin"
    shim.mkdir()
    bad = workdir / "bad-answer"
    real = cluster.run("sh", "-c", "command -v squeue").stdout.strip()
    (shim / "squeue").write_text(
        f'#!/bin/sh\nif [ -e {bad} ]; then echo \'{{"jobs": [tru\'; else exec {real} "$@"; fi\n',
        encoding="utf-8",
    )
    (shim / "squeue").chmod(0o755)
    good = {}
    for index in (0, 2):
        folder = workdir / f"good{index}"
        good[index] = submit(
            cluster, folder, curve[STOPS[index]], name=f"g{index}", gpus=2,
            extra=(f"--comment={folder}",), tail_seconds=30.0,
        )  # fmt: skip
    lost = submit(cluster, workdir / "lost", curve[STOPS[1]], name="lost", gpus=2)
    watcher = sidecar(cluster, workdir, "--slurm-folder", "comment")
    watcher.env["PATH"] = f"{shim}:{watcher.env['PATH']}"
    watcher.start()
    sidecars.append(watcher)
    time.sleep(1.5)
    bad.touch()
    time.sleep(1.5)
    bad.unlink()
    time.sleep(1.0)
    cluster.stop_controller()
    try:
        wait_for(lambda: all((workdir / f"good{i}" / "evalstop-stop.json").exists() for i in good),
                 30, "both decisions while the controller is away")  # fmt: skip
        time.sleep(2 * INTERVAL)
        assert not any((workdir / f"good{i}" / "signals.log").exists() for i in good)
    finally:
        cluster.start_controller()
    wait_for(lambda: idle(cluster), 60, "every job to end")
    assert watcher.stop() == 0
    problems = watcher.problems()
    assert sum(f"slurm job {lost} (lost): has no comment" in line for line in problems) == 1
    assert sum("squeue --json: not JSON" in line for line in problems) == 1
    assert sum("squeue --json: Slurm says slurm_load_jobs" in line for line in problems) == 1
    for index, job_id in good.items():
        assert sum(f"--full {job_id}: exit" in line for line in problems) <= 1, problems
        assert outcome(workdir / f"good{index}").signals == ("SIGTERM",)
    # A signal tried while the controller was away failed (a line) or waited in scancel's
    # own retries; either way it reached each job once, after the controller came back.
    assert outcome(workdir / "lost").reason == "finished"
    assert all(line.startswith("evalstop watch: ") for line in problems)
