"""The leakage audit: do the first checkpoints give away the hidden label or the true length?

The information boundary (spec ``BND-1``) hides a job's hacking label and true duration. A
workload can still leak them through what *is* observable, so the audit measures, over the
jobs of generated workloads (spec ``LEAK``):

- for each observable of an RLHF job at its first checkpoint (eval score, proxy reward, loss,
  step, service, estimated duration and progress, GPUs, evaluation interval), the Mann-Whitney
  AUC of that value for the hacking label, folded to ``max(auc, 1 - auc)``: 0.5 says nothing,
  1.0 separates the labels perfectly (``LEAK-1``);
- the median relative error of simple predictors of the true duration, fitted per job kind on
  the even-numbered jobs and scored on the odd ones: a constant times one observable (the
  median ratio), and a log-linear least-squares fit on the logs of several. The best predictor
  that may use everything observable at the first checkpoint is compared with the best one
  that uses the estimated duration alone, fitted the same way (``LEAK-2``): the first
  checkpoint must not tell the platform more about the length than its own estimate does;
- audit v2 (``LEAK-4``, ``LEAK-5``): learned predictors over the first 1 and 3 checkpoints
  (:mod:`evalstop.experiments.learned`), and the label AUC of each curve observable *within
  strata of the estimate*: in world v3 a run hacks when its turn falls before its end, so
  longer runs hack more often (the stated label/length link, ``CRV-9``), and the first
  checkpoint, placed by the estimate, carries that link into every curve's level. The audit
  prints the link and judges the curves on what they say beyond it.

A job's *first checkpoint* here is its first one after step 0 (:func:`first_trained`): the
step-0 evaluation of its initial policy (``WRK-7``, ``CRV-14``) falls at service 0 for every
job and is drawn before anything that depends on its label or length; the learned predictors
see its values too.

This module reads hidden truth (labels, durations), as metrics do; it never feeds a policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.model import Job, JobKind, Observation
from evalstop.experiments.aucs import (
    STRATA,
    first_trained,
    fold,
    mann_whitney_auc,
    stratified_auc,
    turned_before_first,
)
from evalstop.experiments.learned import LearnedAudit, learned_audit

__all__ = [
    "AUC_LIMIT",
    "CURVE_AUC_LIMIT",
    "CURVE_OBSERVABLES",
    "ERROR_MARGIN",
    "JUDGED_JOBS",
    "LABEL_OBSERVABLES",
    "LINK_OBSERVABLES",
    "STRATA",
    "Leakage",
    "audit",
    "first_checkpoint",
    "first_trained",
    "fold",
    "label_aucs",
    "label_aucs_given_estimate",
    "length_errors",
    "mann_whitney_auc",
    "stratified_auc",
    "turned_before_first",
]

FloatArray = npt.NDArray[np.float64]

AUC_LIMIT = 0.65
"""A first-checkpoint observable with a folded label AUC above this is a leak (LEAK-3)."""

ERROR_MARGIN = 0.10
"""A first-checkpoint length predictor more than 10% better than the estimate is a leak."""

CURVE_AUC_LIMIT = 0.55
"""A curve observable (or all of them jointly) whose folded label AUC within strata of the
estimate exceeds this is a leak (LEAK-5)."""

JUDGED_JOBS = 3_000
"""The smallest audit the limits judge (LEAK-3): the size of the test that holds both worlds
to them (3 seeds of 1,000 jobs) and of the full run's learned predictors. A smaller audit's
AUCs move by more than the limits' margins from sampling alone."""

CURVE_OBSERVABLES = ("eval_score", "loss", "proxy_reward", "kl")
"""The first checkpoint's curve observables."""

LINK_OBSERVABLES = ("estimated_duration", "eval_interval", "service", "step")
"""The observables that carry a run's planned length: the stated label/length link (CRV-9)
shows in them, and the audit prints it rather than judging it."""


def _first(job: Job) -> Observation:
    """The report of ``job``'s first trained checkpoint (spec ``LEAK``: after step 0)."""
    return job.observations[first_trained(job) - 1]


def _service(job: Job) -> float:
    return float(job.checkpoint_service(first_trained(job)))


def _proxy(job: Job) -> float:
    value = _first(job).proxy_reward
    return math.nan if value is None else value


def _kl(job: Job) -> float:
    value = _first(job).kl
    return math.nan if value is None else value


LABEL_OBSERVABLES: Mapping[str, Callable[[Job], float]] = {
    "eval_score": lambda job: _first(job).eval_score,
    "proxy_reward": _proxy,
    "kl": _kl,
    "loss": lambda job: _first(job).loss,
    "step": lambda job: float(_first(job).step),
    "service": _service,
    "estimated_duration": lambda job: float(job.spec.estimated_duration),
    "estimated_progress": lambda job: min(1.0, _service(job) / job.spec.estimated_duration),
    "gpus": lambda job: float(job.spec.gpus),
    "eval_interval": lambda job: float(job.spec.eval_interval),
}
"""What a platform sees of a job at its first trained checkpoint, by name."""


