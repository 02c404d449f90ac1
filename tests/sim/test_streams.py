"""Each job's curve stream, seeded as numpy seeds it, on one reused generator (spec WRK-1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.sim.streams import CurveStreams
from evalstop.sim.workload import WorkloadConfig, curve_seeds, curve_stream, generate


def numpy_state(parent: np.random.SeedSequence, index: int) -> Mapping[str, Any]:
    return curve_stream(parent, index).bit_generator.state


@given(
    entropy=st.one_of(st.integers(0, 2**40), st.integers(0, 2**200)),
    prefix=st.lists(st.integers(0, 2**70), max_size=3),
    indices=st.lists(st.one_of(st.integers(0, 3000), st.integers(0, 2**70)), max_size=8),
)
def test_wrk1_stream_is_numpys(entropy: int, prefix: list[int], indices: list[int]) -> None:
    """WRK-1: for any entropy, spawn key and job index, the stream's PCG64 state is the one
    numpy's SeedSequence and PCG64 give (every index asked in turn on the reused generator)."""
    parent = np.random.SeedSequence(entropy, spawn_key=tuple(prefix))
    streams = CurveStreams(parent)
    for index in [*indices, 2**32 - 1, 2**32]:
        assert streams.stream(index).bit_generator.state == numpy_state(parent, index)


def test_wrk1_streams_asked_in_order_are_numpys() -> None:
    """WRK-1: indices asked in increasing order (a workload's builders; their states derived
    a block at a time), with gaps, backwards, across a block's end and across 2**32 (where an
    index becomes two words) give numpy's states."""
    parent = curve_seeds(11)
    streams = CurveStreams(parent)
    asked = [
        *range(0, 1_100),
        *range(1_100, 3_000, 7),
        5,
        4,
        *range(2**32 - 600, 2**32 + 3),
        2**32 - 1,
        0,
    ]
    for index in asked:
        assert streams.stream(index).bit_generator.state == numpy_state(parent, index), index


def test_wrk1_draws_and_fallback() -> None:
    """WRK-1: the reused generator draws what a fresh numpy one draws; an entropy numpy
    takes as a list goes through numpy itself; a negative index raises."""
    parent = curve_seeds(7)
    streams = CurveStreams(parent)
    for index in (0, 5, 999):
        ours = streams.stream(index).standard_normal(6)
        assert ours.tobytes() == curve_stream(parent, index).standard_normal(6).tobytes()
    listed = np.random.SeedSequence([3, 2**40], spawn_key=(1,))
    assert CurveStreams(listed).stream(4).bit_generator.state == numpy_state(listed, 4)
    with pytest.raises(ValueError, match="index"):
        streams.stream(-1)


def test_wrk1_generate_uses_each_jobs_stream() -> None:
    """WRK-1: a numpy integer seed gives the workload of the same plain seed."""
    config = WorkloadConfig(n_jobs=20)
    plain, numpy_seed = generate(config, 5), generate(config, np.int64(5))  # type: ignore[arg-type]
    assert repr(plain.jobs) == repr(numpy_seed.jobs)
