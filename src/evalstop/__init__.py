"""evalstop: schedule RLHF fine-tuning jobs and stop the ones that are reward hacking.

The public API, re-exported from the modules that define it:

- model and boundary: :class:`Job`, :class:`JobSpec`, :class:`JobTruth`, :class:`JobView`,
  :class:`ClusterView`, :func:`make_job_view`;
- detectors: :class:`DeclineDetector` (EvalStop's rule), :class:`StopAtProgress`,
  :class:`LossPlateau`, :class:`Never`, and the fold :func:`observe`;
- policies: :data:`fifo`, :data:`sjf_est`, :data:`srtf_est`, :data:`loss_aware`, :data:`las`
  and the wrapper :func:`evalstop`;
- real systems: :class:`Monitor` (online verdicts, JSON state), :func:`read_trace` and
  :func:`replay` (recorded training logs);
- simulation: :func:`generate`, :func:`simulate`, :func:`job_outcomes`,
  :func:`system_metrics`, :func:`detection_metrics`.
"""

from evalstop.boundary import CheckpointView as CheckpointView
from evalstop.boundary import ClusterView as ClusterView
from evalstop.boundary import JobView as JobView
from evalstop.boundary import Verdict as Verdict
from evalstop.boundary import make_job_view as make_job_view
from evalstop.decision import Decision as Decision
from evalstop.decision import StopOrder as StopOrder
from evalstop.detection import DetectionMetrics as DetectionMetrics
from evalstop.detection import detection_metrics as detection_metrics
from evalstop.detectors import DeclineDetector as DeclineDetector
from evalstop.detectors import Detector as Detector
from evalstop.detectors import LossPlateau as LossPlateau
from evalstop.detectors import Never as Never
from evalstop.detectors import StopAtProgress as StopAtProgress
from evalstop.detectors import Watch as Watch
from evalstop.detectors import observe as observe
from evalstop.detectors import start_watch as start_watch
from evalstop.detectors import verdict_of as verdict_of
from evalstop.engine import EngineError as EngineError
from evalstop.engine import InvalidDecisionError as InvalidDecisionError
from evalstop.engine import Simulator as Simulator
from evalstop.metrics import JobOutcome as JobOutcome
from evalstop.metrics import SystemMetrics as SystemMetrics
from evalstop.metrics import job_outcomes as job_outcomes
from evalstop.metrics import system_metrics as system_metrics
from evalstop.model import Job as Job
from evalstop.model import JobKind as JobKind
from evalstop.model import JobSpec as JobSpec
from evalstop.model import JobTruth as JobTruth
from evalstop.model import Observation as Observation
from evalstop.monitor import Continue as Continue
from evalstop.monitor import Monitor as Monitor
from evalstop.monitor import Stop as Stop
from evalstop.policies import Policy as Policy
from evalstop.policies import PriorityPolicy as PriorityPolicy
from evalstop.policies import base_policy as base_policy
from evalstop.policies import fifo as fifo
from evalstop.policies import las as las
from evalstop.policies import loss_aware as loss_aware
from evalstop.policies import sjf_est as sjf_est
from evalstop.policies import srtf_est as srtf_est
from evalstop.simulate import Cluster as Cluster
from evalstop.simulate import Result as Result
from evalstop.simulate import simulate as simulate
from evalstop.systems import make_policy as make_policy
from evalstop.traces import Trace as Trace
from evalstop.traces import TraceError as TraceError
from evalstop.traces import read_trace as read_trace
from evalstop.traces import replay as replay
from evalstop.workload import Workload as Workload
from evalstop.workload import WorkloadConfig as WorkloadConfig
from evalstop.workload import generate as generate
from evalstop.wrapper import EvalStop as EvalStop
from evalstop.wrapper import evalstop as evalstop

__version__ = "0.1.0"

__all__ = [
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
    "InvalidDecisionError",
    "Job",
    "JobKind",
    "JobOutcome",
    "JobSpec",
    "JobTruth",
    "JobView",
    "LossPlateau",
    "Monitor",
    "Never",
    "Observation",
    "Policy",
    "PriorityPolicy",
    "Result",
    "Simulator",
    "Stop",
    "StopAtProgress",
    "StopOrder",
    "SystemMetrics",
    "Trace",
    "TraceError",
    "Verdict",
    "Watch",
    "Workload",
    "WorkloadConfig",
    "base_policy",
    "detection_metrics",
    "evalstop",
    "fifo",
    "generate",
    "job_outcomes",
    "las",
    "loss_aware",
    "make_job_view",
    "make_policy",
    "observe",
    "read_trace",
    "replay",
    "simulate",
    "sjf_est",
    "srtf_est",
    "start_watch",
    "system_metrics",
    "verdict_of",
]
