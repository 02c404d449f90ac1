"""The online monitor (spec MON): verdicts, edge cases, isolation, O(1) state, JSON round trip."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import (
    DeclineDetector,
    Detector,
    LossPlateau,
    Never,
    StopAtProgress,
    observe,
    start_watch,
)
from evalstop.core.model import JobKind
from evalstop.live.monitor import Continue, JobKey, Monitor, MonitorVerdict, Reason, Stop

NAN = math.nan


def feed(monitor: Monitor, job: JobKey, scores: Sequence[float], start: int = 10) -> list[Any]:
    """Observe ``scores`` at steps start, 2*start, ... and return the verdicts."""
    return [monitor.observe(job, start * (i + 1), s) for i, s in enumerate(scores)]


def snapshot(monitor: Monitor) -> dict[str, Any]:
    return monitor.to_dict()


@attrs.frozen
class LastView:
    """A test detector whose state is the last view it saw (O(1)), to inspect the views."""

    @property
    def name(self) -> str:
        return "lastview"

    def initial(self) -> CheckpointView | None:
        return None

    def update(self, state: CheckpointView | None, obs: CheckpointView) -> CheckpointView:
        return obs

    def fired(self, state: CheckpointView | None) -> bool:
        return False


# -- MON-1 ---------------------------------------------------------------------------------


def test_verdicts_are_frozen_values_mon_1() -> None:
    """MON-1: observe returns frozen Continue / Stop values with the job, step and reason."""
    monitor = Monitor(DeclineDetector())
    verdict = monitor.observe("a", 10, 0.5)
    assert isinstance(verdict, Continue)
    assert verdict == Continue("a", 10, Reason.COUNTED, 1, 10, 0.5)
    assert not verdict.stopped
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        verdict.step = 3  # type: ignore[misc]


def test_int_and_str_keys_are_different_jobs_mon_1() -> None:
    """MON-1: 1 and "1" are two jobs; a bool key is refused."""
    monitor = Monitor(DeclineDetector())
    monitor.observe(1, 10, 0.5)
    monitor.observe("1", 10, 0.1)
    assert len(monitor) == 2
    assert list(monitor) == [1, "1"]
    with pytest.raises(TypeError, match="job_id"):
        monitor.observe(True, 20, 0.5)


@pytest.mark.parametrize(
    ("job", "step", "score", "error"),
    [
        (1.5, 10, 0.5, TypeError),
        (None, 10, 0.5, TypeError),
        ("a", 1.0, 0.5, TypeError),
        ("a", True, 0.5, TypeError),
        ("a", -1, 0.5, ValueError),
        ("a", 30, "0.5", TypeError),
        ("a", 30, None, TypeError),
    ],
)
def test_bad_arguments_raise_before_any_change_mon_1(
    job: Any, step: Any, score: Any, error: type[Exception]
) -> None:
    """MON-1: a bad key, step or score raises and leaves the state as it was."""
    monitor = Monitor(DeclineDetector())
    feed(monitor, "a", [0.1, 0.2])
    before = snapshot(monitor)
    with pytest.raises(error):
        monitor.observe(job, step, score)
    assert snapshot(monitor) == before


def test_numpy_scalars_are_accepted_mon_1() -> None:
    """MON-1: numpy integer steps and numpy float or integer scores are plain numbers."""
    # Any: the signature says int and float; numpy scalars are accepted at run time.
    monitor: Any = Monitor()
    plain = Monitor()
    for step, score in [(10, 0.5), (20, 0.7), (30, 0.6), (40, 0.4)]:
        got = monitor.observe("a", np.int64(step), np.float32(score))
        want = plain.observe("a", step, float(np.float32(score)))
        assert got == want
        assert type(got.step) is int
    assert monitor.observe("b", np.int32(1), np.int64(3)) == plain.observe("b", 1, 3.0)
    with pytest.raises(TypeError, match="score"):
        monitor.observe("c", 1, np.bool_(True))
    with pytest.raises(TypeError, match="step"):
        monitor.observe("c", np.float64(1.0), 0.5)


def test_bad_mode_is_refused_mon_1() -> None:
    """MON-1: the mode is max or min."""
    with pytest.raises(ValueError, match="mode"):
        Monitor(mode="up")  # type: ignore[arg-type]


# -- MON-2 ---------------------------------------------------------------------------------


def test_views_carry_the_documented_defaults_mon_2() -> None:
    """MON-2: kind RLHF, loss NaN, progress 0, time 0, index = accepted count, id = serial."""
    monitor = Monitor(LastView())
    monitor.observe("x", 5, 0.1)
    monitor.observe("y", 7, 0.2)
    monitor.observe("y", 9, 0.3)
    state = monitor.job_state("y")
    assert state is not None
    view = state.watch.rule
    assert isinstance(view, CheckpointView)
    assert (view.job_id, view.index, view.step, view.eval_score) == (1, 2, 9, 0.3)
    assert view.kind is JobKind.RLHF
    assert math.isnan(view.loss)
    assert (view.estimated_progress, view.time, view.proxy_reward) == (0.0, 0, None)
    monitor.observe(
        "y",
        11,
        0.4,
        loss=1.5,
        proxy_reward=2.0,
        estimated_progress=0.5,
        kind=JobKind.DPO,
        time=99,
    )
    state = monitor.job_state("y")
    assert state is not None
    view = state.watch.rule
    assert (view.loss, view.proxy_reward, view.estimated_progress, view.kind, view.time) == (
        1.5,
        2.0,
        0.5,
        JobKind.DPO,
        99,
    )


scores = st.one_of(
    st.floats(min_value=-1.0, max_value=1.0),
    st.sampled_from([NAN, math.inf, -math.inf, 0.0, 0.5]),
)
detectors: st.SearchStrategy[Detector[Any]] = st.one_of(
    st.builds(DeclineDetector, k=st.integers(1, 4)),
    st.builds(LossPlateau, patience=st.integers(1, 3)),
    st.builds(StopAtProgress, fraction=st.sampled_from([0.3, 0.65, 1.0])),
    st.just(Never()),
)


@given(detectors, st.lists(st.tuples(scores, scores, st.floats(0.0, 1.0)), max_size=25))
def test_monitor_decides_like_the_detector_fold_mon_2(
    detector: Detector[Any], points: list[tuple[float, float, float]]
) -> None:
    """MON-2, DET-1, DET-2, DET-4, DET-5: stops exactly when folding the same views fires."""
    monitor = Monitor(detector)
    watch = start_watch(detector)
    for i, (score, loss, progress) in enumerate(points):
        step = 10 * (i + 1)
        verdict = monitor.observe("j", step, score, loss=loss, estimated_progress=progress)
        if watch.fired_step is not None:
            assert verdict.stopped and verdict.reason is Reason.ALREADY_STOPPED
            continue
        view = CheckpointView(
            job_id=0,
            kind=JobKind.RLHF,
            index=i + 1,
            step=step,
            time=0,
            eval_score=score,
            loss=loss,
            proxy_reward=None,
            estimated_progress=progress,
        )
        watch = observe(detector, watch, view)
        assert verdict.stopped == (watch.fired_step is not None)
        assert (verdict.evals, verdict.best_step, verdict.best_score) == (
            watch.evals,
            watch.best_step,
            watch.best_score,
        )


# -- MON-3 ---------------------------------------------------------------------------------


def test_stop_names_the_trigger_and_the_best_checkpoint_mon_3() -> None:
    """MON-3, DET-4: a stop at the k-th decline keeps the best checkpoint before it."""
    monitor = Monitor(DeclineDetector())
    verdicts = feed(monitor, "job", [0.1, 0.5, 0.4, 0.3])
    assert [v.stopped for v in verdicts] == [False, False, False, True]
    assert verdicts[-1] == Stop("job", 40, Reason.COUNTED, 4, 40, 20, 0.5)


def test_k_parameter_is_honoured_mon_3() -> None:
    """MON-3: DeclineDetector(k=3) needs a third consecutive decline."""
    monitor = Monitor(DeclineDetector(k=3))
    verdicts = feed(monitor, "job", [0.5, 0.4, 0.3, 0.35, 0.3, 0.2, 0.1])
    assert [v.stopped for v in verdicts] == [False] * 6 + [True]
    last = verdicts[-1]
    assert isinstance(last, Stop)
    assert (last.stop_step, last.best_step, last.best_score) == (70, 10, 0.5)


# -- MON-4 ---------------------------------------------------------------------------------


def test_min_mode_counts_rises_as_declines_mon_4() -> None:
    """MON-4: in min mode the lowest score is best and a rise is a decline."""
    monitor = Monitor(DeclineDetector(), "min")
    verdicts = feed(monitor, "loss", [0.5, 0.3, 0.4, 0.6])
    assert verdicts[-1] == Stop("loss", 40, Reason.COUNTED, 4, 40, 20, 0.3)
    assert verdicts[1] == Continue("loss", 20, Reason.COUNTED, 2, 20, 0.3)


@given(st.lists(scores, max_size=20))
def test_min_mode_is_max_mode_on_negated_scores_mon_4(values: list[float]) -> None:
    """MON-4: min mode decides as max mode on -score and reports the original values."""
    low, high = Monitor(DeclineDetector(), "min"), Monitor(DeclineDetector(), "max")
    for i, value in enumerate(values):
        a = low.observe("j", i, value)
        b = high.observe("j", i, -value)
        assert (a.stopped, a.reason, a.evals, a.best_step) == (
            b.stopped,
            b.reason,
            b.evals,
            b.best_step,
        )
        if a.best_score is not None:
            assert b.best_score is not None
            assert a.best_score == -b.best_score


# -- MON-5 ---------------------------------------------------------------------------------


def test_non_finite_scores_are_skipped_mon_5() -> None:
    """MON-5, DET-3: NaN and inf neither decline nor reset; reason non_finite."""
    monitor = Monitor(DeclineDetector())
    verdicts = feed(monitor, "j", [0.5, NAN, 0.4, math.inf, -math.inf, 0.3])
    assert [v.reason for v in verdicts] == [
        Reason.COUNTED,
        Reason.NON_FINITE,
        Reason.COUNTED,
        Reason.NON_FINITE,
        Reason.NON_FINITE,
        Reason.COUNTED,
    ]
    assert verdicts[-1] == Stop("j", 60, Reason.COUNTED, 3, 60, 10, 0.5)
    assert [v.stopped for v in verdicts[:-1]] == [False] * 5


def test_non_finite_scores_advance_the_step_mon_5() -> None:
    """MON-5: a NaN report still advances the job's last step and checkpoint index."""
    monitor = Monitor(DeclineDetector())
    monitor.observe("j", 10, 0.5)
    monitor.observe("j", 20, NAN)
    state = monitor.job_state("j")
    assert state is not None
    assert (state.last_step, state.seen, state.watch.evals) == (20, 2, 1)
    assert monitor.observe("j", 20, 0.1).reason is Reason.STALE_STEP


