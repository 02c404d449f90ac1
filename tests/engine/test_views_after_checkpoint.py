"""What a policy sees of a job after each of its checkpoints, in both engines (BND-1, ENG-15).

The view a policy is shown after a checkpoint must carry that checkpoint's report: the score
(also a NaN one), the losses (a NaN loss changes none of them), the evaluations done, the
service banked and the start of the current run segment; and the log's checkpoint records must
carry the same step and score.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import pytest

from builders import Recorder, make_job, records_of
from evalstop.core.boundary import CheckpointView, EventKind, JobView
from evalstop.core.detectors import DeclineDetector
from evalstop.core.model import Job
from evalstop.core.policies import srtf_est
from evalstop.core.policy import Policy
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.engine import Simulator
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import LogKind

SCORES = (0.25, math.nan, 0.75, 0.5)
LOSSES = (2.0, 1.5, math.nan, 0.5)

EXPECTED = [
    # evals_done, service, running_since, last_score, first, previous, last loss
    (1, 10, 15, 0.25, 2.0, None, 2.0),
    (2, 20, 25, math.nan, 2.0, 2.0, 1.5),
    (3, 30, 35, 0.75, 2.0, 2.0, 1.5),
]


def fields(view: JobView) -> tuple[object, ...]:
    return (
        view.evals_done,
        view.service,
        view.running_since,
        view.last_score,
        view.first_loss,
        view.previous_loss,
        view.last_loss,
    )


def same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Equal, with NaN equal to NaN."""
    return all(
        x == y
        or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_bnd1_eng15_view_after_each_checkpoint_carries_its_report(
    engine: type[Simulator] | type[FastSimulator],
) -> None:
    """BND-1, ENG-15: after checkpoint i the policy's view of the job has evals_done = i, the
    service of i checkpoints, running_since = now, the reported score as last_score (a NaN
    too) and the finite losses in first/previous/last; both engines show the same."""
    recorder = Recorder(make_policy("fifo"))
    sim = engine(recorder, 1, preemption_overhead=0)
    sim.submit(make_job(1, submit=5, scores=SCORES, losses=LOSSES))
    sim.run()
    seen = [
        view.changed[0]
        for view in recorder.views
        if view.cause is EventKind.CHECKPOINT and view.changed
    ]
    assert len(seen) == len(EXPECTED)
    for view, expected in zip(seen, EXPECTED, strict=True):
        assert view.job_id == 1
        assert same(fields(view), expected), (fields(view), expected)
    checkpoints = records_of(sim.log, LogKind.CHECKPOINT)
    assert [(r.time, r.index, r.step) for r in checkpoints] == [
        (15, 1, 10),
        (25, 2, 20),
        (35, 3, 30),
        (45, 4, 40),
    ]
    assert same(tuple(r.score for r in checkpoints), SCORES)
    assert all(r.gpus == 1 and r.job_id == 1 for r in checkpoints)


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_bnd1_a_view_carries_the_spec_of_its_job(
    engine: type[Simulator] | type[FastSimulator],
) -> None:
    """BND-1: every view a policy sees of a job carries that job's spec as submitted: its
    name and tenant as well as its kind, GPUs, submit time, estimate and eval interval."""
    job = make_job(7, submit=3, gpus=2, estimate=55, steps_per_eval=20)
    spec = attrs.evolve(job.spec, tenant="team-b", name="cifar10-7")
    recorder = Recorder(make_policy("fifo"))
    sim = engine(recorder, 2, preemption_overhead=0)
    sim.submit(Job(spec, job.truth, job.observations))
    sim.run()
    views = [view for cluster in recorder.views for view in cluster.queued + cluster.running]
    assert views
    for view in views:
        assert (
            view.job_id,
            view.kind,
            view.gpus,
            view.submit_time,
            view.estimated_duration,
            view.eval_interval,
            view.tenant,
            view.name,
        ) == (7, spec.kind, 2, 3, 55, 20, "team-b", "cifar10-7")


@attrs.frozen(eq=False)
class Spy:
    """A detector that never fires and records every checkpoint view it is shown."""

    seen: list[CheckpointView] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return "spy"

    def initial(self) -> int:
        return 0

    def update(self, state: int, obs: CheckpointView) -> int:
        self.seen.append(obs)
        return state + 1

    def fired(self, state: int) -> bool:
        return False


@pytest.mark.parametrize("overhead", [0, 30])
def test_eng15_two_detectors_see_the_same_reports_in_both_engines(overhead: int) -> None:
    """ENG-15, EVS-1: with two detectors (the built-in decline rule and another) each engine
    shows the other detector the same checkpoint views (job, kind, index, step, time, score,
    losses, progress) and the decline rule stops the same jobs at the same checkpoints."""
    logs, seen = [], []
    for engine in (Simulator, FastSimulator):
        spy = Spy()
        policy = evalstop(evalstop(srtf_est, DeclineDetector(2)), spy)
        assert policy.detectors == (DeclineDetector(2), spy)
        sim = engine(policy, 2, preemption_overhead=overhead)
        sim.submit(make_job(1, scores=[0.5, 0.4, 0.3, 0.2, 0.1], estimate=80))
        sim.submit(make_job(2, submit=5, gpus=2, scores=[0.1, 0.3, 0.2, 0.4], estimate=20))
        sim.submit(make_job(3, submit=7, scores=SCORES, losses=LOSSES, estimate=15))
        sim.run()
        logs.append(repr(list(sim.log)))
        seen.append(repr(spy.seen))
    assert logs[0] == logs[1]
    assert seen[0] == seen[1]
    assert [r.job_id for r in records_of(sim.log, LogKind.STOP)] == [1]


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_bnd1_eng15_a_detector_sees_each_checkpoints_proxy_reward(engine: type[Simulator]) -> None:
    """BND-1, ENG-15: the proxy reward a checkpoint reports reaches the detectors (a missing
    one as None), in both engines."""
    job = make_job(4, scores=[0.5, 0.25, 0.75])
    rewards = (0.5, None, 2.0)
    job = attrs.evolve(
        job,
        observations=[
            attrs.evolve(obs, proxy_reward=reward)
            for obs, reward in zip(job.observations, rewards, strict=True)
        ],
    )
    spy = Spy()
    sim = engine(evalstop(srtf_est, spy), 1)
    sim.submit(job)
    sim.run()
    assert [view.proxy_reward for view in spy.seen] == list(rewards)


@pytest.mark.parametrize("base", [srtf_est, make_policy("fifo")], ids=["srtf-est", "fifo"])
@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=repr)
def test_det11_eng17_the_engines_fold_the_decline_rule_at_its_boundaries(
    engine: Callable[..., Simulator], base: Policy
) -> None:
    """DET-2, DET-11, ENG-15, ENG-17: every engine (the reference, the generic fast one and
    the built-in path) counts a report at exactly ``warmup_steps`` and fires at exactly ``k``
    declines: scores falling from step 10 with k=2 and warm-up 20 fire at step 40 (20 sets
    the baseline, 30 and 40 decline), so the job is stopped at its 4th checkpoint (t=40)."""
    sim = engine(evalstop(base, DeclineDetector(2, warmup_steps=20)), 1)
    sim.submit(make_job(1, scores=[0.5, 0.4, 0.3, 0.2, 0.1]))
    sim.run()
    assert [(r.time, r.job_id) for r in records_of(sim.log, LogKind.STOP)] == [(40, 1)]


def test_eng15_policies_see_the_same_verdicts_in_both_engines() -> None:
    """ENG-15, BND-1: a policy shown the jobs' verdicts sees the same ones (fired, the step it
    fired at, evaluations, best checkpoint) in the reference and the generic fast engine,
    also once a verdict has fired (here on a kind the wrapper does not stop)."""
    seen = []
    for engine in (Simulator, FastSimulator):
        recorder = Recorder(evalstop(srtf_est, DeclineDetector(2), kinds=frozenset()))
        sim = engine(recorder, 1)
        sim.submit(make_job(1, scores=[0.5, 0.4, 0.3, 0.2, 0.1]))
        sim.submit(make_job(2, submit=5, scores=[0.1, 0.2]))
        sim.run()
        seen.append([job.verdicts for view in recorder.views for job in view.running])
    assert repr(seen[0]) == repr(seen[1])
    assert any(v.fired_step == 30 for verdicts in seen[1] for v in verdicts)