def label_aucs_given_estimate(jobs: Sequence[Job], *, pre_turn: bool = True) -> dict[str, float]:
    """Folded label AUC of each curve observable at the first checkpoint over the RLHF
    ``jobs``, within strata of the estimate (LEAK-5); ``pre_turn`` leaves out the hacking
    jobs that turned before their first checkpoint (:func:`turned_before_first`)."""
    rlhf = [
        job
        for job in jobs
        if job.spec.kind is JobKind.RLHF and not (pre_turn and turned_before_first(job))
    ]
    labels = [job.truth.hacking for job in rlhf]
    estimates = [float(job.spec.estimated_duration) for job in rlhf]
    return {
        name: stratified_auc([LABEL_OBSERVABLES[name](j) for j in rlhf], labels, estimates)
        for name in CURVE_OBSERVABLES
    }


def _length_link(jobs: Sequence[Job]) -> float:
    """Folded label AUC of the true length over RLHF jobs (hidden: the link itself)."""
    rlhf = [job for job in jobs if job.spec.kind is JobKind.RLHF]
    return fold(
        mann_whitney_auc([float(j.truth.duration) for j in rlhf], [j.truth.hacking for j in rlhf])
    )


def _early_turn_share(jobs: Sequence[Job]) -> float:
    hacking = [j for j in jobs if j.spec.kind is JobKind.RLHF and j.truth.hacking]
    return sum(map(turned_before_first, hacking)) / len(hacking) if hacking else math.nan


def first_checkpoint(job: Job) -> dict[str, float]:
    """Every first-checkpoint observable of ``job`` by name."""
    return {name: read(job) for name, read in LABEL_OBSERVABLES.items()}


def label_aucs(jobs: Sequence[Job]) -> dict[str, float]:
    """Folded label AUC of each first-checkpoint observable over the RLHF ``jobs`` (LEAK-1)."""
    rlhf = [job for job in jobs if job.spec.kind is JobKind.RLHF]
    labels = [job.truth.hacking for job in rlhf]
    return {
        name: fold(mann_whitney_auc([read(job) for job in rlhf], labels))
        for name, read in LABEL_OBSERVABLES.items()
    }


def _columns(jobs: Sequence[Job]) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    estimate = np.array([job.spec.estimated_duration for job in jobs], dtype=np.float64)
    service = np.array([_service(job) for job in jobs], dtype=np.float64)
    step = np.array([_first(job).step for job in jobs], dtype=np.float64)
    duration = np.array([job.truth.duration for job in jobs], dtype=np.float64)
    return estimate, service, step, duration


def _loglinear(train: list[FloatArray], target: FloatArray, test: list[FloatArray]) -> FloatArray:
    design = np.column_stack([np.ones(len(target)), *[np.log(x) for x in train]])
    coef, *_ = np.linalg.lstsq(design, np.log(target), rcond=None)
    fitted: FloatArray = np.exp(np.column_stack([np.ones(len(test[0])), *map(np.log, test)]) @ coef)
    return fitted


def _predictions(train: Sequence[Job], test: Sequence[Job]) -> dict[str, tuple[bool, FloatArray]]:
    """Each predictor's forecasts for ``test``: name -> (uses the estimate only, forecasts)."""
    e_tr, s_tr, t_tr, d_tr = _columns(train)
    e_te, s_te, t_te, _ = _columns(test)
    return {
        "estimate": (True, e_te),
        "estimate x c": (True, float(np.median(d_tr / e_tr)) * e_te),
        "log-linear(estimate)": (True, _loglinear([e_tr], d_tr, [e_te])),
        "service x c": (False, float(np.median(d_tr / s_tr)) * s_te),
        "step x c": (False, float(np.median(d_tr / t_tr)) * t_te),
        "log-linear(estimate, service, step)": (
            False,
            _loglinear([e_tr, s_tr, t_tr], d_tr, [e_te, s_te, t_te]),
        ),
    }


def length_errors(jobs: Sequence[Job]) -> dict[str, float]:
    """Median relative error of each length predictor, fitted per kind on even job ids and
    scored on odd ones (LEAK-2); kinds with fewer than 5 jobs in either half are left out."""
    forecasts: dict[str, list[FloatArray]] = {}
    truths: list[FloatArray] = []
    for kind in JobKind:
        train = [j for j in jobs if j.spec.kind is kind and j.job_id % 2 == 0]
        test = [j for j in jobs if j.spec.kind is kind and j.job_id % 2 == 1]
        if len(train) < 5 or len(test) < 5:
            continue
        truths.append(_columns(test)[3])
        for name, (_, values) in _predictions(train, test).items():
            forecasts.setdefault(name, []).append(values)
    if not truths:
        return {}
    truth = np.concatenate(truths)
    return {
        name: float(np.median(np.abs(np.concatenate(parts) - truth) / truth))
        for name, parts in forecasts.items()
    }


_ESTIMATE_ONLY = ("estimate x c", "log-linear(estimate)")


