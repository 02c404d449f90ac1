"""The command line's one error type: bad user input, printed as one line with exit code 2."""

from __future__ import annotations

from evalstop.core.errors import EvalStopError

__all__ = ["CliError"]


class CliError(EvalStopError):
    """A problem with the user's input: printed as one line, exit code 2 (spec ``CLI-1``)."""
