"""Fair share between tenants: a base policy that reads each job's tenant (spec ``FSH``).

A shared cluster serves several teams (Philly's virtual clusters, a lab's groups). FIFO or SRTF
over all their jobs lets one team that submits a burst hold the whole cluster; a fair-share
policy divides it between tenants. :data:`fair_share` is max-min fairness on GPU counts
(Bertsekas & Gallager's max-min share, the per-tenant share of Gavel's and Themis' fairness
policies), first come first served inside a tenant:

- every active job (queued or running) is ranked by the GPUs that its tenant's *earlier*
  active jobs (in submit order, ties by id) already ask for, then by submit time and id;
- the ranking is packed first fit into the whole cluster, and a running job that falls out of
  the packing is preempted (as ``POL-3``).

Ranking by "what my tenant already holds" grows every tenant's allocation in lockstep: a
tenant asking for less than an equal share gets all it asks, the others split the rest
evenly, as far as whole jobs allow. With one tenant it is preemptive FIFO with backfilling.
It re-plans at arrivals and completions; a checkpoint changes no rank.
"""

from __future__ import annotations

from typing import Any

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.gpus import first_fit

__all__ = ["FairShare", "fair_share", "fair_share_ranking"]

_NOTHING = Decision()


def fair_share_ranking(jobs: tuple[JobView, ...]) -> list[JobView]:
    """``jobs`` in fair-share order: by GPUs the tenant's earlier jobs ask for, then submit
    time, then id (``FSH-1``)."""
    asked: dict[str, int] = {}
    keyed: list[tuple[int, int, int, JobView]] = []
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)):
        before = asked.get(job.tenant, 0)
        asked[job.tenant] = before + job.gpus
        keyed.append((before, job.submit_time, job.job_id, job))
    keyed.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in keyed]


@attrs.frozen(slots=True)
class FairShare:
    """Max-min fair share of the GPUs between tenants (module docstring); preemptive."""

    name: str = "fair-share"
    preemptive: bool = True

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        """Re-plan at arrivals and completions; a checkpoint changes no rank (``FSH-2``)."""
        return cause is not EventKind.CHECKPOINT

    def __call__(self, view: ClusterView) -> Decision:
        if not view.queued:
            return _NOTHING
        ranked = fair_share_ranking(view.queued + view.running)
        fits = first_fit([job.gpus for job in ranked], view.total_gpus)
        picked = {ranked[i].job_id for i in fits}
        queued = {job.job_id for job in view.queued}
        return Decision(
            start=tuple(
                job.job_id for job in ranked if job.job_id in picked and job.job_id in queued
            ),
            preempt=tuple(job.job_id for job in view.running if job.job_id not in picked),
        )


fair_share = FairShare()
"""The fair-share base policy, registered as ``fair-share``."""
