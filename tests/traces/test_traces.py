"""Trace ingestion (spec TRC): every format, detection, ordering, errors and the real traces."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalstop.traces import (
    EmptyTraceError,
    MalformedTraceError,
    MetricNotFoundError,
    NoNumericValuesError,
    ReaderUnavailableError,
    Trace,
    TraceError,
    TraceFormat,
    TraceOptionError,
    UnreadableTraceError,
    detect_format,
    read_trace,
)

REAL = Path(__file__).resolve().parents[1] / "data" / "real-traces"
NAN = math.nan


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def trainer_state(entries: list[dict[str, Any]]) -> str:
    return json.dumps({"best_metric": None, "global_step": 30, "log_history": entries})


PPO_STATE = trainer_state(
    [
        {"step": 10, "epoch": 0.1, "objective/kl": 0.1, "objective/scores": 1.0, "loss": 2.0},
        {"step": 10, "epoch": 0.1, "eval_reward": 0.30, "eval_loss": 1.5},
        {"step": 20, "epoch": 0.2, "objective/kl": 0.4, "objective/scores": 2.0, "loss": 1.0},
        {"step": 20, "epoch": 0.2, "eval_reward": 0.50, "eval_loss": 1.2},
        {"step": 30, "epoch": 0.3, "objective/kl": 0.9, "objective/rlhf_reward": 3.0},
        {"step": 30, "epoch": 0.3, "eval_reward": 0.45, "eval_loss": 1.3},
    ]
)

WANDB_CSV = (
    '"Step","run-a - eval/score","run-a - eval/score__MIN","run-a - eval/score__MAX",'
    '"run-b - eval/score","run-b - train/kl"\n'
    "100,0.1,0.09,0.11,0.2,0.01\n"
    "200,,,,0.3,0.02\n"
    "300,0.4,0.39,0.41,0.25,0.05\n"
)


# -- TRC-1 ---------------------------------------------------------------------------------


def test_trace_is_a_validated_frozen_value_trc_1() -> None:
    """TRC-1: tuples of int steps and float values; bad series raise ValueError."""
    trace = Trace("p", "m", TraceFormat.CSV, [1, 2, 5], [1, NAN, 0.5])
    assert trace.steps == (1, 2, 5) and isinstance(trace.values[0], float)
    assert len(trace) == 3 and trace.last_step == 5
    assert trace.best_index() == 0 and trace.best_index("min") == 2
    bad: list[tuple[list[Any], list[float]]] = [
        ([1, 2], [0.1]),
        ([2, 1], [0.1, 0.2]),
        ([1, 1], [0.1, 0.2]),
        ([-1], [0.1]),
        ([True], [0.1]),
        ([1.5], [0.1]),
        ([1, 2], [NAN, math.inf]),
    ]
    for steps, values in bad:
        with pytest.raises(ValueError):
            Trace("p", "m", TraceFormat.CSV, steps, values)
    with pytest.raises(AttributeError):
        trace.metric = "x"  # type: ignore[misc]


# -- TRC-2 ---------------------------------------------------------------------------------

ERROR_CASES: list[tuple[str, str, str | None, type[TraceError], str]] = [
    ("empty.csv", "", None, EmptyTraceError, "empty"),
    ("blank.jsonl", "\n\n  \n", None, EmptyTraceError, "empty"),
    ("header.csv", "step,score\n", "score", EmptyTraceError, "no data rows"),
    ("comments.csv", "# only a comment\n", None, EmptyTraceError, "no header"),
    ("bad.json", '{"log_history": [', None, MalformedTraceError, "not JSON"),
    ("bad.jsonl", '{"step": 1}\n{oops}\n', None, MalformedTraceError, "line 2"),
    ("list.jsonl", '{"step": 1}\n[1, 2]\n', None, MalformedTraceError, "JSON object"),
    ("ragged.csv", "step,score\n1,0.5\n2,0.6,9\n", "score", MalformedTraceError, "line 3"),
    ("layout.json", '{"a": 1, "b": [1]}', None, MalformedTraceError, "recognised JSON layout"),
    ("history.json", '{"log_history": 5}', None, MalformedTraceError, "log_history"),
    ("miss.csv", "step,score,kl\n1,0.5,0.1\n", "reward", MetricNotFoundError, "kl, score"),
    ("text.csv", "step,score\n1,high\n2,low\n", "score", NoNumericValuesError, "numeric"),
    ("nans.csv", "step,score\n1,nan\n2,inf\n", "score", NoNumericValuesError, "finite"),
    ("nostep.csv", "epoch,score\n1,0.5\n", "score", MalformedTraceError, "no step column"),
    ("what.txt", "hello world\n", None, MalformedTraceError, "cannot tell the format"),
]


@pytest.mark.parametrize(("name", "text", "metric", "error", "words"), ERROR_CASES)
def test_bad_files_raise_typed_one_line_errors_trc_2(
    tmp_path: Path, name: str, text: str, metric: str | None, error: type[TraceError], words: str
) -> None:
    """TRC-2: each bad input raises its TraceError subclass naming the file, on one line."""
    path = write(tmp_path, name, text)
    with pytest.raises(error) as info:
        read_trace(path, metric)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert words in message
    assert info.value.path == str(path)


def test_unreadable_files_trc_2(tmp_path: Path) -> None:
    """TRC-2: a missing file and a non-UTF-8 file are unreadable."""
    with pytest.raises(UnreadableTraceError, match="No such file"):
        read_trace(tmp_path / "missing.csv")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(UnreadableTraceError, match="UTF-8"):
        read_trace(binary)


def test_options_that_do_not_apply_are_refused_trc_2(tmp_path: Path) -> None:
    """TRC-2: where / step_column on a format that has no such thing is a TraceOptionError."""
    state = write(tmp_path, "trainer_state.json", PPO_STATE)
    with pytest.raises(TraceOptionError):
        read_trace(state, "eval_reward", where={"a": "b"})
    with pytest.raises(TraceOptionError):
        read_trace(write(tmp_path, "w.csv", WANDB_CSV), where={"a": "b"})


# -- TRC-3 ---------------------------------------------------------------------------------


def test_format_detected_from_name_and_content_trc_3(tmp_path: Path) -> None:
    """TRC-3: extension and content pick the reader; other names are sniffed."""
    cases = {
        "trainer_state.json": (PPO_STATE, TraceFormat.TRAINER_STATE),
        "ckpt.json": (
            '{"base": {"acc": 0.1}, "ckpt-5": {"acc": 0.2}}',
            TraceFormat.CHECKPOINTS_JSON,
        ),
        "log.jsonl": ('{"step": 1, "r": 0.1}\n', TraceFormat.JSONL),
        "log.ndjson": ('{"step": 1, "r": 0.1}\n', TraceFormat.JSONL),
        "export.csv": (WANDB_CSV, TraceFormat.WANDB_CSV),
        "table.csv": ("step,r\n1,0.1\n", TraceFormat.CSV),
        "state.txt": (PPO_STATE, TraceFormat.TRAINER_STATE),
        "lines.log": ('{"step": 1, "r": 0.1}\n{"step": 2, "r": 0.2}\n', TraceFormat.JSONL),
        "table.dat": ("step,r\n1,0.1\n", TraceFormat.CSV),
        "events.out.tfevents.123.host": ("", TraceFormat.TENSORBOARD),
    }
    for name, (text, fmt) in cases.items():
        assert detect_format(write(tmp_path, name, text)) is fmt, name
    assert detect_format(tmp_path) is TraceFormat.TENSORBOARD


def test_format_argument_forces_a_reader_trc_3(tmp_path: Path) -> None:
    """TRC-3: format= overrides detection; an unknown name is a ValueError listing formats."""
    path = write(tmp_path, "metrics.txt", "step,r\n1,0.1\n2,0.2\n")
    assert read_trace(path, "r", format="csv").steps == (1, 2)
    assert read_trace(path, "r", format=TraceFormat.CSV).format is TraceFormat.CSV
    with pytest.raises(MalformedTraceError):
        read_trace(path, "r", format="jsonl")
    with pytest.raises(ValueError, match="trainer-state, wandb-csv"):
        read_trace(path, "r", format="parquet")


# -- TRC-4 ---------------------------------------------------------------------------------


def test_metric_choice_trc_4(tmp_path: Path) -> None:
    """TRC-4: the only metric by default; several or a missing one list what is there."""
    single = write(tmp_path, "one.csv", "step,score\n1,0.5\n2,0.7\n")
    assert read_trace(single).metric == "score"
    several = write(tmp_path, "two.csv", "step,score,kl,name\n1,0.5,0.1,x\n")
    with pytest.raises(MetricNotFoundError, match="several") as info:
        read_trace(several)
    assert info.value.available == ("kl", "score")
    with pytest.raises(MetricNotFoundError, match="'reward' not found; available metrics: kl"):
        read_trace(several, "reward")


# -- TRC-5 ---------------------------------------------------------------------------------


def test_values_empty_nan_and_text_trc_5(tmp_path: Path) -> None:
    """TRC-5: empty cells are no record, nan is kept, text among numbers is malformed."""
    path = write(tmp_path, "v.csv", "step,score\n1,0.5\n2,\n3,nan\n4,1e-1\n")
    trace = read_trace(path, "score")
    assert trace.steps == (1, 3, 4)
    assert trace.values[0] == 0.5 and math.isnan(trace.values[1]) and trace.values[2] == 0.1
    bad = write(tmp_path, "bad.csv", "step,score\n1,0.5\n2,oops\n")
    with pytest.raises(MalformedTraceError, match="line 3: metric 'score' value 'oops'"):
        read_trace(bad, "score")
    nulls = write(tmp_path, "n.jsonl", '{"step": 1, "r": null}\n{"step": 2, "r": 0.3}\n')
    assert read_trace(nulls, "r").steps == (2,)
    bools = write(tmp_path, "b.jsonl", '{"step": 1, "r": true}\n')
    with pytest.raises(NoNumericValuesError):
        read_trace(bools, "r")


# -- TRC-6 ---------------------------------------------------------------------------------


def test_steps_are_integers_trc_6(tmp_path: Path) -> None:
    """TRC-6: 100, 100.0 and 1e2 style steps are fine; rows without a step are skipped."""
    path = write(tmp_path, "s.csv", "step,r\n100.0,0.1\n2e2,0.2\n,0.3\n300,0.4\n")
    assert read_trace(path, "r").steps == (100, 200, 300)
    for step in ("1.5", "-1", "ten"):
        bad = write(tmp_path, "bad.csv", f"step,r\n{step},0.1\n")
        with pytest.raises(MalformedTraceError, match="line 2: step 'step'"):
            read_trace(bad, "r")


def test_sort_order_and_repeated_steps_trc_6(tmp_path: Path) -> None:
    """TRC-6: sort orders by step; a repeated step names both lines and the way out."""
    path = write(tmp_path, "u.csv", "step,r\n30,0.3\n10,0.1\n20,0.2\n")
    assert read_trace(path, "r").values == (0.1, 0.2, 0.3)
    dup = write(tmp_path, "d.csv", "run,step,r\na,1,0.1\na,2,0.2\nb,1,0.5\n")
    with pytest.raises(MalformedTraceError, match=r"step 1 appears twice \(line 2 and line 4\)"):
        read_trace(dup, "r")


def test_log_order_purges_records_orphaned_by_a_restart_trc_6(tmp_path: Path) -> None:
    """TRC-6: in log order a step that goes back replaces the records at or after it."""
    lines = [(0, 0.0), (1, 0.1), (2, 0.2), (3, 0.3), (1, 1.1), (2, 1.2), (2, 2.2), (5, 2.5)]
    text = "".join(json.dumps({"step": s, "r": v}) + "\n" for s, v in lines)
    trace = read_trace(write(tmp_path, "restart.jsonl", text), "r", order="log")
    assert trace.steps == (0, 1, 2, 5)
    assert trace.values == (0.0, 1.1, 2.2, 2.5)
    with pytest.raises(ValueError, match="order"):
        read_trace(tmp_path / "restart.jsonl", "r", order="random")  # type: ignore[arg-type]


# -- TRC-7 ---------------------------------------------------------------------------------


def test_trainer_state_eval_and_trl_keys_trc_7(tmp_path: Path) -> None:
    """TRC-7: eval_* and TRL PPO keys read from the entries that hold them."""
    path = write(tmp_path, "trainer_state.json", PPO_STATE)
    reward = read_trace(path, "eval_reward")
    assert (reward.steps, reward.values, reward.format) == (
        (10, 20, 30),
        (0.30, 0.50, 0.45),
        TraceFormat.TRAINER_STATE,
    )
    assert read_trace(path, "objective/kl").values == (0.1, 0.4, 0.9)
    assert read_trace(path, "objective/rlhf_reward").steps == (30,)
    with pytest.raises(MetricNotFoundError) as info:
        read_trace(path)
    assert "step" not in info.value.available and "epoch" not in info.value.available
    assert "objective/scores" in info.value.available


def test_trainer_state_grpo_keys_trc_7(tmp_path: Path) -> None:
    """TRC-7: GRPO keys reward, rewards/<func>/mean and kl."""
    entries = [
        {"step": s, "reward": r, "rewards/accuracy/mean": a, "kl": k}
        for s, r, a, k in [(5, 0.1, 0.2, 0.0), (10, 0.3, 0.4, 0.01), (15, 0.2, 0.5, 0.02)]
    ]
    path = write(tmp_path, "trainer_state.json", trainer_state(entries))
    assert read_trace(path, "rewards/accuracy/mean").values == (0.2, 0.4, 0.5)
    assert read_trace(path, "kl").steps == (5, 10, 15)


# -- TRC-8 ---------------------------------------------------------------------------------


def test_wandb_csv_columns_trc_8(tmp_path: Path) -> None:
    """TRC-8: __MIN/__MAX ignored, empty cells skipped, metric by column or by suffix."""
    path = write(tmp_path, "wandb_export.csv", WANDB_CSV)
    trace = read_trace(path, "run-a - eval/score")
    assert (trace.steps, trace.values, trace.format) == (
        (100, 300),
        (0.1, 0.4),
        TraceFormat.WANDB_CSV,
    )
    kl = read_trace(path, "train/kl")
    assert kl.metric == "run-b - train/kl" and kl.values == (0.01, 0.02, 0.05)
    with pytest.raises(MetricNotFoundError, match="several runs") as info:
        read_trace(path, "eval/score")
    assert info.value.available == ("run-a - eval/score", "run-b - eval/score")
    with pytest.raises(MetricNotFoundError) as missing:
        read_trace(path, "eval/score__MIN")
    assert all("__M" not in name for name in missing.value.available)


# -- TRC-9 ---------------------------------------------------------------------------------


def test_generic_csv_comments_step_column_and_where_trc_9(tmp_path: Path) -> None:
    """TRC-9: comments skipped, step column chosen, where selects one run of a long table."""
    text = (
        "# provenance line, with a comma\n"
        "run,iteration,score\n"
        "a,1,0.1\n"
        "\n"
        "b,1,0.7\n"
        "a,2,0.2\n"
        "b,2,0.6\n"
    )
    path = write(tmp_path, "long.csv", text)
    a = read_trace(path, "score", step_column="iteration", where={"run": "a"})
    assert (a.steps, a.values) == ((1, 2), (0.1, 0.2))
    with pytest.raises(EmptyTraceError, match="no rows match run=c"):
        read_trace(path, "score", step_column="iteration", where={"run": "c"})
    with pytest.raises(MalformedTraceError, match="no column 'seed' to filter on"):
        read_trace(path, "score", step_column="iteration", where={"seed": "1"})
    with pytest.raises(MalformedTraceError, match="no step column 'epoch'"):
        read_trace(path, "score", step_column="epoch")


def test_generic_jsonl_step_candidates_and_where_trc_9(tmp_path: Path) -> None:
    """TRC-9: the first of step, Step, global_step, _step; where compares values as text."""
    rows = [
        {"_step": 1, "global_step": 10, "seed": 1, "r": 0.1},
        {"_step": 2, "global_step": 20, "seed": 2, "r": 0.9},
        {"_step": 3, "global_step": 30, "seed": 1, "r": 0.3},
    ]
    path = write(tmp_path, "m.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    trace = read_trace(path, "r", where={"seed": "1"})
    assert (trace.steps, trace.values) == ((10, 30), (0.1, 0.3))
    assert read_trace(path, "r", step_column="_step", where={"seed": "2"}).steps == (2,)


# -- TRC-10 --------------------------------------------------------------------------------


def test_checkpoint_map_steps_trc_10(tmp_path: Path) -> None:
    """TRC-10: baseline is 0, numbers end names, final follows the last numbered one."""
    data = {
        "baseline": {"acc": 0.1, "name": "x"},
        "runs/ckpt_000002": {"acc": 0.3},
        "runs/ckpt_000001": {"acc": 0.2},
        "runs/final": {"acc": 0.25},
    }
    path = write(tmp_path, "heldout.json", json.dumps(data))
    trace = read_trace(path, "acc")
    assert (trace.steps, trace.values) == ((0, 1, 2, 3), (0.1, 0.2, 0.3, 0.25))
    bad = write(tmp_path, "odd.json", json.dumps({"alpha": {"acc": 1.0}}))
    with pytest.raises(MalformedTraceError, match="cannot tell the step of checkpoint 'alpha'"):
        read_trace(bad, "acc")


# -- TRC-11 --------------------------------------------------------------------------------


def test_tensorboard_tensor_scalars_trc_11(tmp_path: Path) -> None:
    """TRC-11: scalars written by tensorboard.summary.Writer, from a directory or a file."""
    summary = pytest.importorskip("tensorboard.summary")
    writer = summary.Writer(str(tmp_path / "run"))
    for step, value in [(10, 0.25), (20, 0.5), (30, 0.375)]:
        writer.add_scalar("eval/score", value, step)
        writer.add_scalar("train/loss", 1.0 / step, step)
    writer.close()
    trace = read_trace(tmp_path / "run", "eval/score")
    assert (trace.steps, trace.values, trace.format) == (
        (10, 20, 30),
        (0.25, 0.5, 0.375),
        TraceFormat.TENSORBOARD,
    )
    (event_file,) = (tmp_path / "run").iterdir()
    assert read_trace(event_file, "eval/score").steps == (10, 20, 30)
    with pytest.raises(MetricNotFoundError, match="eval/score, train/loss"):
        read_trace(event_file, "eval/acc")


def test_tensorboard_simple_value_scalars_trc_11(tmp_path: Path) -> None:
    """TRC-11: legacy simple_value summaries (as PyTorch writes them) are read too."""
    writer_module = pytest.importorskip("tensorboard.summary.writer.event_file_writer")
    event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
    summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
    writer = writer_module.EventFileWriter(str(tmp_path))
    for step, value in [(1, 0.5), (2, 0.75)]:
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="acc", simple_value=value)]
        )
        writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary))
    writer.close()
    trace = read_trace(tmp_path)
    assert (trace.metric, trace.steps, trace.values) == ("acc", (1, 2), (0.5, 0.75))


def test_tensorboard_empty_and_broken_trc_11(tmp_path: Path) -> None:
    """TRC-11: a directory without event files is empty; garbage is not an event file."""
    pytest.importorskip("tensorboard")
    with pytest.raises(EmptyTraceError, match="no TensorBoard event files"):
        read_trace(tmp_path)
    junk = tmp_path / "events.out.tfevents.1.junk"
    junk.write_bytes(b"not an event file at all")
    with pytest.raises(MalformedTraceError, match="not a TensorBoard event file"):
        read_trace(junk)
    with pytest.raises(UnreadableTraceError):
        read_trace(tmp_path / "missing" / "events.out.tfevents.2", format="tensorboard")


def test_tensorboard_missing_extra_says_how_to_install_trc_11(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRC-11: without tensorboard the error names the extra to install."""
    import importlib

    def refuse(name: str) -> None:
        raise ImportError(name)

    monkeypatch.setattr(importlib, "import_module", refuse)
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"")
    with pytest.raises(ReaderUnavailableError, match=r"pip install 'evalstop\[tensorboard\]'"):
        read_trace(path)


