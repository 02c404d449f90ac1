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

Three public tiers, as trio and Hypothesis draw them; every public name is exported by exactly
one (``tests/repo/test_tiers.py``, spec ``ARC-5``):

- ``evalstop`` (this module), for embedders: the policy contract and the built-in bases, the
  views a policy and a detector see, decisions, detectors, ``evalstop()``, the ``Monitor``,
  reading and replaying traces, and the errors users catch;
- :mod:`evalstop.sim`, for researchers: the job model, workloads and worlds, ``simulate``,
  metrics, job tables;
- :mod:`evalstop.engine`, for the engine and its reference: the pure ``step``, its state, the
  simulators, the queue and the log.

The wings are packages of their own: ``evalstop.adapters`` (each module imports its framework),
``evalstop.watch`` and ``evalstop.gym``. Every other module is machinery: importable, but no
promise; its names are reached through a tier.
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
from evalstop.core.model import JobKind as JobKind
from evalstop.core.noise_aware import NoiseAwareDetector as NoiseAwareDetector
from evalstop.core.policies import PriorityPolicy as PriorityPolicy
from evalstop.core.policies import fifo as fifo
from evalstop.core.policies import las as las
from evalstop.core.policies import loss_aware as loss_aware
from evalstop.core.policies import sjf_est as sjf_est
from evalstop.core.policies import srtf_est as srtf_est
from evalstop.core.policy import Policy as Policy
from evalstop.core.registry import base_policy as base_policy
from evalstop.core.registry import make_detector as make_detector
from evalstop.core.registry import make_policy as make_policy
from evalstop.core.wrapper import EvalStop as EvalStop
from evalstop.core.wrapper import evalstop as evalstop
from evalstop.engine.errors import EngineError as EngineError
from evalstop.engine.errors import InvalidDecisionError as InvalidDecisionError
from evalstop.live.monitor import Continue as Continue
from evalstop.live.monitor import Monitor as Monitor
from evalstop.live.monitor import Reason as Reason
from evalstop.live.monitor import Stop as Stop
from evalstop.sim.tables import TableError as TableError
from evalstop.traces import ReplayResult as ReplayResult
from evalstop.traces import Trace as Trace
from evalstop.traces import TraceError as TraceError
from evalstop.traces import TraceFormat as TraceFormat
from evalstop.traces import read_trace as read_trace
from evalstop.traces import replay as replay

__all__ = [
    "CheckpointView",
    "ClusterView",
    "Continue",
    "Decision",
    "DeclineDetector",
    "Detector",
    "EngineError",
    "EvalStop",
    "EvalStopError",
    "EventKind",
    "FairShare",
    "InvalidDecisionError",
    "JobKind",
    "JobView",
    "LossPlateau",
    "Monitor",
    "Never",
    "NoiseAwareDetector",
    "Policy",
    "PriorityPolicy",
    "Reason",
    "ReplayResult",
    "Stop",
    "StopAtProgress",
    "StopOrder",
    "TableError",
    "Trace",
    "TraceError",
    "TraceFormat",
    "UnknownNameError",
    "Verdict",
    "base_policy",
    "evalstop",
    "fair_share",
    "fifo",
    "las",
    "loss_aware",
    "make_detector",
    "make_policy",
    "read_trace",
    "replay",
    "sjf_est",
    "srtf_est",
]

_MOVED = {
    **dict.fromkeys(
        (
            "AttachRule",
            "Cluster",
            "DetectionMetrics",
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
            "Workload",
            "WorkloadConfig",
            "detection_metrics",
            "generate",
            "job_outcomes",
            "read_job_table",
            "simulate",
            "system_metrics",
            "workload_from_records",
        ),
        "evalstop.sim",
    ),
    **dict.fromkeys(("LogKind", "LogRecord", "Simulator"), "evalstop.engine"),
}
"""Names the root exported before the tiers (0.x): each still works, with a warning."""


def __getattr__(name: str) -> object:
    """``evalstop.<name>`` of a name that moved to a tier: that object, with a warning."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'evalstop' has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(
        f"evalstop.{name} is deprecated: import it from {home} (from {home} import {name})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
