"""Prune Optuna trials whose eval score declines twice running (``pip install 'evalstop[optuna]'``).

Each trial "trains" for 20 epochs; its held-out score rises to a peak that depends on the
learning rate, then, for the aggressive rates, declines (a stand-in for reward hacking). The
objective reports the score every epoch and asks ``should_prune()``, as with any Optuna pruner.
Run it with ``python docs/examples/adapters/optuna_pruner.py``.
"""

from __future__ import annotations

import optuna

from evalstop.adapters.optuna import EvalStopPruner


def held_out_score(lr: float, epoch: int) -> float:
    peak = 4 + int(2e-3 / lr)  # aggressive rates peak early
    return epoch / peak if epoch <= peak else 1.0 - 0.05 * (epoch - peak)


def objective(trial: optuna.Trial) -> float:
    lr = trial.suggest_float("lr", 1e-5, 1e-3, log=True)
    score = 0.0
    for epoch in range(1, 21):
        score = held_out_score(lr, epoch)
        trial.report(score, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return score


optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(
    direction="maximize", pruner=EvalStopPruner(k=2), sampler=optuna.samplers.RandomSampler(0)
)
study.optimize(objective, n_trials=8)
for trial in study.trials:
    best = study.pruner.best(study, trial)
    print(f"trial {trial.number}: {trial.state.name:8} lr={trial.params['lr']:.1e} best {best}")