# -- TRC-12 --------------------------------------------------------------------------------

REAL_CASES: list[tuple[str, str, dict[str, Any], int]] = [
    (
        "par_ppo_gemma2-2b_ultrafb_proxy_vs_winrate.csv",
        "winrate",
        {"where": {"curve": "Vanilla"}},
        10,
    ),
    (
        "upppo_rlhf_rollout_summary_all.csv",
        "mean_judge_avg",
        {
            "step_column": "checkpoint_step",
            "where": {"family": "ppo_beta0_aggressive", "model_label": "ppo"},
        },
        5,
    ),
    ("vince_grpo_gsm8k_proxyRM_qwen05b_train_metrics.jsonl", "gold_acc", {}, 50),
    ("vince_grpo_gsm8k_heldout_probe_summary.csv", "gold_acc_mean", {}, 3),
    ("rhe_llama3b_f_g_Hard_heldout_f_g.json", "avg_f", {}, 36),
    ("rhe_llama3b_g_Easy_heldout_f_g.json", "avg_g", {}, 2),
    ("rhe_llama3b_Easy-g-llmjudge_train_metrics.jsonl", "reward/f", {"order": "log"}, 21),
]


@pytest.mark.parametrize(("name", "metric", "options", "points"), REAL_CASES)
def test_real_traces_read_trc_12(
    name: str, metric: str, options: dict[str, Any], points: int
) -> None:
    """TRC-12: each real curve file reads with the documented options."""
    trace = read_trace(REAL / name, metric, **options)
    assert len(trace) == points
    assert all(math.isfinite(v) for v in trace.values)