def test_first_observation_may_be_nan_mon_5() -> None:
    """MON-5: a job whose first report is NaN has no best yet."""
    verdict = Monitor(DeclineDetector()).observe("j", 0, NAN)
    assert verdict == Continue("j", 0, Reason.NON_FINITE, 0, None, None)


# -- MON-6 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("step", [10, 20, 5, 0])
def test_stale_steps_are_ignored_mon_6(step: int) -> None:
    """MON-6: a repeated or earlier step is reported stale and changes nothing."""
    monitor = Monitor(DeclineDetector())
    feed(monitor, "j", [0.5, 0.4])
    before = snapshot(monitor)
    verdict = monitor.observe("j", step, 0.0)
    assert verdict == Continue("j", step, Reason.STALE_STEP, 2, 10, 0.5)
    assert snapshot(monitor) == before
    # The stale report did not count, so 0.3 is the second consecutive decline.
    assert monitor.observe("j", 30, 0.3).stopped


def test_stale_step_cannot_trigger_a_stop_mon_6() -> None:
    """MON-6: replaying old declines with old steps never fires the detector."""
    monitor = Monitor(DeclineDetector())
    feed(monitor, "j", [0.5, 0.6, 0.7])
    for step in (10, 20, 30, 30, 15):
        assert not monitor.observe("j", step, -1.0).stopped


