"""The information boundary: what policies and detectors can reach (BND-*)."""

from __future__ import annotations

import ast
import gc
import inspect
import math
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalstop
from builders import Recorder, cluster_view, job_view, make_job, simulate, with_hidden_truth
from evalstop.core import boundary
from evalstop.core import decision as decision_module
from evalstop.core.boundary import (
    OBSERVABLE_SPEC_FIELDS,
    CheckpointView,
    ClusterView,
    EventKind,
    JobView,
    Verdict,
    checkpoint_report,
    make_job_view,
    trusted_job_view,
    trusted_verdict,
)
from evalstop.core.decision import Decision, StopOrder, trusted_decision, trusted_stop_order
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.model import Job, JobKind, JobSpec, JobTruth
from evalstop.core.policies import BASE_POLICIES, fifo, srtf_est
from evalstop.core.wrapper import evalstop as wrap
from evalstop.engine import Simulator

HIDDEN_NAMES = frozenset(
    {"truth", "total_steps", "duration", "hacking", "quality", "peak_fraction", "peak_index"}
)

# Hidden values chosen so that no observable quantity of the scenario below can equal them.
TOTAL_STEPS = 987_651
DURATION = 4_001
PEAK_FRACTION = 0.271828
QUALITY = (0.7311, 0.7312, 0.7313, 0.7314)


def secret_job(
    job_id: int, *, submit: int, scores: list[float], hacking: bool, estimate: int = 3_000
) -> Job:
    """A job whose hidden truth is made of sentinel values."""
    job = make_job(job_id, submit=submit, scores=scores, duration=DURATION, estimate=estimate)
    return with_hidden_truth(
        job,
        total_steps=TOTAL_STEPS + job_id,
        hacking=hacking,
        quality=[q + job_id for q in QUALITY[: len(scores)]],
        peak_fraction=PEAK_FRACTION + job_id,
    )


@attrs.frozen(eq=False)
class RecordingDetector:
    """A detector that delegates to ``inner`` and keeps every CheckpointView it is shown."""

    inner: DeclineDetector
    seen: list[CheckpointView] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return "recording"

    def initial(self) -> Any:
        return self.inner.initial()

    def update(self, state: Any, obs: CheckpointView) -> Any:
        self.seen.append(obs)
        return self.inner.update(state, obs)

    def fired(self, state: Any) -> bool:
        return self.inner.fired(state)


@pytest.fixture(scope="module")
def captured() -> tuple[list[ClusterView], list[CheckpointView], list[Job]]:
    """Every ClusterView and CheckpointView shown during real runs (FIFO and a preemptive
    policy, with a plain and a recording detector) over jobs with sentinel truth."""
    jobs = [
        secret_job(1, submit=7, scores=[0.5, 0.4, 0.3, 0.2], hacking=True),
        secret_job(2, submit=9, scores=[0.1, 0.2, 0.3, 0.4], hacking=False),
        secret_job(3, submit=11, scores=[0.3, math.nan, 0.1, 0.2], hacking=True, estimate=100),
    ]
    views: list[ClusterView] = []
    reports: list[CheckpointView] = []
    for base in (fifo, srtf_est):
        detector = RecordingDetector(DeclineDetector(2))
        recorder = Recorder(wrap(wrap(base, detector), LossPlateau(2)))
        sim = simulate(recorder, jobs, total_gpus=2)
        assert sim.state.ended_count == len(jobs)
        views.extend(recorder.views)
        reports.extend(detector.seen)
    assert len(views) > 10
    assert len(reports) > 6
    assert any(job.preemptions for view in views for job in view.queued)  # srtf preempted
    return views, reports, jobs


