"""Typed errors for bad trace input: each message is one line, ``<path>: <problem>``.

Every error a reader raises for a bad file is a :class:`TraceError` (a ``ValueError``), so a
caller can catch one type and print one line (spec ``TRC-2``).
"""

from __future__ import annotations

from collections.abc import Iterable

from evalstop.core.errors import EvalStopError

__all__ = [
    "EmptyTraceError",
    "MalformedTraceError",
    "MetricNotFoundError",
    "NoNumericValuesError",
    "ReaderUnavailableError",
    "TraceError",
    "TraceOptionError",
    "UnreadableTraceError",
]


class TraceError(EvalStopError, ValueError):
    """A trace file could not be turned into a trace.

    Attributes:
        path: the file (or directory) as given.
        problem: what is wrong with it, without the path.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = " ".join(problem.split())
        super().__init__(f"{path}: {self.problem}")


class UnreadableTraceError(TraceError):
    """The file does not exist, cannot be opened, or is not text where text is expected."""


class EmptyTraceError(TraceError):
    """The file holds no data (nothing, only a header, or no rows match the filter)."""


class MalformedTraceError(TraceError):
    """The file's content does not follow its format (bad JSON, ragged CSV, bad step...)."""


class MetricNotFoundError(TraceError):
    """The requested metric is not in the file, or none was requested and several exist.

    Attributes:
        available: the metrics the file does hold, sorted.
    """

    def __init__(self, path: str, problem: str, available: Iterable[str]) -> None:
        self.available = tuple(sorted(available))
        listing = ", ".join(self.available) if self.available else "none"
        super().__init__(path, f"{problem}; available metrics: {listing}")


class NoNumericValuesError(TraceError):
    """The metric exists but has no finite numeric value."""


class ReaderUnavailableError(TraceError):
    """The format needs an optional dependency that is not installed."""


class TraceOptionError(TraceError):
    """A reader option does not apply to the file's format."""