# -- MON-7 ---------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.integers(0, 100), scores), max_size=10))
def test_after_a_stop_nothing_changes_mon_7(later: list[tuple[int, float]]) -> None:
    """MON-7: every later observation of a stopped job repeats the stop, state unchanged."""
    monitor = Monitor(DeclineDetector())
    stop = feed(monitor, "j", [0.5, 0.4, 0.3])[-1]
    assert isinstance(stop, Stop)
    before = snapshot(monitor)
    for step, score in later:
        verdict = monitor.observe("j", step, score)
        assert verdict == Stop("j", step, Reason.ALREADY_STOPPED, 3, 30, 10, 0.5)
    assert snapshot(monitor) == before


# -- MON-8 ---------------------------------------------------------------------------------


def test_unknown_jobs_register_and_forget_is_idempotent_mon_8() -> None:
    """MON-8: first observation registers; forgetting an unknown job returns False."""
    monitor = Monitor(DeclineDetector())
    assert "new" not in monitor and monitor.job_state("new") is None
    monitor.observe("new", 3, 0.2)
    assert "new" in monitor and len(monitor) == 1
    assert monitor.forget("new") is True
    assert monitor.forget("new") is False
    assert monitor.forget("never-seen") is False
    assert len(monitor) == 0


def test_a_forgotten_job_starts_afresh_mon_8() -> None:
    """MON-8: after forget, the same key is a new job: no stop, old steps are fine."""
    monitor = Monitor(DeclineDetector())
    assert feed(monitor, "j", [0.5, 0.4, 0.3])[-1].stopped
    monitor.forget("j")
    verdict = monitor.observe("j", 10, 0.1)
    assert verdict == Continue("j", 10, Reason.COUNTED, 1, 10, 0.1)
    state = monitor.job_state("j")
    assert state is not None and state.serial == 1


