"""Audit v2: flexible learned predictors of the hidden label and length (spec ``LEAK-4``).

The simple predictors of ``LEAK-2`` use the estimate, the service and the step; a curve can
give a length away through its *rates* (a run twice as long that is the same curve stretched
rises half as fast per step), which no such predictor sees. Here a gradient-boosting model
(scikit-learn's ``GradientBoostingRegressor`` / ``Classifier``, fixed seed, defaults) sees
every observable over the first 1 and the first 3 checkpoints after step 0: the estimate, the
evaluation interval, the GPUs, the step-0 evaluation of the initial policy (``CRV-14``), and at
each checkpoint its step, service, eval score, loss, proxy reward and KL, with their per-step
slopes between checkpoints. It is fitted per job kind on the even-numbered jobs and scored on
the odd ones, over the jobs still running after their k-th checkpoint (a job that has ended has
told its length).

scikit-learn is an optional dependency (the ``audit`` extra, and the ``test`` group):
:func:`learned_audit` returns None without it, and the report says so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.model import Job, JobKind
from evalstop.experiments.aucs import (
    first_trained,
    fold,
    mann_whitney_auc,
    stratified_auc,
    turned_before_first,
)

__all__ = [
    "CHECKPOINTS",
    "LearnedAudit",
    "features",
    "initial",
    "learned_audit",
]

FloatArray = npt.NDArray[np.float64]

CHECKPOINTS = (1, 3)
"""The learned length predictors see the first 1 and the first 3 checkpoints (the issue)."""


@attrs.frozen(slots=True)
class LearnedAudit:
    """The learned predictors' scores (``LEAK-4``).

    Attributes:
        length_error: ``(k, median relative error)`` of the learned predictor over the first
            ``k`` checkpoints, for each ``k`` of :data:`CHECKPOINTS`.
        length_error_estimate: ``(k, error)`` of the best estimate-only predictor over the
            same jobs (a learned one on the estimate alone, or LEAK-2's).
        label_auc_curves: folded label AUC, on the odd RLHF jobs, of a classifier of the
            first checkpoint's eval score, proxy reward, loss and KL jointly.
        label_auc_curves_given_estimate: the folded AUC, within strata of the estimate
            (:func:`~evalstop.experiments.aucs.stratified_auc`), of a classifier of the
            same values and the log estimate, over the odd jobs whose first checkpoint
            precedes their turn: what the curves say of the label beyond the stated
            label/length link and before it shows.
    """

    length_error: tuple[tuple[int, float], ...]
    length_error_estimate: tuple[tuple[int, float], ...]
    label_auc_curves: float
    label_auc_curves_given_estimate: float


def _slope(a: float, b: float, da: float, db: float) -> float:
    return (b - a) / (db - da) if db > da else 0.0


def features(job: Job, k: int) -> list[float]:
    """Every observable of ``job`` over its first ``k`` checkpoints after step 0, as numbers.

    The estimate, interval and GPUs, the step-0 evaluation's eval score, loss and proxy reward
    (:func:`initial`), then per checkpoint its step, service, eval score, loss, proxy reward and
    KL (0 when the job has none), then the per-step slopes of eval score, loss, proxy and KL
    between consecutive checkpoints.
    """
    spec = job.spec
    out = [math.log(spec.estimated_duration), math.log(spec.eval_interval), float(spec.gpus)]
    out += initial(job)
    rows = []
    first = first_trained(job)
    for i in range(first, first + k):
        obs = job.observations[i - 1]
        proxy = 0.0 if obs.proxy_reward is None else obs.proxy_reward
        kl = 0.0 if obs.kl is None else obs.kl
        rows.append((float(obs.step), obs.eval_score, obs.loss, proxy, kl))
        out += [math.log(obs.step), math.log(job.checkpoint_service(i))]
        out += [obs.eval_score, obs.loss, proxy, kl]
    for (s0, *a), (s1, *b) in itertools.pairwise(rows):
        out += [_slope(x, y, s0, s1) for x, y in zip(a, b, strict=True)]
    return out


def initial(job: Job) -> list[float]:
    """The step-0 evaluation's eval score, loss and proxy reward (0 for a missing one, all 0
    for a job without a step-0 evaluation)."""
    if first_trained(job) == 1:
        return [0.0, 0.0, 0.0]
    obs = job.observations[0]
    return [obs.eval_score, obs.loss, 0.0 if obs.proxy_reward is None else obs.proxy_reward]


def _median_error(forecast: FloatArray, truth: FloatArray) -> float:
    return float(np.median(np.abs(forecast - truth) / truth))


def _regressor() -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(random_state=0)


def _length_errors(jobs: Sequence[Job], k: int) -> tuple[float, float]:
    """``(learned, best estimate-only)`` median relative errors over the first ``k``."""
    truths: list[FloatArray] = []
    learned: list[FloatArray] = []
    by_estimate: dict[str, list[FloatArray]] = {"learned": [], "ratio": [], "loglinear": []}
    for kind in JobKind:
        eligible = [
            j for j in jobs if j.spec.kind is kind and j.checkpoints >= first_trained(j) + k
        ]
        train = [j for j in eligible if j.job_id % 2 == 0]
        test = [j for j in eligible if j.job_id % 2 == 1]
        if len(train) < 20 or len(test) < 20:
            continue
        y_tr = np.log([j.truth.duration for j in train])
        truth = np.array([j.truth.duration for j in test], dtype=np.float64)
        x_tr = np.array([features(j, k) for j in train])
        x_te = np.array([features(j, k) for j in test])
        learned.append(np.exp(_regressor().fit(x_tr, y_tr).predict(x_te)))
        e_tr, e_te = x_tr[:, :1], x_te[:, :1]  # the log estimate alone
        by_estimate["learned"].append(np.exp(_regressor().fit(e_tr, y_tr).predict(e_te)))
        ratio = float(np.median(y_tr - e_tr[:, 0]))
        by_estimate["ratio"].append(np.exp(e_te[:, 0] + ratio))
        design = np.column_stack([np.ones(len(y_tr)), e_tr[:, 0]])
        coef, *_ = np.linalg.lstsq(design, y_tr, rcond=None)
        by_estimate["loglinear"].append(np.exp(coef[0] + coef[1] * e_te[:, 0]))
        truths.append(truth)
    if not truths:
        return math.nan, math.nan
    truth = np.concatenate(truths)
    estimate_only = min(_median_error(np.concatenate(v), truth) for v in by_estimate.values())
    return _median_error(np.concatenate(learned), truth), estimate_only


def _curve(job: Job) -> list[float]:
    """The first trained checkpoint's eval score, loss, proxy and KL, and the step-0 values."""
    obs = job.observations[first_trained(job) - 1]
    proxy = 0.0 if obs.proxy_reward is None else obs.proxy_reward
    return [obs.eval_score, obs.loss, proxy, 0.0 if obs.kl is None else obs.kl, *initial(job)]


