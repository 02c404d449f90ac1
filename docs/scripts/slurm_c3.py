"""The paper's C3 on a real Slurm cluster: regenerate the tables of ``docs/slurm.md`` (SLM-10).

Starts the test cluster of ``tests/slurm`` (root, Debian's ``slurm-wlm`` and ``munge``: as for
``nox -s slurm``) and runs one job mix through Slurm's own scheduler (FIFO priority,
``sched/backfill``) twice: without a watcher, then with ``evalstop watch --slurm``. Each job
replays one labelled real curve of the corpus (every curve with at least 5 points, in catalogue
order), one evaluation every ``--seconds-per-eval`` seconds, on 2 of the node's 8 GPUs, all
submitted at once. It prints, and writes between the markers of ``docs/slurm.md``:

- the mean JCT with and without the watcher, measured, beside the simulator's prediction for
  the same jobs: ``evalstop simulate``'s engine (``fifo`` and ``evalstop+fifo``, 8 GPUs) on
  the same arrivals, GPUs, durations, evaluations and hacking labels, with the paper world's
  synthetic curves over ``--seeds`` seeds (mean and the 2.5-97.5 percentile interval of the
  change: where one run is expected to fall), and on the real curves' own stops (each stopped
  job's duration cut at the evaluation where replay stops it);
- how fast a stop's GPUs went to a waiting job: the evaluation that fired to the signal (the
  poll interval's part), the signal to the job's exit, the exit to the start of the next job
  on those GPUs (Slurm's part).

The rule is the simulator's ``evalstop`` detector (k = 2 declines) in both, so the two sides
apply the same rule. Usage: ``PYTHONPATH=src python docs/scripts/slurm_c3.py [--write]``;
``--simulator-only`` recomputes only the simulator's rows in place, without a cluster (after a
change of the simulator: ``tests/repo/test_slurm_page.py`` fails until then).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from evalstop.core.registry import make_policy  # noqa: E402
from evalstop.sim.attach import AttachRule, workload_from_records  # noqa: E402
from evalstop.sim.metrics import system_metrics  # noqa: E402
from evalstop.sim.run import Cluster as SimCluster  # noqa: E402
from evalstop.sim.run import simulate  # noqa: E402
from evalstop.traces import Trace, TraceFormat, replay  # noqa: E402
from slurm.cluster import Cluster  # noqa: E402
from slurm.jobs import METRIC, Curve, curves, outcome, submit  # noqa: E402

__all__ = ["HEADER", "main", "measured_row", "simulated", "simulated_rows"]

PAGE = ROOT / "docs" / "slurm.md"
START, END = "<!-- slurm-c3 start -->", "<!-- slurm-c3 end -->"
GPUS, GPUS_PER_JOB = 8, 2
DETECTOR = ("--detector", "evalstop", "--k", "2")


def _replay_stop(curve: Curve) -> int | None:
    """The index of the evaluation at which replay (the watcher's rule) stops the curve."""
    steps, values = zip(*curve.points, strict=True)
    trace = Trace("curve", METRIC, TraceFormat.JSONL, steps, values)
    from evalstop.core.detectors import DeclineDetector

    stop = replay(trace, DeclineDetector(k=2), "max").stop_step
    return None if stop is None else list(steps).index(stop)


def _run_slurm(
    cluster: Cluster, folder: Path, mix: list[Curve], args: argparse.Namespace, watch: bool
) -> dict[str, Any]:
    folder.mkdir()
    submitted = {}
    for index, curve in enumerate(mix):
        name = f"c3-{index:02d}"
        submit(cluster, folder / name, curve, name=name, gpus=GPUS_PER_JOB,
               seconds_per_eval=args.seconds_per_eval)  # fmt: skip
        submitted[name] = time.time()
    watcher = None
    if watch:
        argv = [sys.executable, "-m", "evalstop", "watch", "--slurm", "--metric", METRIC,
                "--mode", "max", *DETECTOR, "--interval", str(args.interval),
                "--slurm-grace", "30", "--state", str(folder / "watch.sqlite")]  # fmt: skip
        watcher = subprocess.Popen(argv, env=cluster.env, stdout=subprocess.DEVNULL)
    while cluster.run("squeue", "-h", "-o", "%i").stdout.strip():
        time.sleep(0.5)
    if watcher is not None:
        watcher.terminate()
        watcher.wait(30)
    jobs = {}
    for name, at in submitted.items():
        done = outcome(folder / name)
        marker = folder / name / "evalstop-stop.json"
        jobs[name] = {
            "submit": at,
            "start": done.start,
            "end": done.end,
            "gpus": done.gpus,
            "stopped": done.reason == "signal",
            "marker": json.loads(marker.read_text()) if marker.exists() else None,
            "eval_times": _eval_times(folder / name),
        }
    return jobs


def _eval_times(folder: Path) -> dict[int, float]:
    lines = (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return {int(row["step"]): float(row["time"]) for row in map(json.loads, lines)}


def _latencies(jobs: dict[str, Any]) -> dict[str, list[float]]:
    """Per stop: fired evaluation -> signal, signal -> exit, exit -> next start on its GPUs."""
    found: dict[str, list[float]] = {"detect": [], "exit": [], "slurm": []}
    for job in jobs.values():
        marker = job["marker"]
        if not job["stopped"] or marker is None:
            continue
        signalled = float(marker["slurm"]["signalled_at"])
        found["detect"].append(signalled - job["eval_times"][marker["stop_step"]])
        found["exit"].append(job["end"] - signalled)
        freed = set(job["gpus"].split(","))
        later = [o["start"] for o in jobs.values()
                 if o["start"] >= job["end"] and freed & set(o["gpus"].split(","))]  # fmt: skip
        if later:
            found["slurm"].append(min(later) - job["end"])
    return found


def _records(mix: list[Curve], seconds: float, cut: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for index, curve in enumerate(mix):
        evals = len(curve.points)
        stop = _replay_stop(curve) if cut else None
        ran = evals if stop is None else stop + 1
        duration = round(ran * seconds)
        rows.append({"id": f"c3-{index:02d}", "arrival": 0, "gpus": GPUS_PER_JOB,
                     "duration": duration, "steps": ran, "eval_interval": 1, "kind": "rlhf",
                     "hacking": curve.label == "hacking", "estimate": duration})  # fmt: skip
    return rows


def _mean_jct(rows: list[dict[str, object]], policy: str, seed: int) -> tuple[float, int]:
    workload = workload_from_records(rows, AttachRule(world="paper"), seed=seed)
    result = simulate(workload.jobs, make_policy(policy), SimCluster(gpus=GPUS))
    metrics = system_metrics(result)
    return metrics.jct.mean, metrics.stopped


def simulated(mix: list[Curve], args: argparse.Namespace) -> dict[str, Any]:
    """The simulator's side for ``mix`` (``args``: seconds per evaluation, seeds)."""
    rows = _records(mix, args.seconds_per_eval, cut=False)
    changes, stops, base, overlay = [], [], [], []
    for seed in range(args.seeds):
        without, _ = _mean_jct(rows, "fifo", seed)
        with_, stopped = _mean_jct(rows, "evalstop+fifo", seed)
        base.append(without)
        overlay.append(with_)
        changes.append(100.0 * (with_ - without) / without)
        stops.append(stopped)
    cut_without, _ = _mean_jct(_records(mix, args.seconds_per_eval, cut=True), "fifo", 0)
    quantiles = statistics.quantiles(changes, n=40, method="inclusive")
    return {
        "without": statistics.fmean(base),
        "with": statistics.fmean(overlay),
        "change": statistics.fmean(changes),
        "interval": (quantiles[0], quantiles[-1]),
        "stops": statistics.fmean(stops),
        "real_stops_without": _mean_jct(rows, "fifo", 0)[0],
        "real_stops_with": cut_without,
        "real_stops": sum(_replay_stop(c) is not None for c in mix),
    }


HEADER = (
    "| | mean JCT without (s) | mean JCT with (s) | change | jobs stopped |\n|---|---|---|---|---|"
)


def measured_row(measured: dict[str, dict[str, Any]], jobs: int) -> str:
    """The table's row of the two runs on Slurm."""

    def mean_jct(run: dict[str, Any]) -> float:
        return statistics.fmean(j["end"] - j["submit"] for j in run.values())

    without, with_ = mean_jct(measured["without"]), mean_jct(measured["with"])
    stops = sum(j["stopped"] for j in measured["with"].values())
    change = 100 * (with_ - without) / without
    return (
        f"| real Slurm, measured | {without:.1f} | {with_:.1f} | {change:+.1f}% | "
        f"{stops} of {jobs} |"
    )


def simulated_rows(sim: dict[str, Any], jobs: int) -> list[str]:
    """The table's rows of the simulator (deterministic: the docs test recomputes them)."""
    low, high = sim["interval"]
    real = 100 * (sim["real_stops_with"] / sim["real_stops_without"] - 1)
    return [
        f"| simulator, the real curves' stops | {sim['real_stops_without']:.1f} | "
        f"{sim['real_stops_with']:.1f} | {real:+.1f}% | {sim['real_stops']} of {jobs} |",
        f"| `evalstop simulate`, synthetic curves, mean of seeds | {sim['without']:.1f} | "
        f"{sim['with']:.1f} | {sim['change']:+.1f}% (95%: {low:+.1f}% to {high:+.1f}%) | "
        f"{sim['stops']:.1f} of {jobs} |",
    ]


def _latency_table(found: dict[str, list[float]], interval: float) -> str:
    rows = [
        "| step | median (s) | max (s) | stops |",
        "|---|---|---|---|",
    ]
    names = {
        "detect": f"evaluation written -> signal sent (poll interval {interval:g} s)",
        "exit": "signal -> the job has exited",
        "slurm": "exit -> a waiting job starts on its GPUs (Slurm)",
    }
    for key, label in names.items():
        values = found[key]
        if values:
            rows.append(f"| {label} | {statistics.median(values):.2f} | {max(values):.2f} | "
                        f"{len(values)} |")  # fmt: skip
    return "\n".join(rows)


def page_settings() -> tuple[float, int]:
    """The seconds per evaluation and the seeds the page's tables were made with."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"one evaluation every ([0-9.]+) s, .*?, ([0-9]+) simulator seeds", text)
    if found is None:
        raise SystemExit(f"{PAGE}: no generated C3 section")
    return float(found.group(1)), int(found.group(2))


def _rewrite_simulator_rows(mix: list[Curve], args: argparse.Namespace) -> int:
    args.seconds_per_eval, args.seeds = page_settings()
    lines = PAGE.read_text(encoding="utf-8").splitlines(keepends=True)
    rows = iter(simulated_rows(simulated(mix, args), len(mix)))
    starts = ("| simulator, the real curves' stops", "| `evalstop simulate`, synthetic curves")
    out = [next(rows) + "\n" if line.startswith(starts) else line for line in lines]
    PAGE.write_text("".join(out), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-per-eval", type=float, default=2.0)
    parser.add_argument("--interval", type=float, default=1.0, help="the watcher's poll")
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--write", action="store_true", help="rewrite docs/slurm.md's tables")
    parser.add_argument(
        "--simulator-only",
        action="store_true",
        help="recompute only the simulator's rows of docs/slurm.md in place (no cluster)",
    )
    args = parser.parse_args(argv)
    mix = curves()
    if args.simulator_only:
        return _rewrite_simulator_rows(mix, args)
    sim = simulated(mix, args)
    with tempfile.TemporaryDirectory(prefix="evalstop-c3-") as scratch:
        root = Path(scratch)
        root.chmod(0o755)
        cluster = Cluster(root / "cluster")
        cluster.start()
        try:
            measured = {
                "without": _run_slurm(cluster, root / "without", mix, args, watch=False),
                "with": _run_slurm(cluster, root / "with", mix, args, watch=True),
            }
        finally:
            cluster.stop()
    text = "\n\n".join(
        [
            f"{len(mix)} jobs of {GPUS_PER_JOB} GPUs on {GPUS}, one evaluation every "
            f"{args.seconds_per_eval:g} s, watcher polling every {args.interval:g} s, "
            f"{args.seeds} simulator seeds:",
            "\n".join([HEADER, measured_row(measured, len(mix)), *simulated_rows(sim, len(mix))]),
            "A stop's GPUs, step by step:",
            _latency_table(_latencies(measured["with"]), args.interval),
        ]
    )
    print(text)
    if args.write:
        page = PAGE.read_text(encoding="utf-8")
        head, _, rest = page.partition(START)
        _, _, tail = rest.partition(END)
        PAGE.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