def test_real_trace_quirks_trc_12() -> None:
    """TRC-12: the unsorted UP-PPO table sorts; the restarted log needs order=log; meta refused."""
    upppo = read_trace(
        REAL / "upppo_rlhf_rollout_summary_all.csv",
        "mean_judge_avg",
        step_column="checkpoint_step",
        where={"family": "ppo_beta0_aggressive", "model_label": "ppo"},
    )
    assert upppo.steps == (200, 400, 600, 1000, 1200)
    assert upppo.values[-2:] == (2.98828125, 2.75390625)
    with pytest.raises(MalformedTraceError, match="appears twice"):
        read_trace(REAL / "rhe_llama3b_Easy-g-llmjudge_train_metrics.jsonl", "reward/f")
    restarted = read_trace(
        REAL / "rhe_llama3b_Easy-g-llmjudge_train_metrics.jsonl", "reward/f", order="log"
    )
    assert restarted.steps == tuple(range(21))
    with pytest.raises(MalformedTraceError, match="recognised JSON layout"):
        read_trace(REAL / "vince_grpo_gsm8k_proxyRM_qwen05b_meta.json")
    heldout = read_trace(REAL / "rhe_llama3b_f_g_Hard_heldout_f_g.json", "avg_g")
    assert heldout.steps == tuple(range(36))
    assert heldout.values[-1] == heldout.values[-2]  # "final" placed after checkpoint 34
