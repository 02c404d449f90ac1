"""Saved monitor states field by field: each built-in rule state round-trips, and each kind of
bad field is refused with a message naming it (MON-11, MON-15)."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import attrs
import pytest

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, Never, StopAtProgress
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.monitor import Monitor, Stop

BUILT_IN: list[Detector[Any]] = [
    DeclineDetector(k=3),
    LossPlateau(),
    Never(),
    StopAtProgress(0.5),
    NoiseAwareDetector(warmup_evals=2),
]


def saved(detector: Detector[Any]) -> dict[str, Any]:
    """A monitor with two jobs (one with a NaN first score) saved with ``to_dict``."""
    monitor = Monitor(detector)
    for step, score in ((10, math.nan), (20, 0.5), (30, 0.25)):
        monitor.observe("a", step, score, loss=score, estimated_progress=step / 100)
    monitor.observe(7, 5, 0.75, loss=1.0, estimated_progress=0.05)
    return json.loads(monitor.to_json())  # type: ignore[no-any-return]


@pytest.mark.parametrize("detector", BUILT_IN, ids=lambda d: type(d).__name__)
def test_mon11_every_built_in_rule_state_round_trips(detector: Detector[Any]) -> None:
    """MON-11: every built-in detector's state (an attrs state, a bool, None) survives
    to_json / from_json unchanged, and the restored monitor decides the same."""
    data = saved(detector)
    restored = Monitor.from_dict(copy.deepcopy(data))
    assert json.loads(restored.to_json()) == data
    original = Monitor.from_dict(copy.deepcopy(data))
    for step, score in ((40, 0.125), (50, 0.0), (60, -0.5), (70, -1.0)):
        assert original.observe("a", step, score, loss=score) == restored.observe(
            "a", step, score, loss=score
        )


def tampered(detector: Detector[Any], where: str, value: object) -> dict[str, Any]:
    """The saved state of ``detector`` with one field of job "a" (``rule.<name>`` for a field
    of the rule state, ``rule`` for the whole rule state) or of the detector replaced."""
    data = saved(detector)
    job = next(entry for entry in data["jobs"] if entry["job"] == "a")
    if where.startswith("rule."):
        job["rule"][where.removeprefix("rule.")] = value
    elif where.startswith("detector."):
        data["detector"][where.removeprefix("detector.")] = value
    else:
        job[where] = value
    return data


REFUSED: list[tuple[Detector[Any], str, object, str]] = [
    (DeclineDetector(k=3), "rule.declines", 1.5, "DeclineState.declines must be an int"),
    (DeclineDetector(k=3), "rule.declines", None, "DeclineState.declines must not be null"),
    (DeclineDetector(k=3), "rule.previous", math.inf, "DeclineState.previous must be finite"),
    (DeclineDetector(k=3), "rule.extra", 0, "detector state must be an object with"),
    (LossPlateau(), "rule.stale", -1, "PlateauState.stale must be >= 0"),
    (
        NoiseAwareDetector(warmup_evals=2),
        "rule.alarm",
        1,
        "NoiseState.alarm must be a bool, got int",
    ),
    (StopAtProgress(0.5), "rule", 1, "detector state must be a bool, got 1"),
    (Never(), "rule", 0, "detector state must be null, got 0"),
    (DeclineDetector(k=3), "rule.previous", "0.5", "DeclineState.previous must be a float, got"),
    (DeclineDetector(k=3), "best_score", -math.inf, "best_score must be finite"),
    (DeclineDetector(k=3), "best_score", [0.5], "best_score must be a float, got list"),
    (DeclineDetector(k=3), "evals", None, "evals must be an int, got None"),
    (DeclineDetector(k=3), "seen", True, "seen must be an int, got True"),
    (DeclineDetector(k=3), "last_step", 2.5, "last_step must be an int, got 2.5"),
    (DeclineDetector(k=3), "serial", 99, "job 'a' has serial 99, not below next_serial"),
    (DeclineDetector(k=3), "extra", 0, "a job keys differ: missing [], unexpected ['extra']"),
    (DeclineDetector(k=3), "detector.name", 1, "detector name must be a string and params an"),
    (DeclineDetector(k=3), "detector.type", "Mystery", "saved detector 'evalstop(k=3)' is not"),
    (DeclineDetector(k=3), "detector.name", "evalstop(k=2)", "'evalstop(k=2)' rebuilds as"),
]


@pytest.mark.parametrize(
    ("detector", "where", "value", "message"),
    REFUSED,
    ids=[f"{type(d).__name__}-{w}-{v!r}" for d, w, v, _ in REFUSED],
)
def test_mon15_a_bad_field_is_refused_with_its_name(
    detector: Detector[Any], where: str, value: object, message: str
) -> None:
    """MON-15: a wrong type, a null where none is allowed, a non-finite score, an extra key, a
    negative count, an unknown or inconsistent detector: ValueError naming the field."""
    with pytest.raises(ValueError, match=re.escape(message)):
        Monitor.from_dict(tampered(detector, where, value))


def test_mon15_an_int_is_a_valid_float_field_and_null_a_valid_optional_one() -> None:
    """MON-15: JSON writes 1.0 as 1, so an int in a float field is accepted (as a float); an
    optional field may be null (DeclineState.previous before the first score)."""
    data = tampered(DeclineDetector(k=3), "rule.previous", 1)
    state = Monitor.from_dict(data).job_state("a")
    assert state is not None and state.watch.rule.previous == 1.0
    assert isinstance(state.watch.rule.previous, float)
    data = tampered(DeclineDetector(k=3), "rule.previous", None)
    state = Monitor.from_dict(data).job_state("a")
    assert state is not None and state.watch.rule.previous is None


def test_mon15_from_json_of_a_non_object_says_so() -> None:
    """MON-15: a JSON document that is not an object is refused with that reason."""
    for text in ("[]", "1", '"monitor"', "null"):
        with pytest.raises(ValueError) as error:
            Monitor.from_json(text)
        assert str(error.value) == "not a saved evalstop monitor: expected a JSON object"


def test_mon15_jobs_that_are_not_a_list_are_refused() -> None:
    """MON-15: a saved state whose "jobs" is not a list is refused with that reason."""
    data = saved(DeclineDetector(k=3))
    jobs: object
    for jobs in ({}, "a", None):
        data["jobs"] = jobs
        with pytest.raises(
            ValueError, match=r"^not a saved evalstop monitor: jobs must be a list$"
        ):
            Monitor.from_dict(copy.deepcopy(data))


@attrs.frozen
class Steps:
    """A custom rule state holding a frozenset, which JSON cannot carry (a tuple of numbers it
    carries as a list, SIG-7)."""

    steps: frozenset[int] = frozenset()


@attrs.frozen
class StepRecorder:
    """A custom detector whose state is a :class:`Steps`; it never fires."""

    name: str = "step-recorder"

    def initial(self) -> Steps:
        return Steps()

    def update(self, state: Steps, obs: CheckpointView) -> Steps:
        return Steps(state.steps | {obs.step})

    def fired(self, state: Steps) -> bool:
        return False


def test_mon11_a_state_value_json_cannot_carry_is_a_type_error_naming_it() -> None:
    """MON-11: saving a custom detector's state that holds a value JSON cannot carry (here a
    frozenset) is a TypeError naming the value, not a silently altered state."""
    monitor = Monitor(StepRecorder())
    monitor.observe("a", 10, 0.5)
    with pytest.raises(
        TypeError, match=re.escape("cannot serialise detector state value frozenset({10})")
    ):
        monitor.to_json()


@attrs.frozen
class LastScore:
    """A custom detector whose state is the last score it saw (a NaN one too); never fires."""

    name: str = "last-score"

    def initial(self) -> float:
        return 0.0

    def update(self, state: float, obs: CheckpointView) -> float:
        return obs.eval_score

    def fired(self, state: float) -> bool:
        return False


def test_mon11_a_non_finite_state_value_is_a_value_error_naming_it() -> None:
    """MON-11: to_json writes strict JSON, so a custom detector's state holding a NaN is a
    ValueError naming the value, not an invalid document."""
    monitor = Monitor(LastScore())
    monitor.observe("a", 10, math.nan)
    with pytest.raises(ValueError) as info:
        monitor.to_json()
    assert str(info.value) == "cannot serialise a non-finite value nan"


def test_mon15_a_part_that_is_not_an_object_is_named_with_its_type() -> None:
    """MON-15: a detector or a job that is not a JSON object is refused with a message naming
    the part and the type found."""
    for part, value, message in (
        ("detector", 3, "detector must be an object, got int"),
        ("jobs", ["a"], "a job must be an object, got str"),
    ):
        data = saved(DeclineDetector(k=3))
        data[part] = value
        with pytest.raises(ValueError) as info:
            Monitor.from_dict(data)
        assert str(info.value) == f"not a saved evalstop monitor: {message}"


def test_mon15_top_level_keys_duplicate_serials_and_field_names() -> None:
    """MON-15: an unexpected top-level key is named, two jobs with one serial are refused, and
    a bad best step names its field."""
    data = saved(DeclineDetector(k=3))
    data["extra"] = 1
    with pytest.raises(ValueError) as info:
        Monitor.from_dict(data)
    assert str(info.value) == (
        "not a saved evalstop monitor: the document keys differ: missing [], unexpected ['extra']"
    )
    data = saved(DeclineDetector(k=3))
    data["jobs"][1]["serial"] = data["jobs"][0]["serial"]
    with pytest.raises(ValueError, match="serial"):
        Monitor.from_dict(data)
    with pytest.raises(ValueError, match="best_step must be an int"):
        Monitor.from_dict(tampered(DeclineDetector(k=3), "best_step", "10"))


def test_mon11_mon7_a_stopped_job_stays_stopped_after_a_round_trip() -> None:
    """MON-11, MON-7: a job stopped by the built-in decline rule is still stopped, at the same
    step, in the monitor rebuilt from its saved state."""
    monitor = Monitor(DeclineDetector(k=2))
    for step, score in ((10, 0.5), (20, 0.4), (30, 0.3)):
        monitor.observe("a", step, score)
    before = monitor.observe("a", 40, 0.9)
    restored = Monitor.from_json(monitor.to_json())
    assert restored.to_json() == monitor.to_json()
    assert restored.observe("a", 50, 0.9) == monitor.observe("a", 50, 0.9)
    assert isinstance(before, Stop)
    assert before.stop_step == 30


def test_mon15_the_message_is_cut_at_300_characters() -> None:
    """MON-15: a detector parameter with a 500-character name is refused with a message of at
    most 300 characters (the name is quoted in it, cut)."""
    data = saved(DeclineDetector(k=3))
    data["detector"]["params"]["x" * 500] = 1
    with pytest.raises(ValueError) as info:
        Monitor.from_dict(data)
    assert len(str(info.value)) == 300
    assert str(info.value).startswith("not a saved evalstop monitor: TypeError(")
