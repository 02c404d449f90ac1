"""``attrs`` validators shared by the simulator's configurations (``WorkloadConfig``,
``World``): one message for each kind of bad number, whichever class refuses it."""

from __future__ import annotations

import math

import attrs

__all__ = ["check_fraction", "check_non_negative", "check_positive"]


def check_fraction(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    """Refuse a value outside [0, 1] (NaN included) with ``ValueError``."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value!r}")


def check_positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    """Refuse a value that is not a finite number > 0 with ``ValueError``."""
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a positive number, got {value!r}")


def check_non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    """Refuse a value that is not a finite number >= 0 with ``ValueError``."""
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")
