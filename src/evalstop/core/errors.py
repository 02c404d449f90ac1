"""The project's error root: every error evalstop raises on purpose is an :class:`EvalStopError`.

Each subclass is also the builtin exception users already catch (the pattern of
``hypothesis.errors.InvalidArgument``), so ``except ValueError`` keeps working:

- :class:`UnknownNameError` (also ``KeyError`` and ``ValueError``): a policy or detector name
  that the registry does not know;
- ``evalstop.engine.EngineError`` (also ``RuntimeError``): a simulation that cannot go on;
- ``evalstop.traces.TraceError`` (also ``ValueError``): a training log that cannot be read.
"""

from __future__ import annotations

__all__ = ["EvalStopError", "UnknownNameError"]


class EvalStopError(Exception):
    """Root of every error evalstop raises on purpose."""


class UnknownNameError(EvalStopError, KeyError, ValueError):
    """A name (policy, detector, ...) that is not registered; the message lists the choices."""

    def __str__(self) -> str:
        # KeyError would print the message with quotes around it.
        return str(self.args[0]) if self.args else ""
