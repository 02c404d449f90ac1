"""A verdict built by setting its slots, for the monitor's fast path (spec ``MON-14``).

attrs' ``__init__`` of a frozen slotted class sets each field through ``object.__setattr__``;
setting the slots through their member descriptors builds the same value in about two thirds
of the time, provided the class has no default, validator, converter or post-init hook (the
monitor's tests check that ``Continue`` and ``Stop`` have none). Internal to
:mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

__all__ = ["slot_builder"]

T = TypeVar("T")


def slot_builder(cls: type[T]) -> Callable[..., T]:
    """The function ``build(a, b, ...)`` that returns ``cls(a, b, ...)`` with its slots set
    directly (``cls``: a slotted attrs class of six fields, like ``Continue``, or seven, like
    ``Stop``; the arguments are its fields, in order)."""
    new = object.__new__
    setters = [getattr(cls, field.name).__set__ for field in attrs.fields(cls)]  # type: ignore[arg-type]
    if len(setters) not in (6, 7):
        raise ValueError(f"{cls.__name__} has {len(setters)} fields, not 6 or 7")
    set_a, set_b, set_c, set_d, set_e, set_f, *more = setters

    def build(a: Any, b: Any, c: Any, d: Any, e: Any, f: Any) -> T:
        value: T = new(cls)
        set_a(value, a)
        set_b(value, b)
        set_c(value, c)
        set_d(value, d)
        set_e(value, e)
        set_f(value, f)
        return value

    if not more:
        return build
    set_g = more[0]

    def build7(a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any) -> T:
        value: T = new(cls)
        set_a(value, a)
        set_b(value, b)
        set_c(value, c)
        set_d(value, d)
        set_e(value, e)
        set_f(value, f)
        set_g(value, g)
        return value

    return build7
