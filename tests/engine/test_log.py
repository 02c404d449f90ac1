"""The columnar event log (ENG-16): every record reads back as written, types included."""

from __future__ import annotations

import gc
import math
import pickle
import struct
import tracemalloc
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.engine import Simulator
from evalstop.engine import log as log_module
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import KIND_CODES, EventLog, LogKind, LogRecord, LogWriter
from evalstop.sim.workload import WorkloadConfig, generate

INTS = st.one_of(
    st.integers(0, 10**6),
    st.integers(-(2**70), 2**70),  # beyond the columns' 32 and 64 bits
    st.just(True),  # an int subclass: must read back as True, not 1
)
SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(-0.0),
    st.integers(-5, 5),  # not a float: kept whole
    st.builds(np.float64, st.floats(-1, 1)),  # a float subclass: kept whole
    st.none(),
)


@st.composite
def records(draw: st.DrawFn) -> LogRecord:
    """Canonical engine records mostly, and every kind of odd one."""
    kind = draw(st.sampled_from(list(LogKind)))
    time, job, gpus, index = (draw(st.integers(0, 10**6)) for _ in range(4))
    if draw(st.booleans()):
        time, job, gpus, index = (draw(INTS) for _ in range(4))
    if kind in (LogKind.CHECKPOINT, LogKind.FINISH) and draw(st.booleans()):
        return LogRecord(time, kind, job, gpus, index, draw(st.integers(0, 10**9)), 0.5)
    if kind in (LogKind.ARRIVE, LogKind.START, LogKind.PREEMPT) and draw(st.booleans()):
        return LogRecord(time, kind, job, gpus, index)
    step = draw(st.one_of(st.none(), INTS))
    reason = draw(st.sampled_from(["", "evalstop(k=2)"]))
    return LogRecord(time, kind, job, gpus, index, step, draw(SCORES), reason)


def same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b) and [type(x) for x in a] == [type(x) for x in b]


def written_log(written: list[LogRecord], chunk: int) -> EventLog:
    """``written`` through a writer's append, its engine rows packed every ``chunk`` rows."""
    writer = LogWriter(chunk)
    for record in written:
        writer.append(record)
        if len(writer.rows) >= chunk:
            writer.pack()
    return writer.log()


@given(st.lists(records(), max_size=30), st.integers(1, 7))
def test_records_read_back_as_written(written: list[LogRecord], chunk: int) -> None:
    """ENG-16: through append and through engine rows packed in chunks, every record reads
    back equal and of the same types, by iteration, index, negative index and slice."""
    log = written_log(written, chunk)
    assert len(log) == len(written)
    assert all(same(a, b) for a, b in zip(log, written, strict=True))
    assert all(
        same(log[i], written[i]) and same(log[-i - 1], written[-i - 1]) for i in range(len(log))
    )
    assert same(log[1:-1:2], tuple(written[1:-1:2]))
    assert log == written and log == tuple(written)
    assert log == EventLog.of(written)
    back = pickle.loads(pickle.dumps(log))
    assert back == log and all(same(a, b) for a, b in zip(back, written, strict=True))


@given(st.lists(records(), min_size=1, max_size=20))
def test_engine_rows_that_do_not_fit_are_kept_whole(written: list[LogRecord]) -> None:
    """ENG-16: rows the engine appends directly (as tuples) read back exactly, also when a
    value does not fit the columns (found when packed)."""
    writer = LogWriter()
    expected = []
    for record in written:
        scored = record.kind in (LogKind.CHECKPOINT, LogKind.FINISH)
        if scored and (record.step is None or record.score is None):
            continue  # the engine writes a step and a score for these
        step, score = (record.step, record.score) if scored else (0, 0.0)
        writer.rows.append(
            (
                record.time,
                KIND_CODES[record.kind],
                record.job_id,
                record.gpus,
                record.index,
                step,
                score,
            )  # type: ignore[arg-type]
        )
        expected.append(record._replace(reason="") if scored else LogRecord(*record[:5]))
    assert all(same(a, b) for a, b in zip(writer.log(), expected, strict=True))


def test_a_later_row_does_not_change_an_earlier_log() -> None:
    """ENG-16: a log is immutable; the writer's later rows are not part of it."""
    writer = LogWriter()
    writer.append(LogRecord(1, LogKind.ARRIVE, 7, 2))
    before = writer.log()
    writer.append(LogRecord(2, LogKind.STOP, 7, 2, 0, None, None, "asked"))
    assert len(before) == 1 and list(before) == [LogRecord(1, LogKind.ARRIVE, 7, 2)]
    with pytest.raises(IndexError):
        before[1]
    assert writer.log()[1].reason == "asked"


def test_equality_is_by_records_with_nan_equal_to_nan() -> None:
    """ENG-16: two logs are equal when their records are; a NaN score equals a NaN score."""
    nan = LogRecord(3, LogKind.CHECKPOINT, 1, 1, 1, 10, math.nan)
    assert EventLog.of([nan]) == EventLog.of([nan._replace(score=float("nan"))])
    assert EventLog.of([nan]) != EventLog.of([nan._replace(score=0.0)])
    assert EventLog.of([nan]) != EventLog.of([nan._replace(step=11)])
    assert EventLog.of([nan._replace(score=0.0)]) == EventLog.of([nan._replace(score=-0.0)])
    assert hash(EventLog.of([nan])) == hash(EventLog.of([nan]))
    assert EventLog.of([nan]) != [nan, nan]
    assert EventLog.of([]) == []