def _label_fold(train: Sequence[Job], test: Sequence[Job]) -> tuple[float, float]:
    """Raw (unfolded) AUCs on ``test`` of the two classifiers fitted on ``train``."""
    from sklearn.ensemble import GradientBoostingClassifier

    y_tr = [j.truth.hacking for j in train]
    y_te = [j.truth.hacking for j in test]
    x_tr, x_te = np.array([_curve(j) for j in train]), np.array([_curve(j) for j in test])
    model = GradientBoostingClassifier(random_state=0).fit(x_tr, y_tr)
    marginal = mann_whitney_auc(model.predict_proba(x_te)[:, 1].tolist(), y_te)
    e_tr = np.log([[float(j.spec.estimated_duration)] for j in train])
    e_te = np.log([[float(j.spec.estimated_duration)] for j in test])
    joint = GradientBoostingClassifier(random_state=0).fit(np.hstack([x_tr, e_tr]), y_tr)
    keep = [i for i, j in enumerate(test) if not turned_before_first(j)]
    scores = joint.predict_proba(np.hstack([x_te, e_te])[keep])[:, 1].tolist()
    given = stratified_auc(scores, [y_te[i] for i in keep], e_te[keep, 0].tolist(), folded=False)
    return marginal, given


def _label_aucs(jobs: Sequence[Job]) -> tuple[float, float]:
    """The joint curve classifier's folded AUC; and that of a classifier of the curve values
    and the log estimate within strata of the estimate, over the jobs whose first checkpoint
    precedes their turn (the estimate lets it learn the link, the strata take the link out
    of the score). Cross-fitted: fitted on the even jobs and scored on the odd ones, then the
    other way round; each AUC is the mean of the two folds', then folded."""

    rlhf = [j for j in jobs if j.spec.kind is JobKind.RLHF]
    halves = [[j for j in rlhf if j.job_id % 2 == parity] for parity in (0, 1)]
    if any(len({j.truth.hacking for j in half}) < 2 for half in halves):
        return math.nan, math.nan
    results = [_label_fold(halves[0], halves[1]), _label_fold(halves[1], halves[0])]
    return (
        fold(float(np.mean([r[0] for r in results]))),
        fold(float(np.mean([r[1] for r in results]))),
    )


def learned_audit(jobs: Sequence[Job]) -> LearnedAudit | None:
    """The learned predictors over ``jobs`` (``LEAK-4``); None without scikit-learn.

    The split is by the parity of ``job_id``: each job is in exactly one half. Jobs of
    several seeds may share ids (the reproduction passes three seeds' workloads); a shared
    id puts its seeds' jobs in the same half, which are still different, independent jobs.
    """
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return None
    errors = [(k, *_length_errors(jobs, k)) for k in CHECKPOINTS]
    marginal, given = _label_aucs(jobs)
    return LearnedAudit(
        length_error=tuple((k, e) for k, e, _ in errors),
        length_error_estimate=tuple((k, e) for k, _, e in errors),
        label_auc_curves=marginal,
        label_auc_curves_given_estimate=given,
    )
