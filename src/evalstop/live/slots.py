"""A verdict built by setting its slots, for the monitor's fast path (spec ``MON-14``).

attrs' ``__init__`` of a frozen slotted class sets each field through ``object.__setattr__``;
setting the slots through their member descriptors builds the same value in about two thirds
of the time, provided the class has no default, validator, converter or post-init hook (the
monitor's tests check that ``Continue`` has none). Internal to :mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["slot_builder"]

T = TypeVar("T")


def slot_builder(cls: type[T]) -> Callable[[Any, Any, Any, Any, Any, Any], T]:
    """The function ``build(a, b, c, d, e, f)`` that returns ``cls(a, b, c, d, e, f)`` with
    its six slots set directly (``cls``: a slotted attrs class of six fields, in order)."""
    new = object.__new__
    setters = [getattr(cls, field.name).__set__ for field in attrs.fields(cls)]  # type: ignore[arg-type]
    if len(setters) != 6:
        raise ValueError(f"{cls.__name__} has {len(setters)} fields, not 6")
    set_a, set_b, set_c, set_d, set_e, set_f = setters

    def build(a: Any, b: Any, c: Any, d: Any, e: Any, f: Any) -> T:
        value: T = new(cls)
        set_a(value, a)
        set_b(value, b)
        set_c(value, c)
        set_d(value, d)
        set_e(value, e)
        set_f(value, f)
        return value

    return build