# -- MON-9 ---------------------------------------------------------------------------------

job_keys = st.one_of(st.integers(0, 5), st.sampled_from(["a", "b", "0", "c"]))


@given(
    st.dictionaries(job_keys, st.lists(scores, max_size=12), max_size=6),
    st.randoms(use_true_random=False),
)
def test_interleaving_gives_each_job_its_solo_verdicts_mon_9(
    streams: dict[JobKey, list[float]], rnd: Any
) -> None:
    """MON-9: any interleaving gives each job the verdicts it gets alone."""
    order = [key for key, values in streams.items() for _ in values]
    rnd.shuffle(order)
    together = Monitor(DeclineDetector())
    got: dict[JobKey, list[MonitorVerdict]] = {key: [] for key in streams}
    cursor = dict.fromkeys(streams, 0)
    for key in order:
        i = cursor[key]
        cursor[key] += 1
        others = {k: together.job_state(k) for k in streams if k != key}
        got[key].append(together.observe(key, 10 * (i + 1), streams[key][i]))
        assert {k: together.job_state(k) for k in streams if k != key} == others
    for key, values in streams.items():
        assert got[key] == feed(Monitor(DeclineDetector()), key, values)


# -- MON-10 --------------------------------------------------------------------------------


def _job_entry_size(n: int) -> int:
    monitor = Monitor(DeclineDetector())
    for i in range(n):
        monitor.observe("job", 100 + i, 0.5 + 1e-6 * i)  # a rising run: never stopped
    (entry,) = monitor.to_dict()["jobs"]
    return len(json.dumps(entry))


def test_state_per_job_is_constant_mon_10() -> None:
    """MON-10, DET-8: a job's state does not grow with its number of observations."""
    sizes = [_job_entry_size(n) for n in (10, 100, 1000)]
    assert max(sizes) - min(sizes) <= 16  # only the digits of the step counters grow
    monitor = Monitor(DeclineDetector())
    for i in range(3):
        monitor.observe(i, 1, 0.5)
    assert len(monitor.to_dict()["jobs"]) == 3


# -- MON-11 --------------------------------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("observe"), job_keys, st.integers(0, 40), scores),
        st.tuples(st.just("forget"), job_keys, st.just(0), st.just(0.0)),
    ),
    max_size=60,
)


def run_ops(monitor: Monitor, ops: Sequence[tuple[str, JobKey, int, float]]) -> list[Any]:
    out: list[Any] = []
    for kind, key, step, score in ops:
        if kind == "observe":
            out.append(monitor.observe(key, step, score, estimated_progress=step / 40))
        else:
            out.append(monitor.forget(key))
    return out


