"""Workloads from job tables: records, CSV, errors, the attachment rule (TAB-1 to TAB-5)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import log_lines
from evalstop.core.errors import EvalStopError
from evalstop.core.model import JobKind
from evalstop.core.registry import make_policy
from evalstop.engine import Simulator
from evalstop.sim import attach
from evalstop.sim.attach import MAX_EVALS, AttachRule, kind_posterior, workload_from_records
from evalstop.sim.clock import hacking_probability
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.tables import (
    JobRecord,
    TableError,
    parse_columns,
    read_job_table,
    records_from_rows,
)
from evalstop.sim.workload import DEFAULT_MIX, SECONDS_PER_STEP, schedule

TIRESIAS = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
cifar10-0,4,0,10000,resnet50,3600,600
cifar10-1,1,120,500,vgg19,900,
imagenet-0,8,60,200000,resnet152,86400,3600
"""


def write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


TIRESIAS_COLUMNS = (
    "id=job_id,gpus=num_gpu,arrival=submit_time,steps=iterations,eval_interval=interval"
)


def test_tab1_tab3_a_tiresias_table_with_its_own_ids_and_headers(tmp_path: Path) -> None:
    """TAB-1, TAB-3: string ids as the table has them, headers mapped by --columns syntax,
    optional cells left empty; jobs numbered in arrival order with the table id as name."""
    table = read_job_table(write(tmp_path, TIRESIAS), parse_columns(TIRESIAS_COLUMNS))
    assert [r.job_id for r in table.records] == ["cifar10-0", "cifar10-1", "imagenet-0"]
    first = JobRecord("cifar10-0", 0, 4, duration=3600, steps=10_000, eval_interval=600)
    assert table.records[0] == first
    assert table.records[1].eval_interval is None
    assert table.origin is None
    workload = workload_from_records(table, seed=0)
    assert [j.spec.name for j in workload.jobs] == ["cifar10-0", "imagenet-0", "cifar10-1"]
    assert [j.spec.job_id for j in workload.jobs] == [0, 1, 2]
    cifar, imagenet, _ = workload.jobs
    assert cifar.spec.eval_interval == 600
    assert [o.step for o in cifar.observations] == [0, *range(600, 10_000, 600), 10_000]
    assert imagenet.checkpoints == 200_000 // 3600 + 2  # step 0, the grid, the end (WRK-7)
    assert (cifar.truth.duration, cifar.truth.total_steps) == (3600, 10_000)


def test_tab1_timestamps_are_shifted_to_zero_and_gz_is_read(tmp_path: Path) -> None:
    """TAB-1, TAB-3: ISO timestamps become seconds from the earliest; .gz files are read."""
    text = "t,g,d,vc\n2017-10-03 00:01:00,2,66.4,x\n2017-10-03 00:00:00,1,10,y\n\n"
    table = read_job_table(
        write(tmp_path, text, "t.csv.gz"), {"arrival": "t", "gpus": "g", "duration": "d"}
    )
    assert [(r.arrival, r.duration) for r in table.records] == [(60, 66), (0, 10)]
    assert table.origin is not None and table.origin.isoformat() == "2017-10-03T00:00:00+00:00"
    # unnamed rows are named by their line number
    assert [r.job_id for r in table.records] == ["2", "3"]


BAD_ROWS = [
    ("id,arrival,gpus,duration\na,0,1,10\na,5,1,10\n", 3, "id", "repeats row 2"),
    ("arrival,gpus,duration\n0,1,10\n5,two,10\n", 3, "gpus", "not a number"),
    ("arrival,gpus,duration\n0,1.5,10\n", 2, "gpus", "whole number"),
    ("arrival,gpus,duration\n0,0,10\n", 2, "gpus", ">= 1"),
    ("arrival,gpus,duration\n0,1,-3\n", 2, "duration", "> 0"),
    ("arrival,gpus,duration\n0,1,nan\n", 2, "duration", "finite"),
    ("arrival,gpus,duration\nyesterday,1,10\n", 2, "arrival", "ISO 8601"),
    ("arrival,gpus,duration\n0,1,10\n2017-01-01,1,10\n", 3, "arrival", "numbers of seconds"),
    ("arrival,gpus,duration,kind\n0,1,10,ppo\n", 2, "kind", "not a job kind"),
    ("arrival,gpus,duration,kind,hacking\n0,1,10,dpo,yes\n", 2, "hacking", "only RLHF"),
    ("arrival,gpus,duration,hacking\n0,1,10,maybe\n", 2, "hacking", "true or false"),
    ("arrival,gpus,duration,steps\n0,1,,\n", 2, "duration", "duration or a step count"),
    ("arrival,gpus,duration\n0,1,10,7\n", 2, None, "4 cells"),
    ("arrival,duration\n0,10\n", 1, "gpus", "no such column"),
    ("arrival,gpus\n0,1\n", 1, "duration", "duration or a steps"),
]


