"""A stand-in training job: replays one real curve in accelerated time (spec ``SLM-9``).

``python train.py PLAN`` reads a JSON plan ``{"folder", "metric", "points": [[step, value],
...], "seconds_per_eval"}`` and, in ``folder``, writes ``job.json`` at its start (its Slurm job
id, user, GPUs and the wall time), appends one line ``{"step": s, "<metric>": v, "time": t}`` to
``metrics.jsonl`` every ``seconds_per_eval`` seconds, as a trainer's evaluation log would, and
writes ``exit.json`` when it ends: ``finished`` after its last point, or ``signal`` with the
signal's name and the checkpoint it keeps (the marker's ``best_step``, as the Hugging Face
callback keeps it). Every signal received is appended to ``signals.log``. The standard library
only: it runs as any user, from any Python.

With ``"announce": DIR`` in the plan it also writes its folder's path to ``DIR/<job id>`` (the
``file:DIR`` way of finding a job's run folder); with ``"tail_seconds"`` it trains on that long
after its last evaluation. The signals named in ``"ignore"`` (e.g.
``["SIGUSR2"]``) are logged and otherwise ignored: a job that does not stop when asked.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["main"]

_MARKER = "evalstop-stop.json"


def _write(path: Path, body: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(body) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _kept(folder: Path) -> Any:
    try:
        return json.loads((folder / _MARKER).read_text(encoding="utf-8")).get("best_step")
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    """Run the plan file ``argv[0]``."""
    plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    folder = Path(plan["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    job_id = os.environ.get("SLURM_JOB_ID", "")
    _write(
        folder / "job.json",
        {
            "job_id": job_id,
            "user": pwd.getpwuid(os.getuid()).pw_name,
            "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            "start": time.time(),
        },
    )
    if plan.get("announce"):
        (Path(plan["announce"]) / job_id).write_text(f"{folder}\n", encoding="utf-8")

    ignored = set(plan.get("ignore", ()))

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        with (folder / "signals.log").open("a", encoding="utf-8") as log:
            log.write(f"{time.time()} {name}\n")
        if name in ignored:
            return
        end = {"end": time.time(), "reason": "signal", "signal": name, "kept": _kept(folder)}
        _write(folder / "exit.json", end)
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT):
        signal.signal(sig, on_signal)
    metric, pause = plan["metric"], float(plan["seconds_per_eval"])
    with (folder / "metrics.jsonl").open("a", encoding="utf-8") as log:
        for step, value in plan["points"]:
            time.sleep(pause)
            log.write(json.dumps({"step": step, metric: value, "time": time.time()}) + "\n")
            log.flush()
        time.sleep(float(plan.get("tail_seconds", 0.0)))  # training on after the last eval
    _write(folder / "exit.json", {"end": time.time(), "reason": "finished", "kept": None})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
