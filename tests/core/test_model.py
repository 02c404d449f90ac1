"""The domain model: validation, checkpoint schedule, immutability, integer time (MOD-*)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import make_job, simulate
from evalstop.core.model import (
    Job,
    JobKind,
    JobSpec,
    JobTruth,
    Observation,
    frozen_array,
    trusted_job,
    trusted_observations,
)
from evalstop.core.policies import fifo
from evalstop.engine.log import LogKind


def spec(**changes: object) -> JobSpec:
    fields: dict[str, object] = {
        "job_id": 1,
        "kind": JobKind.RLHF,
        "gpus": 1,
        "submit_time": 0,
        "estimated_duration": 100,
        "eval_interval": 10,
    }
    fields.update(changes)
    return JobSpec(**fields)  # type: ignore[arg-type]


def truth(**changes: object) -> JobTruth:
    fields: dict[str, object] = {
        "total_steps": 20,
        "duration": 100,
        "hacking": False,
        "quality": [0.1, 0.2],
        "peak_fraction": 2.0,
    }
    fields.update(changes)
    return JobTruth(**fields)  # type: ignore[arg-type]


def observation(**changes: object) -> Observation:
    fields: dict[str, object] = {"step": 10, "eval_score": 0.5, "loss": 1.0}
    fields.update(changes)
    return Observation(**fields)  # type: ignore[arg-type]


BAD_FIELDS: list[tuple[Callable[..., object], str, object]] = [
    (spec, "job_id", -1),
    (spec, "submit_time", -5),
    (spec, "gpus", 0),
    (spec, "gpus", -2),
    (spec, "estimated_duration", 0),
    (spec, "eval_interval", 0),
    (truth, "total_steps", 0),
    (truth, "duration", 0),
    (truth, "duration", -3),
    (truth, "peak_fraction", math.nan),
    (truth, "peak_fraction", math.inf),
    (observation, "step", -1),
    (spec, "tenant", ""),
    (spec, "tenant", "  "),
    (spec, "tenant", 5),
    (spec, "name", ""),
    (spec, "name", b"cifar"),
]


@pytest.mark.parametrize(("factory", "field", "value"), BAD_FIELDS)
def test_mod2_validators_name_field_and_value(
    factory: Callable[..., object], field: str, value: object
) -> None:
    """MOD-2: a bad field raises ValueError whose message names the field and the value."""
    with pytest.raises(ValueError, match=field) as info:
        factory(**{field: value})
    assert repr(value) in str(info.value)


def test_mod2_good_boundary_values_accepted() -> None:
    """MOD-2: the limits themselves are fine (job id and submit time 0, counts 1)."""
    spec(job_id=0, submit_time=0, gpus=1, estimated_duration=1, eval_interval=1)
    truth(total_steps=1, duration=1, peak_fraction=0.0)
    observation(step=0, eval_score=math.nan)  # a failed evaluation is data (DET-3)
    # The last observation step may be 1 (> 0).
    assert Job(spec(), truth(quality=[0.5]), [observation(step=1)]).checkpoints == 1


def two_observations(first: int = 10, second: int = 20) -> list[Observation]:
    return [observation(step=first), observation(step=second)]


def test_mod2_job_needs_one_quality_point_per_observation() -> None:
    """MOD-2: at least one observation and one true-quality point per observation."""
    with pytest.raises(ValueError, match=r"quality.*one entry per observation \(2\).*got 3"):
        Job(spec(), truth(quality=[0.1, 0.2, 0.3]), two_observations())
    with pytest.raises(ValueError, match=r"quality.*\(3\).*got 2"):
        Job(spec(), truth(), [*two_observations(), observation(step=30)])
    with pytest.raises(ValueError, match="at least one") as info:
        Job(spec(), truth(quality=[]), [])
    assert str(info.value) == "observations must have at least one entry, got 0"


@pytest.mark.parametrize(("first", "second"), [(10, 10), (20, 10), (0, 0)])
def test_mod2_observation_steps_strictly_increase(first: int, second: int) -> None:
    """MOD-2: observation steps must strictly increase (and end above 0); the message shows
    them."""
    with pytest.raises(ValueError, match="steps must strictly increase and end above 0") as info:
        Job(spec(), truth(), two_observations(first, second))
    assert str([first, second]) in str(info.value)


def test_mod2_a_single_observation_at_step_zero_is_refused() -> None:
    """MOD-2: the last observation step must be > 0, also when it is the only one (step 0
    would put the end of the run at no service at all)."""
    with pytest.raises(
        ValueError, match=r"steps must strictly increase and end above 0, got \[0\]"
    ):
        Job(spec(), truth(quality=[0.5]), [observation(step=0)])


def test_mod2_duration_long_enough_for_distinct_checkpoints() -> None:
    """MOD-2: checkpoints must fall at distinct seconds, so the duration must be long enough."""
    with pytest.raises(ValueError, match=r"duration=1 is too short.*steps \[10, 20\]"):
        Job(spec(), truth(duration=1), two_observations())
    Job(spec(), truth(duration=2), two_observations())  # one second each is fine


def _rule_of_mod2(steps: list[int], duration: int) -> str | None:
    """MOD-2: the step and duration rules as written (the pairwise form), or None if they
    hold."""
    if any(b <= a for a, b in itertools.pairwise(steps)) or steps[-1] <= 0:
        return "steps must strictly increase and end above 0"
    services = [step * duration // steps[-1] for step in steps]
    start = -1 if steps[0] == 0 else 0  # a step-0 evaluation falls at service 0 (MOD-3)
    if any(b <= a for a, b in itertools.pairwise([start, *services])):
        return f"duration={duration} is too short"
    return None


@given(
    steps=st.lists(st.integers(0, 60), min_size=1, max_size=8),
    duration=st.integers(1, 80),
)
def test_mod2_steps_and_duration_as_the_rule_says(steps: list[int], duration: int) -> None:
    """MOD-2: a job is refused exactly when its steps or duration break the rule above, with
    that rule's message (the steps' first), and built otherwise."""
    observations = [observation(step=step) for step in steps]
    expected = _rule_of_mod2(steps, duration)
    quality = [0.5] * len(steps)
    if expected is None:
        Job(spec(), truth(duration=duration, quality=quality), observations)
        return
    with pytest.raises(ValueError, match=expected) as info:
        Job(spec(), truth(duration=duration, quality=quality), observations)
    assert str(steps) in str(info.value)


@given(duration=st.integers(1, 10_000), data=st.data())
def test_mod3_checkpoint_schedule(duration: int, data: st.DataObject) -> None:
    """MOD-3: the checkpoint at step s falls at floor(s * D / S) seconds, S the last step;
    distinct; the last one at D. Evenly spaced steps give floor(i * D / n)."""
    n = data.draw(st.integers(1, min(duration, 50)))
    job = make_job(1, scores=[0.0] * n, duration=duration)
    services = [job.checkpoint_service(i) for i in range(1, n + 1)]
    assert services == [(i * duration) // n for i in range(1, n + 1)]
    assert all(isinstance(s, int) for s in services)
    assert all(a < b for a, b in itertools.pairwise(services))
    assert services[0] >= 1
    assert services[-1] == duration
    assert job.checkpoints == n
    for bad in (0, n + 1, -1):
        with pytest.raises(ValueError, match="checkpoint index"):
            job.checkpoint_service(bad)


def test_mod3_uneven_last_interval() -> None:
    """MOD-3: a run that ends between two multiples of its interval has a shorter last gap."""
    steps = [10, 20, 25]
    job = Job(
        spec(eval_interval=10),
        truth(duration=50, quality=[0.0, 0.1, 0.2]),
        [observation(step=s) for s in steps],
    )
    assert [job.checkpoint_service(i) for i in (1, 2, 3)] == [20, 40, 50]


def test_mod3_checkpoint_steps() -> None:
    """MOD-3: checkpoint i reports the step of observation i."""
    job = make_job(1, scores=[0.1, 0.2, 0.3], steps_per_eval=7)
    assert [job.checkpoint_step(i) for i in (1, 2, 3)] == [7, 14, 21]


def test_mod3_engine_reaches_checkpoints_at_schedule() -> None:
    """MOD-3: uninterrupted, a job started at t=0 logs checkpoint i at floor(i * D / n)."""
    job = make_job(1, scores=[0.1, 0.2, 0.3], duration=10)  # 3, 6, 10
    sim = simulate(fifo, [job])
    times = [r.time for r in sim.log if r.kind is LogKind.CHECKPOINT]
    assert times == [3, 6, 10]


def test_mod1_integer_time() -> None:
    """MOD-1: every time the engine produces is an exact int, so ties are real ties."""
    jobs = [
        make_job(1, scores=[0.1, 0.2, 0.3], duration=10),  # checkpoints at 3, 6, 10
        make_job(2, submit=3, scores=[0.5, 0.4], duration=7),  # starts at 3 on the free GPU
        make_job(3, submit=6, gpus=1, scores=[0.1], duration=4),
    ]
    sim = simulate(fifo, jobs, total_gpus=2)
    assert all(type(record.time) is int for record in sim.log)
    assert type(sim.state.time) is int
    # Job 2 arrives at t=3, the same second as job 1's first checkpoint: the checkpoint is
    # handled first (a real tie, ordered by rank, ENG-2).
    at_three = [(r.kind, r.job_id) for r in sim.log if r.time == 3]
    assert at_three == [
        (LogKind.CHECKPOINT, 1),
        (LogKind.ARRIVE, 2),
        (LogKind.START, 2),
    ]


NON_INTEGERS: list[tuple[Callable[..., object], str, object]] = [
    (spec, "submit_time", 1.5),
    (spec, "submit_time", 2.0),
    (spec, "estimated_duration", 99.9),
    (spec, "gpus", True),
    (spec, "job_id", "7"),
    (spec, "eval_interval", 2.0),
    (truth, "duration", 100.0),
    (truth, "total_steps", 20.5),
    (observation, "step", 10.0),
]


@pytest.mark.parametrize(("factory", "field", "value"), NON_INTEGERS)
def test_mod1_times_and_counts_must_be_integers(
    factory: Callable[..., object], field: str, value: object
) -> None:
    """MOD-1: a float (even a whole one), a bool or a string where a time or count belongs is
    rejected with ValueError naming the field and the value."""
    with pytest.raises(ValueError, match=f"{field} must be an integer") as info:
        factory(**{field: value})
    assert repr(value) in str(info.value)


def test_mod1_numpy_zero_is_a_valid_non_negative_value() -> None:
    """MOD-1, MOD-2: a numpy integer 0 is a valid time or step (>= 0), a numpy -1 is not."""
    assert spec(submit_time=np.int64(0)).submit_time == 0
    assert observation(step=np.int64(0)).step == 0
    with pytest.raises(ValueError, match="submit_time must be >= 0, got"):
        spec(submit_time=np.int64(-1))


def test_mod1_numpy_integers_are_integers() -> None:
    """MOD-1: numpy integers (what array-based workload code produces) are accepted."""
    made = spec(submit_time=np.int64(3), estimated_duration=np.int32(40))
    assert made.submit_time == 3


def test_mod4_frozen_values() -> None:
    """MOD-4: model values are frozen attrs classes."""
    job = make_job(1)
    for value, field in [
        (job, "truth"),
        (job.spec, "gpus"),
        (job.truth, "duration"),
        (job.observations[0], "eval_score"),
    ]:
        assert attrs.has(type(value))
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(value, field, 3)


def test_mod4_arrays_are_read_only_copies() -> None:
    """MOD-4: arrays are read-only copies: writing raises ValueError; the source is detached."""
    source = np.array([0.1, 0.2, 0.3])
    value = truth(quality=source[:2])
    with pytest.raises(ValueError, match="read-only"):
        value.quality[0] = 9.0
    source[0] = 42.0
    assert value.quality[0] == 0.1
    assert value.quality.dtype == np.float64
    made = make_job(1, quality=[0.4, 0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match="read-only"):
        made.truth.quality[1] = 0.0


def test_mod4_frozen_array_helper() -> None:
    """MOD-4: frozen_array copies and locks any array-like."""
    original = [1, 2, 3]
    array = frozen_array(original)
    assert not array.flags.writeable
    assert array.dtype == np.float64
    assert list(array) == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="read-only"):
        array[:] = 0.0


def test_mod4_array_equality_compares_contents() -> None:
    """MOD-4: values holding arrays compare by contents (attrs cmp_using np.array_equal)."""
    assert truth(quality=[0.1, 0.2]) == truth(quality=np.array([0.1, 0.2]))
    assert truth(quality=[0.1, 0.2]) != truth(quality=[0.1, 0.3])


_floats = st.floats(allow_nan=True, allow_infinity=True)


@given(
    st.lists(
        st.tuples(st.integers(0, 10**12), _floats, _floats, _floats, _floats),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
def test_mod5_trusted_observations_equal_validated_ones(
    rows: list[tuple[int, float, float, float, float]], rlhf: bool
) -> None:
    """MOD-5: the trusted path gives the observations the validated constructor gives, field
    for field (compared by repr, so NaN and the sign of zero count), with None columns as
    None fields; still frozen."""
    steps = [row[0] for row in rows]
    scores, losses, proxies, kls = ([row[i] for row in rows] for i in range(1, 5))
    made = trusted_observations(
        steps, scores, losses, proxies if rlhf else None, kls if rlhf else None
    )
    expected = [
        Observation(s, e, loss, p if rlhf else None, k if rlhf else None)
        for s, e, loss, p, k in rows
    ]
    assert type(made) is tuple and all(type(obs) is Observation for obs in made)
    assert [repr(attrs.astuple(obs)) for obs in made] == [
        repr(attrs.astuple(obs)) for obs in expected
    ]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made[0].step = 1  # type: ignore[misc]


def test_mod5_validated_fields_are_those_the_trusted_path_trusts() -> None:
    """MOD-5: the step is the one observation field with a validator (what the trusted path's
    callers guarantee); the public constructor still rejects a bad step."""
    validated = [field.name for field in attrs.fields(Observation) if field.validator]
    assert validated == ["step"]
    for bad in (-1, 1.0, True):
        with pytest.raises(ValueError, match="step"):
            Observation(bad, 0.5, 1.0)  # type: ignore[arg-type]


def test_mod5_trusted_columns_of_different_lengths_are_refused() -> None:
    """MOD-5: columns of different lengths are a ValueError, not a silently shorter run."""
    with pytest.raises(ValueError, match="one entry per step"):
        trusted_observations([0, 1], [0.5], [1.0, 1.0])
    with pytest.raises(ValueError, match="one entry per step"):
        trusted_observations([0, 1], [0.5, 0.5], [1.0, 1.0], [0.1], None)


def test_mod5_a_trusted_job_equals_the_validated_one() -> None:
    """MOD-5: ``trusted_job`` gives the job ``Job`` gives (equal, same fields, frozen); the
    public constructor still refuses what the trusted path does not check."""
    args = (spec(), truth(), tuple(two_observations()))
    made, validated = trusted_job(*args), Job(*args)
    assert type(made) is Job and made == validated
    assert (made.spec, made.truth, made.observations) == args
    assert made.checkpoint_service(2) == validated.checkpoint_service(2)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.spec = spec()  # type: ignore[misc]
    with pytest.raises(ValueError, match="strictly increase"):
        Job(spec(), truth(), tuple(two_observations(20, 10)))
