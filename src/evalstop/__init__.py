"""evalstop: schedule RLHF fine-tuning jobs and stop the ones that are reward hacking.

Layout (each layer imports only the layers above it; ``tests/repo/test_layers.py`` checks it):

- ``core/``: pure values and rules: the job model, the information boundary, decisions, GPU
  packing, detectors, the policy contract and built-in bases, the EvalStop wrapper, the name
  registry, the error root. No I/O, no clock, no global randomness.
- ``engine/``: the discrete-event engine: a pure ``step`` and the ``Simulator`` driving it.
- ``sim/``: synthetic worlds (curves, workloads), running them, and the metrics that alone may
  read the hidden truth.
- ``live/``: the online ``Monitor`` and its JSON state.  ``traces/``: reading training logs
  and replaying them.  ``adapters/``: Ray Tune, Hugging Face, Optuna, Lightning.
- ``watch/``: the ``evalstop watch`` sidecar (runs, their sources, the state file, actions),
  above ``live`` and ``traces``.
- ``experiments/``: the paper's experiments, the scoreboard (its gym track reads ``gym``),
  tables and plots.  ``gym/``: real policy-gradient
  runs against a fitted proxy, with their exact gold truth (imports ``core`` only).
  ``cli/``: the ``evalstop`` command.

Everything a user needs is re-exported here: ``from evalstop import ...``.
"""

from evalstop._version import __version__ as __version__
from evalstop.core.boundary import CheckpointView as CheckpointView
from evalstop.core.boundary import ClusterView as ClusterView
from evalstop.core.boundary import EventKind as EventKind
from evalstop.core.boundary import JobView as JobView
from evalstop.core.boundary import Verdict as Verdict
from evalstop.core.decision import Decision as Decision
from evalstop.core.decision import StopOrder as StopOrder
from evalstop.core.detectors import DeclineDetector as DeclineDetector
from evalstop.core.detectors import Detector as Detector
from evalstop.core.detectors import LossPlateau as LossPlateau
from evalstop.core.detectors import Never as Never
from evalstop.core.detectors import StopAtProgress as StopAtProgress
from evalstop.core.errors import EvalStopError as EvalStopError
from evalstop.core.errors import UnknownNameError as UnknownNameError
from evalstop.core.fairshare import FairShare as FairShare
from evalstop.core.fairshare import fair_share as fair_share
from evalstop.core.model import Job as Job
from evalstop.core.model import JobKind as JobKind
from evalstop.core.model import JobSpec as JobSpec
from evalstop.core.model import JobTruth as JobTruth
from evalstop.core.model import Observation as Observation
from evalstop.core.noise_aware import NoiseAwareDetector as NoiseAwareDetector
from evalstop.core.policies import PriorityPolicy as PriorityPolicy
from evalstop.core.policies import fifo as fifo
from evalstop.core.policies import las as las
from evalstop.core.policies import loss_aware as loss_aware
from evalstop.core.policies import sjf_est as sjf_est
from evalstop.core.policies import srtf_est as srtf_est
from evalstop.core.policy import Policy as Policy
from evalstop.core.registry import base_policy as base_policy
from evalstop.core.registry import make_policy as make_policy
from evalstop.core.wrapper import EvalStop as EvalStop
from evalstop.core.wrapper import evalstop as evalstop
from evalstop.engine import EngineError as EngineError
from evalstop.engine import InvalidDecisionError as InvalidDecisionError
from evalstop.engine import Simulator as Simulator
from evalstop.engine.log import LogKind as LogKind
from evalstop.engine.log import LogRecord as LogRecord
from evalstop.live.monitor import Continue as Continue
from evalstop.live.monitor import Monitor as Monitor
from evalstop.live.monitor import Stop as Stop
from evalstop.sim.attach import AttachRule as AttachRule
from evalstop.sim.attach import TableWorkload as TableWorkload
from evalstop.sim.attach import workload_from_records as workload_from_records
from evalstop.sim.detection import DetectionMetrics as DetectionMetrics
from evalstop.sim.detection import detection_metrics as detection_metrics
from evalstop.sim.metrics import JobOutcome as JobOutcome
from evalstop.sim.metrics import SystemMetrics as SystemMetrics
from evalstop.sim.metrics import job_outcomes as job_outcomes
from evalstop.sim.metrics import system_metrics as system_metrics
from evalstop.sim.run import Cluster as Cluster
from evalstop.sim.run import Result as Result
from evalstop.sim.run import simulate as simulate
from evalstop.sim.tables import JobRecord as JobRecord
from evalstop.sim.tables import JobTable as JobTable
from evalstop.sim.tables import TableError as TableError
from evalstop.sim.tables import read_job_table as read_job_table
from evalstop.sim.workload import Workload as Workload
from evalstop.sim.workload import WorkloadConfig as WorkloadConfig
from evalstop.sim.workload import generate as generate
from evalstop.traces import Trace as Trace
from evalstop.traces import TraceError as TraceError
from evalstop.traces import read_trace as read_trace
from evalstop.traces import replay as replay

__all__ = [
    "AttachRule",
    "CheckpointView",
    "Cluster",
    "ClusterView",
    "Continue",
    "Decision",
    "DeclineDetector",
    "DetectionMetrics",
    "Detector",
    "EngineError",
    "EvalStop",
    "EvalStopError",
    "EventKind",
    "FairShare",
    "InvalidDecisionError",
    "Job",
    "JobKind",
    "JobOutcome",
    "JobRecord",
    "JobSpec",
    "JobTable",
    "JobTruth",
    "JobView",
    "LogKind",
    "LogRecord",
    "LossPlateau",
    "Monitor",
    "Never",
    "NoiseAwareDetector",
    "Observation",
    "Policy",
    "PriorityPolicy",
    "Result",
    "Simulator",
    "Stop",
    "StopAtProgress",
    "StopOrder",
    "SystemMetrics",
    "TableError",
    "TableWorkload",
    "Trace",
    "TraceError",
    "UnknownNameError",
    "Verdict",
    "Workload",
    "WorkloadConfig",
    "base_policy",
    "detection_metrics",
    "evalstop",
    "fair_share",
    "fifo",
    "generate",
    "job_outcomes",
    "las",
    "loss_aware",
    "make_policy",
    "read_job_table",
    "read_trace",
    "replay",
    "simulate",
    "sjf_est",
    "srtf_est",
    "system_metrics",
    "workload_from_records",
]
