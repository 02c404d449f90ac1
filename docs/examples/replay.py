"""Replay a recorded run: would EvalStop have stopped it, and which checkpoint would it keep?

Writes a small Hugging Face ``trainer_state.json`` (a PPO run whose held-out win rate peaks
and collapses while the proxy reward keeps rising), then replays it from Python.
Run it with ``python docs/examples/replay.py [DIR]`` (default: a temporary directory).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from evalstop import DeclineDetector, read_trace, replay
from evalstop.core.detectors import LossPlateau

win_rate = [0.50, 0.56, 0.61, 0.66, 0.68, 0.65, 0.61, 0.55, 0.49, 0.44]
history = []
for i, rate in enumerate(win_rate):
    step = 100 * (i + 1)
    history.append({"step": step, "epoch": step / 1000, "objective/rlhf_reward": 0.3 * i})
    history.append({"step": step, "epoch": step / 1000, "eval_win_rate": rate})

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
path = out / "trainer_state.json"
path.write_text(json.dumps({"global_step": 1000, "log_history": history}))

trace = read_trace(path, "eval_win_rate")  # format detected: trainer-state
print(trace.format, trace.metric, trace.steps[:3], "...", trace.last_step)

for detector in (DeclineDetector(k=2), LossPlateau()):
    result = replay(trace, detector)  # mode="max": higher is better
    print(
        f"{result.detector:24} stop at {result.stop_step}, keep step {result.best_step} "
        f"({result.best_value}), saves {result.steps_saved} steps, regret {result.regret:g}"
    )
print(path)