@pytest.mark.parametrize(("text", "row", "field", "problem"), BAD_ROWS)
def test_tab2_a_bad_row_names_row_and_field(
    tmp_path: Path, text: str, row: int, field: str | None, problem: str
) -> None:
    """TAB-2: each bad table is a TableError naming the row (line) and the field."""
    path = write(tmp_path, text)
    with pytest.raises(TableError) as info:
        read_job_table(path)
    error = info.value
    assert isinstance(error, EvalStopError) and isinstance(error, ValueError)
    assert (error.row, error.field) == (row, field)
    assert problem in str(error)
    assert str(path) in str(error)


def test_tab2_nothing_partially_loaded_from_python_records() -> None:
    """TAB-2: a bad row late in a list of mappings fails the whole call, naming row and field;
    a repeated id among JobRecord values too."""
    rows: list[dict[str, object]] = [
        {"id": f"j{i}", "arrival": i, "gpus": 1, "duration": 100} for i in range(50)
    ]
    rows.append({"id": "late", "arrival": 60, "gpus": 1, "duration": 0})
    with pytest.raises(TableError, match=r"row 51, field 'duration'"):
        workload_from_records(rows)
    records = [JobRecord("x", 0, 1, duration=5), JobRecord("x", 3, 1, duration=5)]
    with pytest.raises(TableError, match=r"row 2, field 'id': 'x' repeats row 1"):
        workload_from_records(records)
    with pytest.raises(TableError, match="unknown field"):
        records_from_rows([{"arrival": 0, "gpus": 1, "duration": 4, "colour": "red"}])
    with pytest.raises(TableError, match="no jobs"):
        records_from_rows([])


def test_tab3_columns_syntax_errors() -> None:
    """TAB-3: --columns entries are field=header for known fields, each once."""
    assert parse_columns(" arrival = submit , gpus=n ") == {"arrival": "submit", "gpus": "n"}
    for text, needle in [("arrival", "field=header"), ("colour=x", "unknown field"),
                         ("gpus=a,gpus=b", "given twice")]:  # fmt: skip
        with pytest.raises(TableError, match=needle):
            parse_columns(text)


def test_tab3_a_mapped_header_missing_from_the_file(tmp_path: Path) -> None:
    """TAB-3: a --columns header the CSV lacks is an error on row 1 naming the field."""
    path = write(tmp_path, "arrival,gpus,duration\n0,1,10\n")
    with pytest.raises(TableError, match=r"row 1, field 'tenant': no column 'vc'"):
        read_job_table(path, {"tenant": "vc"})


def test_tab4_kind_posterior_of_the_synthetic_law() -> None:
    """TAB-4: P(kind | GPUs) under the default mix: 1 GPU LoRA 0.12/(0.12+0.075); 3 GPUs are
    classed as 4; 8 and more are RLHF."""
    one = kind_posterior(1, DEFAULT_MIX)
    assert one[JobKind.LORA] == pytest.approx(0.12 / 0.195)
    assert one[JobKind.DPO] == pytest.approx(0.075 / 0.195)
    assert kind_posterior(3, DEFAULT_MIX) == kind_posterior(4, DEFAULT_MIX)
    assert kind_posterior(4, DEFAULT_MIX)[JobKind.RLHF] == pytest.approx(0.3 / 0.375)
    assert kind_posterior(128, DEFAULT_MIX) == {JobKind.RLHF: 1.0}
    # a mix with no kind that runs on 8 GPUs falls back to the mix itself
    assert kind_posterior(8, {JobKind.LORA: 1.0}) == {JobKind.LORA: 1.0}


def _many(n: int) -> list[JobRecord]:
    gpus = [1, 2, 4, 8]
    return [JobRecord(f"r{i}", 10 * i, gpus[i % 4], duration=3000 + i) for i in range(n)]


def test_tab4_the_rule_draws_kinds_and_labels_at_the_declared_rates() -> None:
    """TAB-4: on 8,000 jobs the drawn kinds follow the posterior and RLHF jobs hack at the rate
    the turn law gives their lengths (CRV-9: the law is scaled to the share over the synthetic
    length law, so these short records hack far less often than 0.3); 8-GPU jobs are all RLHF;
    non-RLHF jobs never hack; the interval is WRK-7's."""
    workload = workload_from_records(_many(8000), AttachRule(hacking_share=0.3), seed=4)
    one = [j for j in workload.jobs if j.spec.gpus == 1]
    lora = sum(j.spec.kind is JobKind.LORA for j in one) / len(one)
    assert abs(lora - 0.12 / 0.195) < 0.03
    assert all(j.spec.kind is JobKind.RLHF for j in workload.jobs if j.spec.gpus == 8)
    rlhf = [j for j in workload.jobs if j.spec.kind is JobKind.RLHF]
    world = AttachRule().config().world
    expected_share = sum(
        hacking_probability(world.turn_range, 0.3, j.truth.total_steps) for j in rlhf
    ) / len(rlhf)
    assert expected_share < 0.2
    assert abs(sum(j.truth.hacking for j in rlhf) / len(rlhf) - expected_share) < 0.03
    assert not any(j.truth.hacking for j in workload.jobs if j.spec.kind is not JobKind.RLHF)
    config = AttachRule().config()
    for job in workload.jobs[:200]:
        expected = schedule(job.spec.kind, 3000 + job.job_id, job.spec.estimated_duration, config)
        assert (job.truth.duration, job.spec.eval_interval) == expected[:2]
        assert [o.step for o in job.observations] == expected[2]


