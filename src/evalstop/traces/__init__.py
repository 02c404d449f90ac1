"""Training logs in, typed traces out: one metric of one run as steps and values.

``read_trace(path, metric)`` detects the file's format (a Hugging Face ``trainer_state.json``,
a W&B chart CSV, a generic CSV or JSONL, a checkpoint-map JSON, TensorBoard event files) or
takes a forced one, and returns a :class:`Trace`. Every bad input raises a
:class:`TraceError` whose message names the file and the problem (spec ``TRC``).
:func:`replay` runs a detector over a trace through the online monitor (spec ``RPL``).
"""

from __future__ import annotations

from evalstop.traces.detect import detect_format as detect_format
from evalstop.traces.errors import EmptyTraceError as EmptyTraceError
from evalstop.traces.errors import MalformedTraceError as MalformedTraceError
from evalstop.traces.errors import MetricNotFoundError as MetricNotFoundError
from evalstop.traces.errors import NoNumericValuesError as NoNumericValuesError
from evalstop.traces.errors import ReaderUnavailableError as ReaderUnavailableError
from evalstop.traces.errors import TraceError as TraceError
from evalstop.traces.errors import TraceOptionError as TraceOptionError
from evalstop.traces.errors import UnreadableTraceError as UnreadableTraceError
from evalstop.traces.model import Order as Order
from evalstop.traces.model import Trace as Trace
from evalstop.traces.model import TraceFormat as TraceFormat
from evalstop.traces.reader import read_trace as read_trace
from evalstop.traces.replay import ReplayResult as ReplayResult
from evalstop.traces.replay import replay as replay

__all__ = [
    "EmptyTraceError",
    "MalformedTraceError",
    "MetricNotFoundError",
    "NoNumericValuesError",
    "Order",
    "ReaderUnavailableError",
    "ReplayResult",
    "Trace",
    "TraceError",
    "TraceFormat",
    "TraceOptionError",
    "UnreadableTraceError",
    "detect_format",
    "read_trace",
    "replay",
]
