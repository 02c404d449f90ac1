"""Synthetic worlds and how they are measured: the researchers' tier (spec ``ARC-5``).

The job model with its hidden truth, workloads drawn in a world or read from a job table or a
cluster trace, :func:`simulate`, and the metrics. This layer alone may read a job's hidden
truth (in :mod:`~evalstop.sim.metrics` and :mod:`~evalstop.sim.detection`); it imports the core
and the engine. Policies, detectors and the errors are the root's (``evalstop``); the engine's
state and step are :mod:`evalstop.engine`'s.
"""

from evalstop.core.model import Job as Job
from evalstop.core.model import JobSpec as JobSpec
from evalstop.core.model import JobTruth as JobTruth
from evalstop.core.model import Observation as Observation
from evalstop.sim.attach import AttachRule as AttachRule
from evalstop.sim.attach import TableWorkload as TableWorkload
from evalstop.sim.attach import workload_from_records as workload_from_records
from evalstop.sim.detection import DetectionMetrics as DetectionMetrics
from evalstop.sim.detection import detection_metrics as detection_metrics
from evalstop.sim.metrics import JctStats as JctStats
from evalstop.sim.metrics import JobOutcome as JobOutcome
from evalstop.sim.metrics import SystemMetrics as SystemMetrics
from evalstop.sim.metrics import job_outcomes as job_outcomes
from evalstop.sim.metrics import system_metrics as system_metrics
from evalstop.sim.philly import TraceSpec as TraceSpec
from evalstop.sim.philly import trace_workload as trace_workload
from evalstop.sim.run import Cluster as Cluster
from evalstop.sim.run import Result as Result
from evalstop.sim.run import simulate as simulate
from evalstop.sim.summary import summarize as summarize
from evalstop.sim.tables import JobRecord as JobRecord
from evalstop.sim.tables import JobTable as JobTable
from evalstop.sim.tables import read_job_table as read_job_table
from evalstop.sim.workload import Workload as Workload
from evalstop.sim.workload import WorkloadConfig as WorkloadConfig
from evalstop.sim.workload import generate as generate
from evalstop.sim.worlds import CALIBRATED as CALIBRATED
from evalstop.sim.worlds import PAPER as PAPER
from evalstop.sim.worlds import WORLDS as WORLDS
from evalstop.sim.worlds import World as World
from evalstop.sim.worlds import world_named as world_named

__all__ = [
    "CALIBRATED",
    "PAPER",
    "WORLDS",
    "AttachRule",
    "Cluster",
    "DetectionMetrics",
    "JctStats",
    "Job",
    "JobOutcome",
    "JobRecord",
    "JobSpec",
    "JobTable",
    "JobTruth",
    "Observation",
    "Result",
    "SystemMetrics",
    "TableWorkload",
    "TraceSpec",
    "Workload",
    "WorkloadConfig",
    "World",
    "detection_metrics",
    "generate",
    "job_outcomes",
    "read_job_table",
    "simulate",
    "summarize",
    "system_metrics",
    "trace_workload",
    "workload_from_records",
    "world_named",
]