@given(st.lists(records(), max_size=30), st.integers(1, 7))
def test_columns_with_the_odd_records_give_back_every_record(
    written: list[LogRecord], chunk: int
) -> None:
    """ENG-21: the columns (copies) hold every record that fits them, and the kind code and
    zeros where it does not; the odd records are the others, so together they give back the
    log."""
    log = written_log(written, chunk)
    columns = log.columns()
    assert all(len(column) == len(log) for column in columns[:7])
    kinds = list(LogKind)
    rebuilt = []
    for position, row in enumerate(zip(*columns[:7], strict=True)):
        time, code, job, gpus, index, step, score = row
        assert code == KIND_CODES[written[position].kind]
        if position in columns.odd:
            assert (time, job, gpus, index, step, score) == (0, 0, 0, 0, 0, 0.0)
            rebuilt.append(columns.odd[position])
        elif kinds[code] in (LogKind.CHECKPOINT, LogKind.FINISH):
            rebuilt.append(LogRecord(time, kinds[code], job, gpus, index, step, score))
        else:
            rebuilt.append(LogRecord(time, kinds[code], job, gpus, index))
    assert all(same(a, b) for a, b in zip(rebuilt, written, strict=True))
    columns.time.append(1)  # a copy: the log does not change
    assert len(log.columns().time) == len(log)


def test_a_finished_runs_log_holds_41_bytes_a_record() -> None:
    """ENG-16: once a run drains, the columns keep no spare room (41 bytes a record) and the
    records kept whole cost 16 bytes each beside themselves (a position and a reference):
    measured as the memory allocated in the log module that the finished log still holds."""
    jobs = generate(WorkloadConfig(n_jobs=300, gpus=20, load=0.9), seed=0).jobs
    simulator = FastSimulator(make_policy("evalstop+fifo"), 20)
    for job in jobs:
        simulator.submit(job)
    gc.collect()
    tracemalloc.start(1)
    try:
        simulator.run()
        log = simulator.log
        del simulator
        # the packing's formats ("<n>q") fill struct's module-wide cache of compiled formats,
        # whose state depends on the tests run before in this process: not the log's memory
        getattr(struct, "_clearcache")()  # noqa: B009 (not in typeshed)
        gc.collect()
        held = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(True, log_module.__file__)]
        )
    finally:
        tracemalloc.stop()
    kept = sum(1 for record in log if record.kind is LogKind.STOP)
    size = sum(stat.size for stat in held.statistics("filename"))
    assert kept > 10 and len(log) > 2_000
    assert size <= 41 * len(log) + 16 * kept + 4_096  # the arrays' headers


def _inexact(job: Job, how: str) -> Job:
    """``job`` with one number that a log row carries of a type that is not exactly ``int``
    (or ``float`` for a score), as the model allows: a numpy integer, an ``int`` score, a
    ``bool`` score, a numpy float score."""
    spec, truth, observations = job.spec, job.truth, list(job.observations)
    first = observations[0]
    numpy_int: Any = np.int64  # an Integral the model accepts where it says int
    if how in ("job_id", "gpus", "submit_time"):
        spec = attrs.evolve(spec, **{how: numpy_int(getattr(spec, how))})
    elif how == "duration":
        truth = attrs.evolve(truth, duration=numpy_int(truth.duration))
    elif how == "step":
        observations[0] = attrs.evolve(first, step=numpy_int(first.step))
    else:
        score = {"int score": 1, "bool score": True, "numpy score": np.float64(0.25)}[how]
        observations[0] = attrs.evolve(first, eval_score=score)
    return Job(spec, truth, tuple(observations))


@pytest.mark.parametrize(
    "how",
    ["job_id", "gpus", "submit_time", "duration", "step", "int score", "bool score", "numpy score"],
)
@pytest.mark.parametrize("system", ["fifo", "evalstop+fifo"])
def test_eng16_rows_of_inexact_numbers_are_checked_when_packed(how: str, system: str) -> None:
    """ENG-16: while the id and the GPUs of every job submitted are exactly ``int``s, the fast
    engine's writer checks the types of the rows' times, steps and scores only; a job whose id
    or GPUs are not makes it check every column from then on. Whichever number of a job is of
    another type (first or after exact jobs), the fast engine's log reads back as the pure
    engine's, types included (the inexact values kept whole)."""
    jobs = list(generate(WorkloadConfig(n_jobs=40, gpus=8, load=0.9), seed=3).jobs)
    assert not LogWriter().exact
    for at in (0, 25):
        odd = jobs.copy()
        odd[at] = _inexact(jobs[at], how)
        fast = FastSimulator(make_policy(system), 8, preemption_overhead=30)
        pure = Simulator(make_policy(system), 8, preemption_overhead=30)
        for index, job in enumerate(odd):
            fast.submit(job)
            pure.submit(job)
            assert fast._writer.exact is (index < at or how not in ("job_id", "gpus"))
        fast.run()
        pure.run()
        assert len(fast.log) == len(pure.log) > 0
        assert all(same(a, b) for a, b in zip(fast.log, pure.log, strict=True))
