"""The gym's only I/O: a run's folder, written whole or not at all, and the summary.

``run-NNNN/metrics.jsonl`` gets the observable checkpoints only (:func:`metrics_lines` takes
:class:`~evalstop.gym.run.Checkpoint` values and nothing else, so the hidden truth cannot
reach it); ``run-NNNN/truth.json`` the label, the exact curves and the parameters. Each run is
written in a hidden ``.run-NNNN.tmp`` folder and renamed into place, and ``summary.json``
through a temporary file, so a full disk, a killed worker or an interrupt leaves finished runs
whole and no half-written file (spec ``GYM-10``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from evalstop.gym.config import RunConfig
from evalstop.gym.generate import LabelledRun
from evalstop.gym.labels import drop_share
from evalstop.gym.run import Checkpoint

__all__ = [
    "METRICS",
    "TRUTH",
    "clean_staging",
    "config_matches",
    "existing_config",
    "existing_label",
    "metrics_lines",
    "run_name",
    "summarise",
    "truth_json",
    "write_json",
    "write_run",
]

METRICS = "metrics.jsonl"
"""A run's observable log."""

TRUTH = "truth.json"
"""A run's hidden truth."""


def run_name(index: int) -> str:
    """The folder of run ``index``: ``run-0000``, ``run-0001``, ..."""
    return f"run-{index:04d}"


def metrics_lines(checkpoints: Sequence[Checkpoint]) -> str:
    """``metrics.jsonl``: one JSON object per checkpoint, the observable fields only."""
    lines = []
    for point in checkpoints:
        if not isinstance(point, Checkpoint):
            raise TypeError(f"metrics take observable checkpoints, not {type(point).__name__}")
        lines.append(json.dumps(attrs.asdict(point), allow_nan=False))
    return "".join(line + "\n" for line in lines)


def truth_json(run: LabelledRun) -> dict[str, Any]:
    """The content of ``truth.json``."""
    truth = run.run.truth
    quality = list(truth.quality)
    peak = max(range(len(quality)), key=quality.__getitem__)
    steps = run.config.checkpoints()
    share = drop_share(quality)
    return {
        "label": run.label,
        "params": attrs.asdict(run.config),
        "steps": steps,
        "true_quality": quality,
        "true_kl": list(truth.kl),
        "initial_quality": quality[0],
        "peak_quality": quality[peak],
        "peak_step": steps[peak],
        "final_quality": quality[-1],
        "drop_share": share if share != float("inf") else None,
    }


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place."""
    partial = path.with_name(f".{path.name}.tmp")
    try:
        partial.write_text(_dump(data), encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_run(folder: Path, index: int, run: LabelledRun) -> Path:
    """Write run ``index`` into ``folder/run-NNNN`` (replacing nothing: the caller checks)."""
    final = folder / run_name(index)
    staging = folder / f".{run_name(index)}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
        (staging / METRICS).write_text(metrics_lines(run.run.checkpoints), encoding="utf-8")
        (staging / TRUTH).write_text(_dump(truth_json(run)), encoding="utf-8")
        os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def existing_config(folder: Path, index: int) -> dict[str, Any] | None:
    """The parameters in ``run-NNNN/truth.json`` of a run already written, else None."""
    path = folder / run_name(index) / TRUTH
    if not path.is_file() or not (folder / run_name(index) / METRICS).is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    params = data.get("params") if isinstance(data, dict) else None
    return params if isinstance(params, dict) else None


def existing_label(folder: Path, index: int) -> str:
    """The label in ``run-NNNN/truth.json`` (a run :func:`existing_config` found)."""
    data = json.loads((folder / run_name(index) / TRUTH).read_text(encoding="utf-8"))
    return str(data["label"])


def clean_staging(folder: Path) -> None:
    """Remove what an interrupted generation left half-written (``.run-NNNN.tmp``)."""
    for leftover in folder.glob(".run-*.tmp"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in folder.glob(".*.json.tmp"):
        leftover.unlink(missing_ok=True)


def config_matches(folder: Path, index: int, config: RunConfig) -> bool | None:
    """True when run ``index`` is written with ``config``; False when another run is there;
    None when nothing is."""
    params = existing_config(folder, index)
    if params is None:
        return None if not (folder / run_name(index)).exists() else False
    return params == attrs.asdict(config)


def summarise(labels: Iterable[tuple[RunConfig, str]]) -> dict[str, Any]:
    """Counts by label (all, and by evaluation density) and each parameter's range."""
    pairs = list(labels)
    counts: dict[str, int] = {"hacking": 0, "healthy": 0}
    by_evals: dict[str, dict[str, int]] = {}
    for config, label in pairs:
        counts[label] = counts.get(label, 0) + 1
        cell = by_evals.setdefault(str(config.evals), {"hacking": 0, "healthy": 0})
        cell[label] = cell.get(label, 0) + 1
    ranges: dict[str, dict[str, float]] = {}
    for field in attrs.fields(RunConfig):
        if field.name == "seed":
            continue
        values = [getattr(config, field.name) for config, _ in pairs]
        ranges[field.name] = {"min": min(values), "max": max(values)}
    seeds = [config.seed for config, _ in pairs]
    return {
        "runs": len(pairs),
        "seeds": {"first": min(seeds), "last": max(seeds)},
        "labels": counts,
        "labels_by_evals": dict(sorted(by_evals.items(), key=lambda kv: int(kv[0]))),
        "parameters": ranges,
    }
