"""``attrs`` validators of the simulator's configurations (``WorkloadConfig``, ``World``):
one message for each kind of bad value, whichever class refuses it."""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from evalstop.core.model import JobKind

__all__ = [
    "check_fraction",
    "check_mix",
    "check_non_negative",
    "check_optional_count",
    "check_optional_non_negative",
    "check_optional_positive",
    "check_positive",
]


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


def check_optional_positive(
    _inst: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    """Refuse a value that is neither None nor a finite number > 0 with ``ValueError``."""
    if value is not None and not (
        isinstance(value, float | int) and value > 0 and math.isfinite(value)
    ):
        raise ValueError(f"{attribute.name} must be a positive number or None, got {value!r}")


def check_optional_non_negative(
    _inst: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    """Refuse a value that is neither None nor a finite number >= 0 with ``ValueError``."""
    if value is not None and not (
        isinstance(value, float | int) and value >= 0 and math.isfinite(value)
    ):
        raise ValueError(f"{attribute.name} must be >= 0 or None, got {value!r}")


def check_optional_count(
    _inst: object, attribute: attrs.Attribute[int | None], value: object
) -> None:
    """Refuse a value that is neither None nor an integer >= 1 with ``ValueError``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} must be an integer >= 1 or None, got {value!r}")


def check_mix(
    _inst: object, attribute: attrs.Attribute[Mapping[JobKind, float]], value: object
) -> None:
    """Refuse anything but a non-empty mapping of job kinds to finite shares >= 0 with a
    positive sum, with ``ValueError``."""
    if (
        not isinstance(value, Mapping)
        or not value
        or any(not isinstance(k, JobKind) for k in value)
    ):
        raise ValueError(f"{attribute.name} must map job kinds to shares, got {value!r}")
    shares = list(value.values())
    if any(not (s >= 0 and math.isfinite(s)) for s in shares) or not sum(shares) > 0:
        raise ValueError(f"{attribute.name} shares must be >= 0 with a positive sum: {value!r}")
