"""Pure GPU arithmetic: allocation, release and first-fit packing.

These functions carry PEP 316 contracts that ``nox -s crosshair`` checks symbolically
(spec ``ENG-3``, ``ENG-6``, ``POL-2``). They hold no state: the engine owns the counts.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["allocate", "first_fit", "release"]


def allocate(free: int, demand: int) -> int:
    """Free GPUs after granting ``demand`` of them (gang allocation: all or nothing).

    pre: free >= 0
    pre: 0 < demand <= free
    post: __return__ == free - demand
    post: 0 <= __return__ < free

    Args:
        free: GPUs free now.
        demand: GPUs the job needs.

    Returns:
        The GPUs free afterwards.

    Raises:
        ValueError: ``demand`` is not in ``1..free``.
    """
    if not 0 < demand <= free:
        raise ValueError(f"cannot allocate {demand} GPUs with {free} free")
    return free - demand


def release(free: int, demand: int, total: int) -> int:
    """Free GPUs after a job holding ``demand`` GPUs gives them back.

    pre: 0 <= free
    pre: 0 < demand
    pre: free + demand <= total
    post: __return__ == free + demand
    post: free < __return__ <= total

    Args:
        free: GPUs free now.
        demand: GPUs the job held.
        total: GPUs in the cluster.

    Returns:
        The GPUs free afterwards.

    Raises:
        ValueError: the release would leave fewer than 0 or more than ``total`` free.
    """
    if demand <= 0 or free < 0 or free + demand > total:
        raise ValueError(f"cannot release {demand} GPUs: {free} free of {total}")
    return free + demand


def first_fit(demands: Sequence[int], free: int) -> list[int]:
    """Indices of ``demands`` to start, scanning in order and skipping what does not fit.

    This is backfilling without reservations: a job that does not fit never blocks a later
    one that does (spec ``POL-2``). O(n).

    pre: free >= 0
    pre: all(d > 0 for d in demands)
    post: sum(demands[i] for i in __return__) <= free
    post: __return__ == sorted(set(__return__))
    post: all(0 <= i < len(demands) for i in __return__)
    """
    chosen: list[int] = []
    left = free
    for index, demand in enumerate(demands):
        if demand <= left:
            chosen.append(index)
            left -= demand
    return chosen
