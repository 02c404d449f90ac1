"""The fast engine with incremental policies against the pure engine, event by event.

:class:`FastAgainstStep` drives a :class:`FastSimulator` and a :class:`Simulator` (the pure
``step``, itself checked against a naive model in ``test_engine_stateful``) with the same jobs
under every built-in system, so the policies' ordered states (POL-6) are exercised, and
compares the whole state, the log and the pending events after every event (ENG-15), with the
log packed into columns every few rows (ENG-16) and the decline rule folded in the record
(ENG-17) under the evalstop systems, and the non-preemptive bases deciding from their own
per-demand heaps (POL-10). It also runs to random horizons, so the hot loop is compared as
often as the one-event path.
The other half of POL-6, one decision at a time, is in ``tests/core/test_ranking.py``.
"""

from __future__ import annotations

import math

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from builders import examples, make_job
from evalstop.core.detectors import DeclineDetector
from evalstop.core.model import JobKind
from evalstop.core.policies import fifo, las, sjf_est
from evalstop.core.policy import Policy
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.engine import Simulator
from evalstop.engine.fast import FastSimulator

TOTAL_GPUS = 6
MAX_JOBS = 14
SYSTEMS = [
    "fifo",
    "sjf-est",
    "srtf-est",
    "loss-aware",
    "las",
    "evalstop+fifo",
    "evalstop+sjf-est",
    "evalstop+srtf-est",
    "evalstop+loss-aware",
    "evalstop+las",
    "stopat-0.5+srtf-est",
    "lossplateau+las",
    "fair-share",
    "evalstop+fair-share",
    "evalstop(min_delta,warmup)+las",
    "evalstop(k=1,all kinds)+fifo",
    "evalstop(min_delta,warmup)+sjf-est",
    "noise-aware+fifo",
    "stopat-0.5+sjf-est",
    "lossplateau+fifo",
]
VALUE = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.just(math.nan))


@st.composite
def jobs(draw: st.DrawFn) -> tuple[int, int, JobKind, int, list[float], list[float], int]:
    """(delay, GPUs, kind, estimate, scores, losses, duration): small and often tied."""
    n = draw(st.integers(1, 5))
    return (
        draw(st.integers(0, 4)),
        draw(st.integers(1, TOTAL_GPUS)),
        draw(st.sampled_from([JobKind.RLHF, JobKind.RLHF, JobKind.DPO, JobKind.LORA])),
        draw(st.integers(1, 30)),
        draw(st.lists(VALUE, min_size=n, max_size=n)),
        draw(st.lists(VALUE, min_size=n, max_size=n)),
        draw(st.integers(n, 4 * n)),
    )


def build(system: str) -> Policy:
    """The system by name; one more: the decline rule with a margin and a warm-up (DET-11),
    folded in the job record by the fast engine (ENG-17)."""
    if system == "evalstop(min_delta,warmup)+las":
        return evalstop(las, DeclineDetector(2, min_delta=0.5, warmup_steps=25))
    if system == "evalstop(min_delta,warmup)+sjf-est":
        return evalstop(sjf_est, DeclineDetector(2, min_delta=0.5, warmup_steps=25))
    if system == "evalstop(k=1,all kinds)+fifo":
        return evalstop(fifo, DeclineDetector(1), kinds=frozenset(JobKind))
    return make_policy(system)


class AgainstStep(RuleBasedStateMachine):
    """The rules and the comparison; the subclasses choose the engine and the systems."""

    def __init__(self) -> None:
        super().__init__()
        self.fast: FastSimulator | None = None
        self.pure: Simulator | None = None
        self.next_id = 0

    def start(self, engine: type[FastSimulator], system: str, overhead: int, chunk: int) -> None:
        self.fast = engine(build(system), TOTAL_GPUS, preemption_overhead=overhead)
        assert type(self.fast) is engine
        self.fast._writer.chunk = chunk  # pack the log every few rows, as a long run does
        self.pure = Simulator(build(system), TOTAL_GPUS, preemption_overhead=overhead)

    @property
    def pair(self) -> tuple[FastSimulator, Simulator]:
        assert self.fast is not None and self.pure is not None
        return self.fast, self.pure

    @precondition(lambda self: self.next_id < MAX_JOBS)
    @rule(shape=jobs())
    def submit(self, shape: tuple[int, int, JobKind, int, list[float], list[float], int]) -> None:
        fast, pure = self.pair
        delay, gpus, kind, estimate, scores, losses, duration = shape
        job = make_job(
            self.next_id,
            submit=pure.state.time + delay,
            gpus=gpus,
            scores=scores,
            losses=losses,
            duration=duration,
            estimate=estimate,
            kind=kind,
        )
        self.next_id += 1
        fast.submit(job)
        pure.submit(job)

    @rule(count=st.integers(1, 8))
    def advance(self, count: int) -> None:
        fast, pure = self.pair
        for _ in range(count):
            assert fast.advance() == pure.advance()
            self.same()

    @rule(ahead=st.integers(0, 40))
    def run_until(self, ahead: int) -> None:
        """Both to the same horizon: the fast engine through its hot loop (ENG-9)."""
        fast, pure = self.pair
        horizon = pure.state.time + ahead
        fast.run(horizon)
        pure.run(horizon)
        self.same()

    @rule()
    def drain(self) -> None:
        fast, pure = self.pair
        fast.run()
        pure.run()
        self.same()

    @invariant()
    def same(self) -> None:
        """ENG-15, ENG-16, ENG-17: equal state, log, pending events and event count (compared
        by repr, so that a NaN score equals itself)."""
        if self.fast is None or self.pure is None:
            return
        fast, pure = self.pair
        assert repr(fast.state) == repr(pure.state)
        assert repr(list(fast.log)) == repr(pure.log)
        assert fast.log == pure.log
        assert fast.pending == pure.pending
        assert fast.events_handled == pure.events_handled

    def teardown(self) -> None:
        if self.fast is not None:
            self.drain()


class FastAgainstStep(AgainstStep):
    """ENG-15, ENG-16, ENG-17: the generic fast engine under every built-in system."""

    @initialize(
        system=st.sampled_from(SYSTEMS),
        overhead=st.sampled_from([0, 3, 30]),
        chunk=st.sampled_from([1, 3, 1024]),
    )
    def setup(self, system: str, overhead: int, chunk: int) -> None:
        self.start(FastSimulator, system, overhead, chunk)


SETTINGS = settings(max_examples=examples(300), stateful_step_count=40)
TestFastAgainstStep = FastAgainstStep.TestCase
TestFastAgainstStep.settings = SETTINGS
