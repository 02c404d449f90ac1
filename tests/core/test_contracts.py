"""The PEP 316 contracts that CrossHair checks, exercised by Hypothesis in the normal test run.

Each contracted function's ``pre:`` and ``post:`` lines are read from its docstring and
evaluated, exactly as written, on Hypothesis examples; so the contracts are checked (on
examples) even when ``nox -s crosshair`` is not run, and a contract that stops parsing fails.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core import detectors
from evalstop.core import gpus as cluster
from evalstop.core.detectors import count_declines, improves
from evalstop.core.gpus import allocate, first_fit, release
from evalstop.engine import queue as event_queue
from evalstop.engine.queue import event_key, precedes

CONTRACTED: list[Callable[..., Any]] = [
    allocate,
    release,
    first_fit,
    count_declines,
    improves,
    event_key,
    precedes,
]


def conditions(function: Callable[..., Any]) -> tuple[list[str], list[str]]:
    """The ``pre:`` and ``post:`` expressions of ``function``'s docstring."""
    pres: list[str] = []
    posts: list[str] = []
    for line in (function.__doc__ or "").splitlines():
        text = line.strip()
        if text.startswith("pre:"):
            pres.append(text.removeprefix("pre:").strip())
        elif text.startswith("post:"):
            posts.append(text.removeprefix("post:").strip())
    return pres, posts


def holds(expression: str, namespace: dict[str, Any]) -> bool:
    return bool(eval(expression, dict(namespace)))  # the contract text itself


def check(function: Callable[..., Any], **args: Any) -> bool:
    """Evaluate ``function``'s contract on ``args``; False when a precondition fails."""
    pres, posts = conditions(function)
    # The module's names, not ``function.__globals__``: a wrapper (mutmut's trampoline, a
    # decorator) may come from another module.
    namespace = {**vars(sys.modules[function.__module__]), **args}
    if not all(holds(pre, namespace) for pre in pres):
        return False
    result = function(**args)
    namespace["__return__"] = result
    for post in posts:
        assert holds(post, namespace), f"{function.__name__}({args}) = {result!r} breaks {post}"
    return True


def test_contracts_exist_and_parse() -> None:
    """ENG-2, ENG-3, DET-2, POL-2: every contracted function states pre and post conditions
    (the modules CrossHair checks hold at least 8 postconditions), and they all compile."""
    total = 0
    for function in CONTRACTED:
        pres, posts = conditions(function)
        assert pres and posts, function.__name__
        for expression in pres + posts:
            compile(expression, function.__name__, "eval")
        total += len(pres) + len(posts)
    assert sum(len(conditions(f)[1]) for f in CONTRACTED) >= 8
    assert total >= 16
    assert {f.__module__ for f in CONTRACTED} == {
        cluster.__name__,
        detectors.__name__,
        event_queue.__name__,
    }


GPUS = st.integers(-2, 40)


@given(free=GPUS, demand=GPUS)
def test_eng3_eng6_allocate_contract(free: int, demand: int) -> None:
    """ENG-3, ENG-6: allocating a fitting demand leaves exactly free - demand, >= 0; an
    allocation that does not fit (or is empty) raises instead of going negative."""
    if not check(allocate, free=free, demand=demand) and free >= 0:
        with pytest.raises(ValueError, match="cannot allocate"):
            allocate(free, demand)


@given(free=GPUS, demand=GPUS, total=st.integers(1, 40))
def test_eng3_release_contract(free: int, demand: int, total: int) -> None:
    """ENG-3: releasing gives back exactly the demand and never exceeds the total."""
    if not check(release, free=free, demand=demand, total=total):
        with pytest.raises(ValueError, match="cannot release"):
            release(free, demand, total)


@given(demands=st.lists(st.integers(1, 8), max_size=12), free=st.integers(0, 20))
def test_pol2_first_fit_contract(demands: list[int], free: int) -> None:
    """POL-2: first fit picks a sorted, in-range set of indices that fits, and skips only
    what does not fit in what is left at its turn (backfilling, no reservation)."""
    assert check(first_fit, demands=demands, free=free)
    chosen = set(first_fit(demands, free))
    left = free
    for index, demand in enumerate(demands):
        if index in chosen:
            left -= demand
        else:
            assert demand > left
    assert left >= 0


FINITE_OR_INFINITE = st.floats(allow_nan=False)


@given(
    count=st.integers(0, 50),
    previous=st.none() | FINITE_OR_INFINITE,
    score=FINITE_OR_INFINITE,
)
def test_det1_det2_count_declines_contract(
    count: int, previous: float | None, score: float
) -> None:
    """DET-1, DET-2: a strictly lower score adds one; a tie, a rise or a first score resets."""
    assert check(count_declines, count=count, previous=previous, score=score)
    expected = count + 1 if previous is not None and score < previous else 0
    assert count_declines(count, previous, score) == expected


NAN_PAIRS = st.one_of(
    st.tuples(st.none() | st.floats(), st.just(math.nan)),
    st.tuples(st.just(math.nan), st.floats()),
)


@given(count=st.integers(0, 5), pair=NAN_PAIRS)
def test_det3_count_declines_forbids_nan(count: int, pair: tuple[float | None, float]) -> None:
    """DET-3: NaN is outside the contract (callers skip it first); the preconditions say so."""
    previous, score = pair
    assert not check(count_declines, count=count, previous=previous, score=score)


@given(best=st.none() | FINITE_OR_INFINITE, score=FINITE_OR_INFINITE)
def test_det4_improves_contract(best: float | None, score: float) -> None:
    """DET-4: only a strictly higher score (or the first one) becomes the best."""
    assert check(improves, best=best, score=score)
    if best is not None and score == best:
        assert not improves(best, score)


KEY_PART = st.integers(0, 4)


@given(time=KEY_PART, rank=st.integers(0, 2), seq=st.integers(0, 10**6))
def test_eng2_event_key_contract(time: int, rank: int, seq: int) -> None:
    """ENG-2: an event's key is (time, rank, sequence)."""
    assert check(event_key, time=time, rank=rank, seq=seq)


@given(
    a=st.tuples(KEY_PART, st.integers(0, 2), KEY_PART),
    b=st.tuples(KEY_PART, st.integers(0, 2), KEY_PART),
)
def test_eng2_precedes_contract(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    """ENG-2: of two distinct keys exactly one precedes the other; earlier time first."""
    if not check(precedes, a=a, b=b):
        assert a == b


def test_unconfirmed_contracts_are_labelled_arc_4() -> None:
    """ARC-4: first_fit's post-conditions, which CrossHair cannot confirm, say so."""
    doc = cluster.first_fit.__doc__ or ""
    assert "Tested only" in doc and "ARC-4" in doc
    assert doc.count("post:") == 3