def test_tab4_given_values_are_kept_and_steps_give_durations() -> None:
    """TAB-4: a record's kind, label and estimate are kept; a step count alone sets the
    duration at the kind's seconds per step; an interval is widened so that evaluations are a
    second apart and at most MAX_EVALS."""
    records = [
        JobRecord("a", 0, 1, kind=JobKind.RLHF, hacking=True, duration=1000, estimate=77),
        JobRecord("b", 0, 8, kind=JobKind.LORA, steps=50),
        JobRecord("c", 0, 2, kind=JobKind.DPO, duration=2, steps=3, eval_interval=1),
        JobRecord("d", 0, 2, kind=JobKind.DPO, duration=10**6, steps=10**6, eval_interval=1),
    ]
    a, b, c, d = workload_from_records(records, seed=9).jobs
    assert (a.spec.kind, a.truth.hacking, a.spec.estimated_duration) == (JobKind.RLHF, True, 77)
    assert b.spec.kind is JobKind.LORA and not b.truth.hacking
    assert b.truth.duration == 50 * SECONDS_PER_STEP[JobKind.LORA]
    assert [o.step for o in b.observations][-1] == 50
    assert c.truth.duration == 2 and [o.step for o in c.observations] == [0, 2, 3]
    assert d.checkpoints == MAX_EVALS + 1 and d.spec.eval_interval == 10**6 // MAX_EVALS


@given(seed=st.integers(0, 2**32), extra=st.integers(1, 20))
def test_tab4_seeded_and_keyed_by_arrival_rank(seed: int, extra: int) -> None:
    """TAB-4: equal records, rule and seed give equal jobs, another seed other ones; job i
    does not change when later jobs are appended (its streams are keyed by its rank)."""
    base = _many(12)
    first = workload_from_records(base, seed=seed)
    assert first == workload_from_records(base, seed=seed)
    assert first.jobs != workload_from_records(base, seed=seed + 1).jobs
    longer = workload_from_records(base + _many(12 + extra)[12:], seed=seed)
    assert longer.jobs[:12] == first.jobs


def test_tab5_tenant_and_name_reach_the_policy_through_the_run() -> None:
    """TAB-5: tenant and name are on every view the policy receives, before and after
    checkpoints and preemptions; a simulation of table jobs completes."""
    records = [
        JobRecord(f"t{i}", 5 * i, 2, duration=400, tenant="ab"[i >= 6], kind=JobKind.RLHF)
        for i in range(12)
    ]
    workload = workload_from_records(records, seed=1)
    seen: dict[int, set[tuple[str, str | None]]] = {}

    class Spy:
        name = "spy"
        detectors = ()

        def needs_decision(self, cause: object, changed: object) -> bool:
            return True

        def __call__(self, view: object) -> object:
            for job in (*view.queued, *view.running):  # type: ignore[attr-defined]
                seen.setdefault(job.job_id, set()).add((job.tenant, job.name))
            return make_policy("fair-share")(view)  # type: ignore[arg-type]

    sim = Simulator(Spy(), 4, check=True)  # type: ignore[arg-type]
    for job in workload.jobs:
        sim.submit(job)
    sim.run()
    by_id = {job.job_id: (job.spec.tenant, job.spec.name) for job in workload.jobs}
    assert {job_id: {pair} for job_id, pair in by_id.items()} == seen
    assert any(kind == "preempt" for _, kind, _ in log_lines(sim.log))
    result = simulate(workload.jobs, make_policy("evalstop+fair-share"), Cluster(gpus=4))
    assert sum(1 for r in result.log if r.kind.value in ("finish", "stop")) == 12


@given(seed=st.integers(0, 2**32), batch=st.integers(1, 9))
def test_tab4_runs_evaluated_together_are_each_run_alone(seed: int, batch: int) -> None:
    """TAB-4: evaluating runs' curves in batches of any size gives the jobs that evaluating
    each run alone gives (a batch of 1 is ``draw_run``'s path), bit for bit (by repr)."""
    records = [
        *_many(23),
        JobRecord("h", 300, 1, kind=JobKind.RLHF, hacking=True, duration=5000),
        JobRecord("k", 310, 2, kind=JobKind.RLHF, hacking=False, steps=400),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attach, "_FINISH_BATCH", 1)
        alone = workload_from_records(records, seed=seed)
        patch.setattr(attach, "_FINISH_BATCH", batch)
        together = workload_from_records(records, seed=seed)
    assert repr(together.jobs) == repr(alone.jobs)
    assert together == workload_from_records(records, seed=seed)  # the shipped batch size
