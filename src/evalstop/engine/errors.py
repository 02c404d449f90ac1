"""Errors of the engine: driven outside its contract, or given a decision it cannot apply."""

from __future__ import annotations

from evalstop.core.errors import EvalStopError

__all__ = ["EngineError", "InvalidDecisionError"]


class EngineError(EvalStopError, RuntimeError):
    """The engine was driven outside its contract (time going back, a job submitted twice)."""


class InvalidDecisionError(EngineError):
    """A policy returned a decision that cannot be applied (spec ``ENG-8``)."""