@given(detectors, st.sampled_from(["max", "min"]), operations, st.data())
def test_json_round_trip_resumes_identically_mon_11(
    detector: Detector[Any], mode: Any, ops: list[Any], data: st.DataObject
) -> None:
    """MON-11: split a stream anywhere, save, restore, continue: same as uninterrupted."""
    split = data.draw(st.integers(0, len(ops)))
    straight = Monitor(detector, mode)
    expected = run_ops(straight, ops)
    first = Monitor(detector, mode)
    head = run_ops(first, ops[:split])
    text = first.to_json()
    json.loads(text)  # strict JSON: no NaN tokens
    restored = Monitor.from_json(text)
    assert restored.to_dict() == first.to_dict()
    tail = run_ops(restored, ops[split:])
    assert head + tail == expected
    assert restored.to_dict() == straight.to_dict()


def test_round_trip_through_dict_mon_11() -> None:
    """MON-11: to_dict / from_dict round-trip too, keys keep their types."""
    monitor = Monitor(DeclineDetector(k=3), mode="min")
    monitor.observe(7, 1, 0.5)
    monitor.observe("7", 1, NAN)
    copy = Monitor.from_dict(json.loads(json.dumps(monitor.to_dict())))
    assert list(copy) == [7, "7"]
    assert copy.mode == "min" and copy.detector == DeclineDetector(k=3)
    assert copy.to_dict() == monitor.to_dict()


def test_restore_checks_the_detector_mon_11() -> None:
    """MON-11: a different detector is refused; a custom one must be passed in."""
    text = Monitor(DeclineDetector(k=2)).to_json()
    with pytest.raises(ValueError, match="differs"):
        Monitor.from_json(text, detector=DeclineDetector(k=3))
    assert Monitor.from_json(text, detector=DeclineDetector(k=2)).detector.name == "evalstop(k=2)"
    custom = Monitor(LastView())
    with pytest.raises(ValueError, match="not built in"):
        Monitor.from_json(custom.to_json())
    restored = Monitor.from_json(custom.to_json(), detector=LastView())
    assert restored.detector.name == "lastview"


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"format": "other"}',
        '{"format": "evalstop.live.monitor/1", "mode": "max"}',
        '{"format": "evalstop.live.monitor/1", "mode": "sideways", "next_serial": 0, "jobs": [], '
        '"detector": {"name": "never", "type": "Never", "params": {}}}',
        '{"format": "evalstop.live.monitor/1", "mode": "max", "next_serial": 0, "detector": '
        '{"name": "never", "type": "Never", "params": {}}, "jobs": [{"job": true}]}',
        '{"format": "evalstop.live.monitor/1", "mode": "max", "next_serial": 0, "detector": '
        '{"name": "evalstop(k=2)", "type": "DeclineDetector", "params": {"k": 2}}, "jobs": '
        '[{"job": 1, "serial": 0, "last_step": 1, "seen": 1, "rule": {"declines": 0, '
        '"previous": 0.5}, "evals": 1, "best_step": 1, "best_score": 0.5, "fired_step": null}]}',
    ],
)
def test_malformed_saved_state_raises_value_error_mon_11(text: str) -> None:
    """MON-11: malformed saved data raises ValueError (the last one: serial >= next_serial)."""
    with pytest.raises(ValueError):
        Monitor.from_json(text)


def test_mon12_standing_verdict_reads_without_changing_state() -> None:
    """MON-12: verdict() reports the best checkpoint and the latch, and changes nothing."""
    monitor = Monitor(DeclineDetector(2))
    assert monitor.verdict("a") is None
    for step, score in ((10, 0.2), (20, 0.5), (30, 0.4)):
        monitor.observe("a", step, score)
    before = monitor.to_json()
    standing = monitor.verdict("a")
    assert isinstance(standing, Continue)
    assert (standing.step, standing.best_step, standing.best_score) == (30, 20, 0.5)
    assert standing.reason is Reason.STANDING
    assert monitor.to_json() == before
    monitor.observe("a", 40, 0.3)
    stopped = monitor.verdict("a")
    assert isinstance(stopped, Stop) and stopped.stop_step == 40 and stopped.best_step == 20
    monitor.forget("a")
    assert monitor.verdict("a") is None
