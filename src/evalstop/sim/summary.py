"""The JSON summary of one simulation (the schema of ``evalstop simulate --json``).

Times are seconds, GPU-time is GPU-seconds, rates are fractions in [0, 1]; NaN becomes null.
The schema is documented in ``docs/cli.md`` (spec ``CLI-3``).
"""

from __future__ import annotations

import math
from typing import Any

from evalstop.sim.detection import detection_metrics
from evalstop.sim.metrics import job_outcomes, system_metrics
from evalstop.sim.run import Result

__all__ = ["SCHEMA_VERSION", "finite_or_none", "summarize"]

SCHEMA_VERSION = 1


def finite_or_none(value: float) -> float | None:
    """``value`` itself, or None when it is NaN or infinite (JSON has no NaN)."""
    return value if math.isfinite(value) else None


def summarize(result: Result, seed: int) -> dict[str, Any]:
    """A JSON-ready dict of the system and detection metrics of ``result``."""
    outcomes = job_outcomes(result)
    system = system_metrics(result, list(outcomes.values()))
    detection = detection_metrics(outcomes.values(), {job.job_id: job for job in result.jobs})
    return {
        "schema": SCHEMA_VERSION,
        "policy": result.policy,
        "seed": seed,
        "gpus": result.cluster.gpus,
        "jobs": system.jobs,
        "events": result.events,
        "jct_mean": system.jct.mean,
        "jct_median": system.jct.median,
        "jct_p95": system.jct.p95,
        "jct_by_kind": {
            kind: {"count": s.count, "mean": s.mean, "median": s.median, "p95": s.p95}
            for kind, s in system.jct_by_kind.items()
        },
        "queueing_delay_mean": system.queueing_delay_mean,
        "makespan": system.makespan,
        "utilization": system.utilization,
        "gpu_time": system.gpu_time,
        "wasted_gpu_time": system.wasted_gpu_time,
        "quality_retained_rlhf": finite_or_none(system.quality_retained_rlhf),
        "stopped": system.stopped,
        "detection": {
            "tp": detection.tp,
            "fp": detection.fp,
            "fn": detection.fn,
            "tn": detection.tn,
            "precision": finite_or_none(detection.precision),
            "recall": finite_or_none(detection.recall),
            "fpr": finite_or_none(detection.fpr),
            "f1": finite_or_none(detection.f1),
            "delay_evals": finite_or_none(detection.delay_evals),
            "delay_gpu_hours": finite_or_none(detection.delay_gpu_hours),
        },
    }
