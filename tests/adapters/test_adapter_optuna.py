"""The Optuna pruner (spec ADP-10), in real studies with in-memory and SQLite storage.

Each trial's objective reports a scripted curve step by step and asks ``should_prune()``, as
an Optuna objective does; the curve's peak and declines are known. Skips without optuna.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

optuna = pytest.importorskip("optuna")

from evalstop.adapters import BestCheckpoint  # noqa: E402
from evalstop.adapters.optuna import EvalStopPruner  # noqa: E402
from evalstop.core.detectors import Never  # noqa: E402

# Reported at steps 0..9. PEAK: best at step 3; declines at 4 and 5 -> pruned at step 5 (k=2).
PEAK = [0.1, 0.3, 0.5, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1, 0.0]
MONOTONE = [0.1 * i for i in range(10)]


def _objective(curves: list[list[float]], seen: list[int]) -> Any:
    def objective(trial: Any) -> float:
        curve = curves[trial.number]
        for step, value in enumerate(curve):
            trial.report(value, step)
            if trial.should_prune():
                seen.append(step)
                raise optuna.TrialPruned()
        seen.append(len(curve))
        return float(curve[-1])

    return objective


@pytest.mark.parametrize("storage", ["memory", "sqlite"])
def test_adp10_peaking_trial_is_pruned_at_the_trigger(storage: str, tmp_path: Path) -> None:
    """ADP-10: the peaking trial is pruned at step 5 (k=2); the monotone one completes."""
    url = None if storage == "memory" else f"sqlite:///{tmp_path / 'study.db'}"
    pruner = EvalStopPruner(k=2)
    study = optuna.create_study(direction="maximize", pruner=pruner, storage=url)
    seen: list[int] = []
    study.optimize(_objective([PEAK, MONOTONE], seen), n_trials=2)
    peak, monotone = study.trials
    assert peak.state == optuna.trial.TrialState.PRUNED
    assert seen == [5, 10]
    assert max(peak.intermediate_values) == 5
    assert pruner.best(study, peak) == BestCheckpoint(3, 0.7)
    assert monotone.state == optuna.trial.TrialState.COMPLETE


def test_adp10_minimize_follows_the_study_direction() -> None:
    """ADP-10: in a minimising study a rising loss is a decline; the mode can be forced."""
    loss = [1.0 - v for v in PEAK]  # lowest at step 3, rises at 4 and 5
    seen: list[int] = []
    study = optuna.create_study(direction="minimize", pruner=EvalStopPruner(k=2))
    study.optimize(_objective([loss], seen), n_trials=1)
    assert seen == [5]
    assert study.trials[0].state == optuna.trial.TrialState.PRUNED
    forced: list[int] = []
    study = optuna.create_study(direction="minimize", pruner=EvalStopPruner(mode="max", k=3))
    study.optimize(_objective([PEAK], forced), n_trials=1)
    assert forced == [6]
    with pytest.raises(ValueError, match="mode"):
        EvalStopPruner(mode="up")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        EvalStopPruner(k=2, detector=Never())
