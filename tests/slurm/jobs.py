"""Training jobs for the test cluster: real curves of the corpus, submitted with ``sbatch``.

Used by the tests of ``tests/slurm`` and by ``docs/scripts/slurm_c3.py``. A job replays one
curve of :func:`evalstop.traces.corpus.catalogue` with ``train.py`` (one evaluation every
``seconds_per_eval`` seconds), in its own run folder, on ``gpus`` GPUs of the node.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs

from evalstop.traces.corpus import CurveSource, catalogue, default_data_dir, read_label
from slurm.cluster import Cluster

__all__ = ["METRIC", "PYTHON", "TRAIN", "Curve", "Outcome", "curves", "outcome", "submit"]

TRAIN = Path(__file__).with_name("train.py")
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
"""The jobs' Python: the system's (Debian's ``python3``), which every local user can run (a
virtualenv's may live under root's home); ``train.py`` needs the standard library only."""
METRIC = "eval_score"
"""The key each job logs its curve's gold metric under."""


@attrs.frozen
class Curve:
    """One curve of the corpus: its name, label and points."""

    name: str
    label: str
    points: tuple[tuple[int, float], ...]


def curves(min_points: int = 5) -> list[Curve]:
    """The labelled (hacking or healthy) curves of the corpus with at least ``min_points``."""
    data = default_data_dir()
    found: list[Curve] = []
    source: CurveSource
    for source in catalogue(data):
        if source.excluded:
            continue
        gold, proxy = source.read(data, source.gold), source.read(data, source.proxy)
        label = read_label(gold, proxy, source.scale).label
        if label != "unlabelled" and len(gold.steps) >= min_points:
            points = tuple(zip(gold.steps, gold.values, strict=True))
            found.append(Curve(source.name, label, points))
    return found


def submit(
    cluster: Cluster,
    folder: Path,
    curve: Curve,
    *,
    name: str,
    gpus: int = 1,
    seconds_per_eval: float = 1.0,
    user: str | None = None,
    extra: tuple[str, ...] = (),
    announce: Path | None = None,
    ignore: tuple[str, ...] = (),
    tail_seconds: float = 0.0,
) -> int:
    """Submit one job replaying ``curve`` in ``folder`` (created); its job id."""
    folder.mkdir(parents=True, exist_ok=True)
    if user is not None:
        folder.chmod(0o777)
    plan = {
        "folder": str(folder),
        "metric": METRIC,
        "points": [list(p) for p in curve.points],
        "seconds_per_eval": seconds_per_eval,
        "announce": None if announce is None else str(announce),
        "ignore": list(ignore),
        "tail_seconds": tail_seconds,
    }
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    # The job runs its own copy: another user cannot read a checkout kept in a private folder
    # (a clone under `mktemp -d` is mode 0700), but can read the job's folder.
    script = folder / TRAIN.name
    shutil.copyfile(TRAIN, script)
    done = cluster.run(
        "sbatch", "--parsable", f"--job-name={name}", f"--gres=gpu:{gpus}", "--cpus-per-task=1",
        f"--chdir={folder}", f"--output={folder}/slurm.out", *extra,
        f"--wrap=exec {PYTHON} {script} {plan_file}",
        user=user,
    )  # fmt: skip
    return int(done.stdout.strip().split(";")[0])


@attrs.frozen
class Outcome:
    """What a job's folder says it did (``train.py``'s files); times are wall seconds."""

    start: float | None
    end: float | None
    reason: str | None
    signals: tuple[str, ...]
    kept: Any
    gpus: str | None
    evals: int


def outcome(folder: Path) -> Outcome:
    """Read a job's ``job.json``, ``exit.json``, ``signals.log`` and ``metrics.jsonl``."""

    def load(name: str) -> dict[str, Any]:
        path = folder / name
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}

    started, ended = load("job.json"), load("exit.json")
    log = folder / "signals.log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    signals = tuple(line.split()[1] for line in lines)
    metrics = folder / "metrics.jsonl"
    evals = len(metrics.read_text().splitlines()) if metrics.exists() else 0
    return Outcome(
        started.get("start"),
        ended.get("end"),
        ended.get("reason"),
        signals,
        ended.get("kept"),
        started.get("gpus"),
        evals,
    )
