"""The driver: an event queue, the current state and the log around the pure :func:`step`."""

from __future__ import annotations

from evalstop.core.boundary import EventKind
from evalstop.core.model import Job, JobId
from evalstop.core.policy import Policy, missing_policy_members
from evalstop.engine.errors import EngineError
from evalstop.engine.events import Event
from evalstop.engine.log import LogRecord
from evalstop.engine.queue import EventQueue
from evalstop.engine.state import Scenario, SimState, check_invariants, initial_state
from evalstop.engine.step import step

__all__ = ["Simulator", "check_policy"]


def check_policy(policy: object) -> None:
    """Raise ``TypeError`` unless ``policy`` has every member of the Policy protocol."""
    missing = missing_policy_members(policy)
    if missing:
        raise TypeError(
            f"policy {policy!r} does not implement the Policy protocol: missing "
            f"{', '.join(missing)} (a policy that cannot tell returns True from needs_decision)"
        )


class Simulator:
    """The driver: an event queue, the current state and the log.

    ``check=True`` asserts :func:`check_invariants` after every event (for tests; O(n) each).
    """

    def __init__(
        self,
        policy: Policy,
        total_gpus: int,
        *,
        preemption_overhead: int = 30,
        check: bool = False,
    ) -> None:
        check_policy(policy)
        self._jobs: dict[JobId, Job] = {}
        self.world = Scenario(self._jobs, policy, preemption_overhead)
        self.state = initial_state(total_gpus)
        self.queue = EventQueue()
        self.log: list[LogRecord] = []
        self.events_handled = 0
        self._check = check

    @property
    def pending(self) -> int:
        """How many events are pending (as ``FastSimulator.pending``)."""
        return len(self.queue)

    def submit(self, job: Job) -> None:
        """Register ``job`` and schedule its arrival at its submit time."""
        if job.job_id in self._jobs:
            raise EngineError(f"job {job.job_id} submitted twice")
        if job.spec.submit_time < self.state.time:
            raise EngineError(
                f"job {job.job_id} submitted at t={job.spec.submit_time}, "
                f"before the clock t={self.state.time}"
            )
        if job.spec.gpus > self.state.total_gpus:
            raise EngineError(
                f"job {job.job_id} needs {job.spec.gpus} GPUs; "
                f"the cluster has {self.state.total_gpus}"
            )
        self._jobs[job.job_id] = job
        self.queue.push(Event(job.spec.submit_time, EventKind.ARRIVAL, job.job_id))

    def advance(self) -> bool:
        """Handle the next event; False when the queue is empty.

        The event leaves the queue only once :func:`step` has succeeded, so an
        :class:`EngineError` (e.g. an invalid decision, ``ENG-8``) leaves the simulator as it was.
        """
        upcoming = self.queue.peek()
        if upcoming is None:
            return False
        transition = step(self.world, self.state, upcoming)
        self.queue.pop()
        self.state = transition.state
        for event in transition.events:
            self.queue.push(event)
        self.log.extend(transition.log)
        self.events_handled += 1
        if self._check:
            problems = check_invariants(self.state, self._jobs)
            if problems:
                raise EngineError("; ".join(problems))
        return True

    def run(self, horizon: int | None = None) -> SimState:
        """Handle events until the queue drains or the next event is after ``horizon``.

        When the queue drains, every arrived job has finished or been stopped (``ENG-9``);
        a policy that leaves jobs waiting on an idle cluster raises :class:`EngineError`.
        """
        while True:
            upcoming = self.queue.peek()
            if upcoming is None:
                break
            if horizon is not None and upcoming.time > horizon:
                return self.state
            self.advance()
        if self.state.active:
            stuck = sorted(self.state.active)[:5]
            raise EngineError(
                f"the queue drained with {len(self.state.active)} jobs never ended "
                f"(first: {stuck}); the policy left them waiting"
            )
        return self.state
