"""``evalstop simulate``: one policy on one synthetic workload, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from evalstop.cli.cluster_trace import add_trace_arguments, load_trace_workload, trace_spec
from evalstop.cli.errors import CliError
from evalstop.cli.options import add_workload_arguments, workload_config
from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.experiments.tables import format_table, pct
from evalstop.sim.attach import AttachRule
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.summary import summarize
from evalstop.sim.workload import WorkloadConfig, generate

__all__ = ["add_arguments", "render", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        default="evalstop+srtf-est",
        help="a base policy (fifo, sjf-est, srtf-est, loss-aware, las, fair-share), optionally "
        "wrapped: evalstop+BASE, stopat-0.65+BASE, lossplateau+BASE (default evalstop+srtf-est)",
    )
    parser.add_argument("--k", type=int, default=2, help="declines that trigger EvalStop (2)")
    add_workload_arguments(parser)
    add_trace_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--no-progress", action="store_true", help="no line on stderr as each step ends"
    )


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"


def render(summary: dict[str, Any]) -> str:
    """The human-readable table of a summary."""
    det = summary["detection"]

    def rate(value: float | None) -> str:
        return "n/a" if value is None else pct(value)

    rows = [
        ["jobs", str(summary["jobs"])],
        ["JCT mean", _hours(summary["jct_mean"])],
        ["JCT median", _hours(summary["jct_median"])],
        ["JCT p95", _hours(summary["jct_p95"])],
        ["queueing delay mean", _hours(summary["queueing_delay_mean"])],
        ["makespan", _hours(summary["makespan"])],
        ["GPU utilisation", pct(summary["utilization"])],
        ["wasted GPU-time", f"{summary['wasted_gpu_time'] / 3600:,.0f} GPU-h"],
        ["jobs stopped", str(summary["stopped"])],
        ["precision (RLHF)", rate(det["precision"])],
        ["recall (RLHF)", rate(det["recall"])],
        ["false-positive rate", rate(det["fpr"])],
    ]
    for kind, stats in summary["jct_by_kind"].items():
        rows.append([f"JCT mean, {kind} ({stats['count']})", _hours(stats["mean"])])
    title = (
        f"{summary['policy']} on {summary['gpus']} GPUs, seed {summary['seed']}, "
        f"{summary['events']} events"
    )
    world = summary.get("world")
    if world is not None:
        title += f", world {world['name']} (sigma {world['sigma']:g})"
    trace = summary.get("trace")
    if trace is not None:
        title += f", trace {trace['source']} ({trace['tenants']} tenants)"
    return format_table(["metric", "value"], rows, title=title)


def _workload(
    args: argparse.Namespace, config: WorkloadConfig
) -> tuple[tuple[Job, ...], int, dict[str, Any] | None]:
    """The jobs, the cluster's GPUs and the ``trace`` summary (None when synthetic)."""
    spec = trace_spec(args, gpus=args.gpus, jobs=args.jobs, load=config.load)
    if spec is None:
        return generate(config, args.seed).jobs, config.gpus, None
    if args.arrival_rate is not None:
        raise CliError("--arrival-rate does not apply to --trace (the trace has arrivals)")
    rule = AttachRule(
        mix=config.mix,
        hacking_share=config.hacking_share,
        world=config.world,
        eval_noise=config.eval_noise,
        loss_noise=config.loss_noise,
        evals_per_run=config.evals_per_run,
    )
    workload, fitted = load_trace_workload(spec, rule, args.seed)
    trace = {
        **spec.describe(),
        **fitted.describe(),
        "tenants": len({job.spec.tenant for job in workload.jobs}),
        "rule": rule.describe(),
    }
    return workload.jobs, fitted.gpus, trace


def _world(config: WorkloadConfig) -> dict[str, Any]:
    """The simulated world of a run as the JSON reports it (spec CLI-5)."""
    return {
        "name": config.world.name,
        "sigma": config.sigma,
        "evals_per_run": config.rlhf_evals,
    }


class _Progress:
    """A line on stderr as each step of the command ends, with its CPU seconds (CLI-8)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.since = time.process_time()

    def __call__(self, what: str) -> None:
        now = time.process_time()
        if self.enabled:
            sys.stderr.write(f"simulate: {what} in {now - self.since:.1f} s\n")
            sys.stderr.flush()
        self.since = now


def run(args: argparse.Namespace) -> int:
    config = workload_config(args)
    if args.k < 1:
        raise CliError(f"--k must be >= 1, got {args.k}")
    try:
        policy = make_policy(args.policy, k=args.k)
    except ValueError as error:
        raise CliError(f"--policy: {error}") from None
    progress = _Progress(not args.no_progress)
    jobs, gpus, trace = _workload(args, config)
    progress(f"{len(jobs):,} jobs on {gpus:,} GPUs built")
    result = simulate(jobs, policy, Cluster(gpus=gpus))
    progress(f"{result.policy}, {result.events:,} events")
    summary = summarize(result, args.seed)
    summary["world"] = _world(config)
    if trace is not None:
        summary["trace"] = trace
    if args.json:
        json.dump(summary, sys.stdout, sort_keys=True, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(render(summary))
    return 0
