"""The online monitor: verdicts for interleaved jobs, a restart, and a lower-is-better metric.

Run it with ``python docs/examples/monitor.py``.
"""

from __future__ import annotations

import math

from evalstop import DeclineDetector, Monitor, Stop

monitor = Monitor(DeclineDetector(k=2))  # EvalStop's rule; mode="max": higher is better

# Evaluations as a scheduler receives them: (job, step, held-out score), two runs interleaved.
reports = [
    ("ppo-a", 100, 0.52),
    ("ppo-b", 100, 0.48),
    ("ppo-a", 200, 0.61),
    ("ppo-b", 200, 0.55),
    ("ppo-a", 300, 0.58),  # first decline of ppo-a
    ("ppo-b", 300, math.nan),  # a failed evaluation: skipped, not a decline
    ("ppo-a", 300, 0.70),  # a repeated step: ignored
    ("ppo-a", 400, 0.49),  # second consecutive decline: stop
    ("ppo-b", 400, 0.57),
    ("ppo-a", 500, 0.66),  # ppo-a was already stopped
]
for job, step, score in reports:
    verdict = monitor.observe(job, step, score)
    line = f"{job} step {step}: {type(verdict).__name__:8} {verdict.reason.value:15}"
    line += f" evals={verdict.evals} best={verdict.best_step}"
    if isinstance(verdict, Stop):  # free the GPUs, keep the checkpoint at best_step
        line += f" -> stop at {verdict.stop_step}, keep step {verdict.best_step}"
    print(line)

# The whole state is JSON: save it with the scheduler's state, resume after a restart.
saved = monitor.to_json()
restored = Monitor.from_json(saved)
print(restored.observe("ppo-b", 500, 0.50))  # same verdict the original would give
monitor.forget("ppo-a")  # the job has ended: drop its O(1) state

# A lower-is-better metric (an eval loss): mode="min", so a rise counts as a decline.
losses = Monitor(DeclineDetector(k=2), mode="min")
for step, loss in [(1, 2.0), (2, 1.7), (3, 1.8), (4, 1.9)]:
    verdict = losses.observe("dpo-c", step, loss)
print(verdict)
