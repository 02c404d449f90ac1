"""The fast engine's job views, derived from the last one built (ENG-15, BND-6)."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.boundary import JobView, make_job_view, record_losses
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, start_watch
from evalstop.core.registry import alone
from evalstop.engine.record import JobRecord

DETECTORS: tuple[tuple[Detector[Any], ...], ...] = (
    (),
    (DeclineDetector(2),),  # folded in place (ENG-17)
    (LossPlateau(2, 0.01),),  # folded from each report (BND-5)
    (DeclineDetector(2), LossPlateau(2, 0.01)),
)
_values = st.floats(allow_nan=True, allow_infinity=True)
# what the engine does to a record between two reads: start, preempt, report a checkpoint
_moves = st.lists(st.sampled_from(("start", "preempt", "report")), max_size=40)


def expected_view(record: JobRecord) -> JobView:
    """The view built from the spec and every report so far, through the reference fold."""
    view = make_job_view(record.job.spec)
    for obs in record.observations[: record.evals_done]:
        first, previous, last = record_losses(view, obs.loss)
        view = attrs.evolve(
            view,
            last_score=obs.eval_score,
            first_loss=first,
            previous_loss=previous,
            last_loss=last,
        )
    return attrs.evolve(
        view,
        evals_done=record.evals_done,
        service=record.service,
        running_since=record.since,
        preemptions=record.preemptions,
        verdicts=record.verdicts(),
    )


def move(record: JobRecord, what: str, now: int) -> None:
    """One of the engine's changes to ``record`` at ``now``, as ``FastSimulator`` makes it."""
    if what == "start" and record.since is None:
        record.since = now + (30 if record.preemptions else 0)
        record.cached_view = None
    elif what == "preempt" and record.since is not None:
        record.service += max(0, now - record.since)
        record.since = None
        record.preemptions += 1
        record.cached_view = None
    elif what == "report" and record.since is not None and record.next_index < record.planned:
        index = record.next_index
        obs = record.observations[index - 1]
        if record.folding is not None:
            record.fold(obs.step, obs.eval_score)
        elif record.detectors:
            record.fold_report(now, index)
        record.evals_done, record.service, record.since = index, record.next_service, now
        record.next_service = record.job.checkpoint_service(index + 1)


@given(
    st.lists(st.tuples(_values, _values), min_size=2, max_size=30),
    st.sampled_from(DETECTORS),
    _moves,
    st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_eng15_bnd6_a_derived_view_equals_one_built_from_every_report(
    reports: list[tuple[float, float]],
    detectors: tuple[Detector[Any], ...],
    moves: list[str],
    reads: list[bool],
) -> None:
    """ENG-15, BND-6: after any starts, preemptions and reports (NaN and infinite losses and
    scores included), read after some moves and not others, a record's view is the view
    built from its spec and every report so far (compared by repr: NaN counts)."""
    scores, losses = [r[0] for r in reports], [r[1] for r in reports]
    job = make_job(7, submit=3, gpus=2, scores=scores, losses=losses, estimate=55)
    watches = tuple(start_watch(d) for d in detectors)
    record = JobRecord(job, detectors, watches, alone(detectors) if detectors else None)
    assert repr(record.view()) == repr(expected_view(record))
    for now, (what, read) in enumerate(zip(moves, reads, strict=False), start=10):
        move(record, what, now * 10)
        if read:
            view = record.view()
            assert type(view) is JobView
            assert repr(view) == repr(expected_view(record)), (what, now)
            assert record.view() is view  # cached until the job changes
    assert repr(record.view()) == repr(expected_view(record))
