"""Follow two live runs with ``evalstop watch`` and see it stop the one that declines.

Writes two runs' JSONL logs in a folder of runs, then polls them once with the command
(``--once``, as a cron job would) and again after more evaluations arrive: the first run peaks
and then keeps declining, so the watcher (with the monitor's default detector) prints its
decision, writes the marker file and runs the ``--on-stop`` command. Run it with
``python docs/examples/watch.py [DIR]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from evalstop.cli import main

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
runs = out / "runs"
curves = {"ppo-a": [0.50, 0.58, 0.66, 0.61, 0.55, 0.50], "ppo-b": [0.40, 0.45, 0.50, 0.56]}


def write(upto: int) -> None:
    """The first ``upto`` evaluations of each run, as its trainer would have appended them."""
    for run, scores in curves.items():
        (runs / run).mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"step": 100 * (i + 1), "win_rate": s}) for i, s in enumerate(scores)]
        (runs / run / "metrics.jsonl").write_text("".join(f"{line}\n" for line in lines[:upto]))


command = [str(runs), "--metric", "win_rate", "--state", str(out / "watch.sqlite"), "--once"]
log = out / "commands.txt"  # a stand-in for running the command: write it down
# No shell runs --on-stop: a redirection asks for one, the run's name comes as an argument.
command += ["--on-stop", f"sh -c 'echo scancel --name \"$1\" >> {log}' sh {{name}}"]
write(3)
main(["watch", *command])  # nothing to stop yet; the watcher remembers what it read
write(6)
main(["watch", *command])  # reads only the new lines: ppo-a kept declining
print((runs / "ppo-a" / "evalstop-stop.json").read_text().strip())  # the marker file
print(log.read_text().strip())