@attrs.frozen(slots=True)
class Leakage:
    """The audit of one world (LEAK-1 to LEAK-5).

    Attributes:
        label_auc: folded label AUC per first-checkpoint observable, sorted by name.
        label_auc_max: the largest of them.
        length_errors: median relative error per length predictor, sorted by name.
        length_error_first_checkpoint: the best predictor's, over everything observable at the
            first checkpoint (the estimate included).
        length_error_estimate: the best estimate-only predictor's (fitted the same way).
        length_error_raw_estimate: the raw estimate's, as the platform receives it.
        jobs: how many jobs the audit looked at.
        label_auc_given_estimate: folded label AUC of each curve observable within strata of
            the estimate (LEAK-5), sorted by name.
        label_auc_given_estimate_all: the same over every RLHF job, those that turned before
            their first checkpoint included (printed, not judged).
        early_turn_share: the share of hacking RLHF jobs that turned before their first
            checkpoint.
        label_length_link: folded label AUC of the hidden true length: the stated link.
        learned: the learned predictors (LEAK-4); None when scikit-learn is missing or the
            audit was asked to skip them.
    """

    label_auc: tuple[tuple[str, float], ...]
    label_auc_max: float
    length_errors: tuple[tuple[str, float], ...]
    length_error_first_checkpoint: float
    length_error_estimate: float
    length_error_raw_estimate: float
    jobs: int
    label_auc_given_estimate: tuple[tuple[str, float], ...] = ()
    label_auc_given_estimate_all: tuple[tuple[str, float], ...] = ()
    early_turn_share: float = math.nan
    label_length_link: float = math.nan
    learned: LearnedAudit | None = None

    @property
    def curve_auc_max(self) -> float:
        """The largest curve AUC within strata of the estimate, the learned joint one too."""
        values = [v for _, v in self.label_auc_given_estimate]
        if self.learned is not None:
            values.append(self.learned.label_auc_curves_given_estimate)
        finite = [v for v in values if math.isfinite(v)]
        return max(finite) if finite else math.nan

    @property
    def judged(self) -> bool:
        """Whether the audit is large enough for its limits (:data:`JUDGED_JOBS`, LEAK-3);
        :attr:`label_leak` and :attr:`length_leak` are the raw comparisons either way."""
        return self.jobs >= JUDGED_JOBS

    @property
    def verdict(self) -> str:
        """``LEAKS``, ``no leak``, or ``not judged`` below :data:`JUDGED_JOBS` (LEAK-3)."""
        if not self.judged:
            return f"not judged ({self.jobs:,} jobs, under {JUDGED_JOBS:,})"
        return "LEAKS" if self.label_leak or self.length_leak else "no leak"

    @property
    def label_leak(self) -> bool:
        """True when a curve observable, or all jointly, says more than
        :data:`CURVE_AUC_LIMIT` of the label within strata of the estimate, or an observable
        that carries neither a curve nor the planned length exceeds :data:`AUC_LIMIT`."""
        skip = {*CURVE_OBSERVABLES, *LINK_OBSERVABLES}
        others = [v for n, v in self.label_auc if n not in skip and math.isfinite(v)]
        return self.curve_auc_max > CURVE_AUC_LIMIT or max(others, default=0.0) > AUC_LIMIT

    @property
    def length_leak(self) -> bool:
        """True when the first checkpoint (LEAK-2), or a learned predictor over the first 1 or
        3 checkpoints (LEAK-4), beats the estimate by more than ERROR_MARGIN."""
        limit = 1 - ERROR_MARGIN
        if self.length_error_first_checkpoint < limit * self.length_error_estimate:
            return True
        if self.learned is None:
            return False
        estimate = dict(self.learned.length_error_estimate)
        return any(e < limit * estimate[k] for k, e in self.learned.length_error)


def audit(
    jobs: Sequence[Job], *, learned: bool = True, learned_on: Sequence[Job] | None = None
) -> Leakage:
    """Audit ``jobs`` (typically several seeds' workloads of one world); ``learned=False``
    skips the learned predictors (LEAK-4), ``learned_on`` fits them on those jobs instead."""
    aucs = label_aucs(jobs)
    errors = length_errors(jobs)
    finite = [v for v in aucs.values() if math.isfinite(v)]
    return Leakage(
        label_auc=tuple(sorted(aucs.items())),
        label_auc_max=max(finite) if finite else math.nan,
        length_errors=tuple(sorted(errors.items())),
        length_error_first_checkpoint=min(errors.values(), default=math.nan),
        length_error_estimate=min(
            (errors[n] for n in _ESTIMATE_ONLY if n in errors), default=math.nan
        ),
        length_error_raw_estimate=errors.get("estimate", math.nan),
        jobs=len(jobs),
        label_auc_given_estimate=tuple(sorted(label_aucs_given_estimate(jobs).items())),
        label_auc_given_estimate_all=tuple(
            sorted(label_aucs_given_estimate(jobs, pre_turn=False).items())
        ),
        early_turn_share=_early_turn_share(jobs),
        label_length_link=_length_link(jobs),
        learned=learned_audit(jobs if learned_on is None else learned_on) if learned else None,
    )
