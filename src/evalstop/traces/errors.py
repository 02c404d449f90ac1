"""Typed errors for bad trace input: each message is one line, ``<path>: <problem>``.

Every error a reader raises for a bad file is a :class:`TraceError` (a ``ValueError``), so a
caller can catch one type and print one line (spec ``TRC-2``).
"""

from __future__ import annotations

from collections.abc import Iterable

from evalstop.core.errors import EvalStopError

__all__ = [
    "MAX_LISTED",
    "EmptyTraceError",
    "MalformedTraceError",
    "MetricNotFoundError",
    "NoNumericValuesError",
    "ReaderUnavailableError",
    "TraceError",
    "TraceOptionError",
    "UnreadableTraceError",
    "listing",
]


MAX_LISTED = 20
"""Names an error message lists before it says how many more there are."""


def listing(names: Iterable[str]) -> str:
    """``a, b, c`` -- at most :data:`MAX_LISTED` names, then ``... (N more)``."""
    items = list(names)
    shown = ", ".join(items[:MAX_LISTED]) if items else "none"
    more = len(items) - MAX_LISTED
    return f"{shown}, ... ({more} more)" if more > 0 else shown


def _one_line(text: str) -> str:
    """Whitespace runs as one space; other unprintable characters (escapes, lone
    surrogates) as Python escapes, so a message is one safe terminal line."""
    text = " ".join(text.split())
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class TraceError(EvalStopError, ValueError):
    """A trace file could not be turned into a trace.

    Attributes:
        path: the file (or directory) as given.
        problem: what is wrong with it, without the path.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = _one_line(problem)
        super().__init__(f"{_one_line(path)}: {self.problem}")


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
        super().__init__(path, f"{problem}; available metrics: {listing(self.available)}")


class NoNumericValuesError(TraceError):
    """The metric exists but has no finite numeric value."""


class ReaderUnavailableError(TraceError):
    """The format needs an optional dependency that is not installed."""


class TraceOptionError(TraceError):
    """A reader option does not apply to the file's format."""