def reachable(root: object) -> Iterator[object]:
    """Every object reachable from ``root`` through gc referents.

    Classes and modules are shared code, not data a value stores: they are yielded (so the
    caller can see them) but not entered.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, type | types.ModuleType):
            continue
        stack.extend(gc.get_referents(obj))


PLAIN = (int, float, str, bool, type(None), tuple, JobKind)
VIEW_TYPES = (ClusterView, JobView, Verdict, CheckpointView)


def assert_no_hidden(root: object, jobs: list[Job]) -> None:
    hidden_ints = {job.truth.total_steps for job in jobs} | {job.truth.duration for job in jobs}
    hidden_floats = {float(q) for job in jobs for q in job.truth.quality}
    hidden_floats |= {job.truth.peak_fraction for job in jobs}
    count = 0
    for obj in reachable(root):
        count += 1
        if isinstance(obj, type | types.ModuleType):
            continue
        assert not isinstance(obj, Job | JobTruth | JobSpec | np.ndarray), type(obj)
        assert not callable(obj), f"reachable callable {obj!r} (a closure?)"
        assert isinstance(obj, PLAIN + VIEW_TYPES) or (
            isinstance(obj, dict) and all(isinstance(k, str) for k in obj)  # an enum's dict
        ), f"unexpected {type(obj)} in a view"
        for name in HIDDEN_NAMES:
            assert not hasattr(obj, name), f"{type(obj).__name__} has {name}"
        if isinstance(obj, bool):
            continue
        if isinstance(obj, int):
            assert obj not in hidden_ints, f"hidden int {obj} reachable"
        if isinstance(obj, float):
            assert obj not in hidden_floats, f"hidden float {obj} reachable"
    assert count > 5


def test_bnd1_jobview_fields_are_the_observable_ones() -> None:
    """BND-1: a JobView holds id, name, tenant, kind, GPUs, submit time, estimate, evaluation
    interval, service, preemptions, what checkpoints reported and verdicts; nothing hidden."""
    names = {a.name for a in attrs.fields(JobView)}
    assert names == {
        "job_id",
        "name",
        "tenant",
        "kind",
        "gpus",
        "submit_time",
        "estimated_duration",
        "eval_interval",
        "evals_done",
        "service",
        "running_since",
        "preemptions",
        "last_score",
        "first_loss",
        "previous_loss",
        "last_loss",
        "verdicts",
    }
    report_names = {a.name for a in attrs.fields(CheckpointView)}
    assert report_names == {
        "job_id",
        "kind",
        "index",
        "step",
        "time",
        "eval_score",
        "loss",
        "proxy_reward",
        "estimated_progress",
        "kl",
    }
    for cls in (JobView, CheckpointView, Verdict, ClusterView):
        assert not {a.name for a in attrs.fields(cls)} & HIDDEN_NAMES
    assert not HIDDEN_NAMES & {a.name for a in attrs.fields(JobSpec)}


def test_bnd1_views_are_slotted_and_frozen() -> None:
    """BND-1: nothing can be attached to a view after the fact."""
    view = make_job_view(make_job(1).spec)
    for cls in (JobView, CheckpointView, Verdict, ClusterView):
        assert "__slots__" in cls.__dict__
    assert not hasattr(view, "__dict__")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        view.job_id = 2  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        object.__setattr__(view, "truth", 1)


def test_bnd2_whitelist() -> None:
    """BND-2: the whitelist is a set of JobSpec fields, and exactly the JobView fields a
    first view takes from the spec (the rest have defaults: nothing observed yet)."""
    spec_fields = {a.name for a in attrs.fields(JobSpec)}
    assert set(OBSERVABLE_SPEC_FIELDS) <= spec_fields
    required = {a.name for a in attrs.fields(JobView) if a.default is attrs.NOTHING}
    assert required == set(OBSERVABLE_SPEC_FIELDS)


class SpyingSpec:
    """A spec-like object that records every attribute read."""

    def __init__(self, spec: JobSpec) -> None:
        self._spec = spec
        self.read: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.read.append(name)
        if name in HIDDEN_NAMES:
            raise AssertionError(f"make_job_view read hidden {name}")
        return getattr(self._spec, name)


def test_bnd2_make_job_view_reads_exactly_the_whitelist() -> None:
    """BND-2: make_job_view copies exactly the whitelisted fields (and reads nothing else)."""
    job = make_job(3, submit=4, gpus=2, estimate=77, kind=JobKind.DPO)
    spy = SpyingSpec(job.spec)
    view = make_job_view(spy)  # type: ignore[arg-type]
    assert sorted(spy.read) == sorted(OBSERVABLE_SPEC_FIELDS)
    for name in OBSERVABLE_SPEC_FIELDS:
        assert getattr(view, name) == getattr(job.spec, name)
    assert view == JobView(
        job_id=3,
        kind=JobKind.DPO,
        gpus=2,
        submit_time=4,
        estimated_duration=77,
        eval_interval=10,
        tenant="default",
        name=None,
    )


CORE = [f"core/{name}" for name in ("model", "boundary", "detectors", "gpus", "decision")]
CORE += [f"core/{name}" for name in ("policy", "policies", "wrapper", "registry")]
CORE += [f"engine/{name}" for name in ("events", "log", "queue", "state", "step", "simulator")]


def copies_from_self(call: ast.Call) -> bool:
    """Whether a ``JobView(...)`` call takes every whitelisted field from ``self``."""
    taken = {
        keyword.arg
        for keyword in call.keywords
        if isinstance(keyword.value, ast.Attribute)
        and isinstance(keyword.value.value, ast.Name)
        and keyword.value.value.id == "self"
        and keyword.value.attr == keyword.arg
    }
    return set(OBSERVABLE_SPEC_FIELDS) <= taken


def test_bnd2_no_other_function_builds_a_first_view() -> None:
    """BND-2: in the core, only boundary.make_job_view builds a view from a spec. Any other
    JobView(...) call is a JobView method that derives a view from an existing one (every
    whitelisted field copied from ``self``, e.g. JobView.after_checkpoint)."""
    package = Path(evalstop.__file__).parent
    first_views: list[str] = []
    derived: list[str] = []
    for name in CORE:
        tree = ast.parse((package / f"{name}.py").read_text(encoding="utf-8"))
        scopes: list[tuple[str, ast.FunctionDef]] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                scopes.append(("", node))
            elif isinstance(node, ast.ClassDef):
                scopes.extend(
                    (node.name, item) for item in node.body if isinstance(item, ast.FunctionDef)
                )
        for owner, function in scopes:
            for call in ast.walk(function):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == "JobView"
                ):
                    continue
                where = f"{name}.{owner + '.' if owner else ''}{function.name}"
                if owner == "JobView" and copies_from_self(call):
                    derived.append(where)
                else:
                    first_views.append(where)
    assert first_views == ["core/boundary.make_job_view"]
    assert all(where.startswith("core/boundary.JobView.") for where in derived)


def test_bnd2_engine_first_view_is_make_job_view() -> None:
    """BND-2: the view of a job that just arrived is make_job_view of its spec."""
    job = make_job(5, submit=3, gpus=2)
    sim = Simulator(fifo, 2)
    sim.submit(make_job(1, gpus=1))  # holds one of the two GPUs: job 5 must queue
    sim.submit(job)
    while sim.state.time < 3 or 5 not in sim.state.active:
        sim.advance()
    assert sim.state.active[5].view == make_job_view(job.spec)


def test_bnd3_cluster_views_reach_no_hidden_truth(
    captured: tuple[list[ClusterView], list[CheckpointView], list[Job]],
) -> None:
    """BND-3: walking the gc referents of every ClusterView a policy received in real runs
    reaches no Job, JobTruth, array, callable, hidden field name or hidden value."""
    views, _, jobs = captured
    for view in views:
        assert_no_hidden(view, jobs)


def test_bnd3_checkpoint_views_reach_no_hidden_truth(
    captured: tuple[list[ClusterView], list[CheckpointView], list[Job]],
) -> None:
    """BND-3: the same for every CheckpointView a detector received."""
    _, reports, jobs = captured
    for report in reports:
        assert_no_hidden(report, jobs)


def flatten(value: object) -> Iterator[object]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from flatten(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from flatten(item)
    else:
        yield value


def test_bnd3_asdict_exposes_no_hidden_field(
    captured: tuple[list[ClusterView], list[CheckpointView], list[Job]],
) -> None:
    """BND-3: attrs.asdict of the views has no hidden key and no hidden value."""
    views, reports, jobs = captured
    hidden_values: set[object] = {job.truth.total_steps for job in jobs}
    hidden_values |= {job.truth.duration for job in jobs}
    hidden_values |= {job.truth.peak_fraction for job in jobs}
    hidden_values |= {float(q) for job in jobs for q in job.truth.quality}
    values: list[ClusterView | CheckpointView] = [*views, *reports]
    for value in values:
        for item in flatten(attrs.asdict(value, recurse=True)):
            assert item not in HIDDEN_NAMES
            if not isinstance(item, bool):
                assert item not in hidden_values


def test_bnd3_attribute_access_finds_no_hidden_field(
    captured: tuple[list[ClusterView], list[CheckpointView], list[Job]],
) -> None:
    """BND-3: no hidden name is an attribute of any view, verdict or report (dir included)."""
    views, reports, _ = captured
    objects: list[object] = [*views, *reports]
    for view in views:
        objects.extend([*view.queued, *view.running])
        objects.extend(v for job in (*view.queued, *view.running) for v in job.verdicts)
    for obj in objects:
        assert not HIDDEN_NAMES & set(dir(obj))
        for name in HIDDEN_NAMES:
            assert not hasattr(obj, name)


def test_bnd3_the_walk_would_find_a_leak(
    captured: tuple[list[ClusterView], list[CheckpointView], list[Job]],
) -> None:
    """BND-3: (control) the walk does find truth when a value does hold it."""
    views, _, jobs = captured
    with pytest.raises(AssertionError, match="Job"):
        assert_no_hidden((views[0], (1, jobs[0])), jobs)
    with pytest.raises(AssertionError, match="JobTruth"):
        assert_no_hidden((views[0], jobs[0].truth), jobs)
    with pytest.raises(AssertionError, match="hidden int"):
        assert_no_hidden((views[0], jobs[0].truth.duration), jobs)
    closure_over = jobs[0]
    with pytest.raises(AssertionError, match="callable"):
        assert_no_hidden((views[0], lambda: closure_over), jobs)


HIDDEN = st.tuples(
    st.integers(1, 10**6),
    st.booleans(),
    st.lists(st.floats(-5, 5), min_size=4, max_size=4),
    st.floats(0, 3),
)


@given(first=HIDDEN, second=HIDDEN, base=st.sampled_from(sorted(BASE_POLICIES)))
def test_bnd4_equal_histories_get_equal_views_and_decisions(
    first: tuple[int, bool, list[float], float],
    second: tuple[int, bool, list[float], float],
    base: str,
) -> None:
    """BND-4: two workloads that differ only in hidden truth show the policy identical views
    at every decision and so get identical decisions and logs."""
    detector: Detector[Any] = DeclineDetector(2)
    logs, seen = [], []
    for total_steps, hacking, quality, peak in (first, second):
        jobs = [
            with_hidden_truth(
                make_job(i, submit=2 * i, scores=scores, gpus=1 + i % 2, estimate=15 + 10 * i),
                total_steps=total_steps + i,
                hacking=hacking,
                quality=quality[: len(scores)],
                peak_fraction=peak,
            )
            for i, scores in enumerate([[0.5, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4], [0.2, 0.1]])
        ]
        recorder = Recorder(wrap(wrap(BASE_POLICIES[base], detector), StopAtProgress(0.9)))
        logs.append(simulate(recorder, jobs, total_gpus=2).log)
        seen.append(recorder.views)
    assert seen[0] == seen[1]
    assert logs[0] == logs[1]


def test_bnd1_estimates_derive_from_the_estimate_and_the_service_only() -> None:
    """BND-1: the estimated remaining time and progress come from the user's estimate and the
    service received: remaining = max(0, estimate - service), progress = min(1, service /
    estimate), counting the current run segment up to ``now``."""
    queued = job_view(1, estimate=100, service=30)
    assert (queued.estimated_remaining(500), queued.estimated_progress(500)) == (70, 0.3)
    running = job_view(2, estimate=80, service=20, running_since=100)
    assert running.estimated_remaining(120) == 40
    assert running.estimated_progress(120) == 0.5
    assert running.estimated_remaining(90) == 60  # no negative segment before it started
    overrun = job_view(3, estimate=50, service=40, running_since=0)
    assert overrun.estimated_remaining(30) == 0
    assert overrun.estimated_progress(30) == 1.0
    assert (overrun.estimated_remaining(5), overrun.estimated_progress(5)) == (5, 0.9)


def test_evs5_eng13_without_running_drops_the_stopped_jobs_everywhere() -> None:
    """EVS-5, ENG-13: the view a base policy gets without the stopped jobs frees their GPUs,
    keeps the cause and the changed views of the jobs still there, and an unknown changed set
    (None) stays unknown; dropping nothing is the same view."""
    one, two, three = (job_view(i, running_since=0) for i in (1, 2, 3))
    view = attrs.evolve(
        cluster_view(total=4, running=[one, two, three], queued=[job_view(4)]),
        cause=EventKind.CHECKPOINT,
        changed=(two, one),
    )
    without = view.without_running([1, 9])
    assert without == ClusterView(
        time=view.time,
        total_gpus=4,
        free_gpus=2,
        queued=view.queued,
        running=(two, three),
        cause=EventKind.CHECKPOINT,
        changed=(two,),
    )
    assert attrs.evolve(view, changed=None).without_running([1]).changed is None
    assert view.without_running([]) is view


@given(
    scores=st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=8),
    estimate=st.integers(1, 200),
    hacking=st.booleans(),
    time=st.integers(0, 10**6),
)
def test_bnd5_checkpoint_report_carries_the_observation_and_the_estimated_progress(
    scores: list[float], estimate: int, hacking: bool, time: int
) -> None:
    """BND-5: checkpoint i's report holds its observation's step and scores, the given time
    and service(i) / estimated duration capped at 1; the hidden truth changes nothing in it."""
    job = make_job(1, scores=scores, estimate=estimate, hacking=hacking)
    other = with_hidden_truth(job, hacking=not hacking, quality=[0.0] * len(scores))
    for index, obs in enumerate(job.observations, start=1):
        report = checkpoint_report(job, index, time)
        progress = min(1.0, job.checkpoint_service(index) / estimate)
        assert (report.job_id, report.kind, report.index, report.time) == (
            1,
            job.spec.kind,
            index,
            time,
        )
        assert (report.step, report.eval_score, report.loss, report.proxy_reward) == (
            obs.step,
            obs.eval_score,
            obs.loss,
            obs.proxy_reward,
        )
        assert report.estimated_progress == progress
        assert checkpoint_report(other, index, time) == report


_maybe_float = st.none() | st.floats(allow_nan=True, allow_infinity=True)
_verdicts = st.lists(
    st.builds(
        Verdict,
        detector=st.text(max_size=5),
        fired=st.booleans(),
        fired_step=st.none() | st.integers(0, 10**9),
        evals=st.integers(0, 10**6),
        best_step=st.none() | st.integers(0, 10**9),
        best_score=_maybe_float,
    ),
    max_size=3,
).map(tuple)


@given(
    st.tuples(
        st.integers(0, 2**40),
        st.sampled_from(JobKind),
        st.integers(1, 4096),
        st.integers(0, 10**9),
        st.integers(1, 10**9),
        st.integers(1, 10**6),
        st.text(max_size=8),
        st.none() | st.text(max_size=8),
        st.integers(0, 10**4),
        st.integers(0, 10**9),
        st.none() | st.integers(0, 10**9),
        st.integers(0, 10**4),
        _maybe_float,
        _maybe_float,
        _maybe_float,
        _maybe_float,
        _verdicts,
    )
)
def test_bnd6_trusted_view_equals_the_public_constructor(fields: tuple[Any, ...]) -> None:
    """BND-6: trusted_job_view gives the JobView the public constructor gives for every field
    drawn (compared by repr, so NaN and the sign of zero count, and by ==, hash and type);
    still frozen."""
    made, public = trusted_job_view(*fields), JobView(*fields)
    assert type(made) is JobView
    assert repr(made) == repr(public)
    assert [type(value) for value in attrs.astuple(made, recurse=False)] == [
        type(value) for value in fields
    ]
    if not any(isinstance(x, float) and math.isnan(x) for x in fields):  # NaN != NaN
        assert made == public and hash(made) == hash(public)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.service = 1  # type: ignore[misc]


@given(
    st.tuples(
        st.text(max_size=8),
        st.booleans(),
        st.none() | st.integers(0, 10**12),
        st.integers(0, 10**6),
        st.none() | st.integers(0, 10**12),
        _maybe_float,
    )
)
def test_bnd6_trusted_verdict_equals_the_public_constructor(fields: tuple[Any, ...]) -> None:
    """BND-6: trusted_verdict gives the Verdict the public constructor gives (by repr, so NaN
    and the sign of zero count, and by ==, hash and type); still frozen."""
    made, public = trusted_verdict(*fields), Verdict(*fields)
    assert type(made) is Verdict and repr(made) == repr(public)
    if not (isinstance(fields[-1], float) and math.isnan(fields[-1])):  # NaN != NaN
        assert made == public and hash(made) == hash(public)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.evals = 1  # type: ignore[misc]


_A_VIEW_S_FIELDS = attrs.astuple(job_view(1), recurse=False)


@pytest.mark.parametrize(
    ("cls", "trusted", "twin", "sample"),
    [
        (JobView, trusted_job_view, boundary._Filling, attrs.astuple(job_view(1), recurse=False)),
        (
            Verdict,
            trusted_verdict,
            boundary._VerdictFilling,
            attrs.astuple(job_view(1), recurse=False),
        ),
        (Decision, trusted_decision, decision_module._DecisionFilling, ((), (), ())),
        (StopOrder, trusted_stop_order, decision_module._StopFilling, (1, "x", None, None)),
    ],
)
def test_bnd6_a_trusted_constructor_skips_nothing(
    cls: type, trusted: Callable[..., object], twin: type, sample: tuple[Any, ...]
) -> None:
    """BND-6: no field of JobView, Verdict, Decision or StopOrder has a validator, a
    converter or a factory default, and no such class has __attrs_post_init__: attrs'
    __init__ only stores what it is given, as the trusted constructors do (a check added
    later would fail this test, not be skipped); the mutable twin each fills has the class's
    slots, which are its fields (no __weakref__), and the constructor's parameters are the
    fields, in order."""
    for field in attrs.fields(cls):
        assert field.validator is None and field.converter is None, field.name
        assert not isinstance(field.default, attrs.Factory), field.name  # type: ignore[arg-type]
    assert not hasattr(cls, "__attrs_post_init__")
    assert not hasattr(cls, "__attrs_pre_init__")
    names = [field.name for field in attrs.fields(cls)]
    assert names == list(inspect.signature(trusted).parameters)
    assert list(vars(cls)["__slots__"]) == names
    assert list(vars(twin)["__slots__"]) == sorted(names)  # CPython lays slots out sorted
    with pytest.raises(TypeError):
        weakref.ref(trusted(*sample[: len(names)]))
