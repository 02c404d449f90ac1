"""Hand-built jobs for tests: tiny workloads whose outcomes can be worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

from evalstop.model import Job, JobKind, JobSpec, JobTruth, Observation


def make_job(
    job_id: int,
    *,
    submit: int = 0,
    gpus: int = 1,
    scores: Sequence[float] = (0.1, 0.2, 0.3, 0.4),
    duration: int | None = None,
    estimate: int | None = None,
    kind: JobKind = JobKind.RLHF,
    hacking: bool = False,
    quality: Sequence[float] | None = None,
    losses: Sequence[float] | None = None,
    steps_per_eval: int = 10,
) -> Job:
    """A job whose checkpoints report ``scores``; by default 10 s of service per checkpoint.

    ``quality`` (the hidden truth) defaults to the scores themselves.
    """
    n = len(scores)
    duration = 10 * n if duration is None else duration
    losses = [1.0 / (i + 1) for i in range(n)] if losses is None else losses
    quality = list(scores) if quality is None else quality
    observations = [
        Observation(step=steps_per_eval * (i + 1), eval_score=s, loss=l)
        for i, (s, l) in enumerate(zip(scores, losses, strict=True))
    ]
    spec = JobSpec(
        job_id=job_id,
        kind=kind,
        gpus=gpus,
        submit_time=submit,
        estimated_duration=duration if estimate is None else estimate,
        planned_evals=n,
    )
    truth = JobTruth(
        total_steps=steps_per_eval * n,
        duration=duration,
        hacking=hacking,
        quality=quality,
        peak_fraction=0.5 if hacking else 2.0,
    )
    return Job(spec, truth, observations)
