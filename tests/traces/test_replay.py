"""Trace replay and ``evalstop replay`` (spec RPL) on every format, the real traces and errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.cli import main
from evalstop.core.detectors import DeclineDetector, LossPlateau, StopAtProgress
from evalstop.core.registry import make_detector
from evalstop.live.monitor import Monitor
from evalstop.traces import EmptyTraceError, Trace, TraceFormat, read_trace, replay

REAL = Path(__file__).resolve().parents[1] / "data" / "real-traces"
SCORES = [0.1, 0.3, 0.5, 0.4, 0.35, 0.6, 0.2]  # peak 0.5 at step 30, two declines at 40, 50
STEPS = [10, 20, 30, 40, 50, 60, 70]


RULE_OPTIONS = {
    "--detector",
    "--k",
    "--min-delta",
    "--warmup-evals",
    "--warmup-steps",
    "--baseline",
}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``evalstop replay ARGV``, with the paper's rule (``--detector evalstop``, k = 2) unless
    ARGV names a rule: the expected numbers here are worked out for it."""
    rule = () if RULE_OPTIONS & set(argv) else ("--detector", "evalstop")
    code = main(["replay", *argv, *rule])
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def check_standard(result: dict[str, Any]) -> None:
    """The run above: stops at 50 keeping step 30 (0.5), saves 20 steps, best overall 0.6."""
    assert result["stopped"] is True
    assert (result["stop_step"], result["best_step"], result["best_value"]) == (50, 30, 0.5)
    assert (result["n_evals"], result["last_step"], result["steps_saved"]) == (5, 70, 20)
    assert (result["curve_best_step"], result["curve_best_value"]) == (60, 0.6)
    assert result["regret"] == pytest.approx(0.1)


def make_files(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    """The standard run in every text format, with the options that read it."""
    pairs = list(zip(STEPS, SCORES, strict=True))
    files: dict[str, tuple[Path, list[str]]] = {}
    state = {"log_history": [{"step": s, "epoch": s / 70, "eval_score": v} for s, v in pairs]}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    files["trainer-state"] = (tmp_path / "trainer_state.json", ["--metric", "eval_score"])
    wandb = "Step,run - eval/score,run - eval/score__MIN,run - eval/score__MAX\n"
    wandb += "".join(f"{s},{v},{v},{v}\n" for s, v in pairs)
    (tmp_path / "wandb.csv").write_text(wandb)
    files["wandb-csv"] = (tmp_path / "wandb.csv", ["--metric", "eval/score"])
    table = "global_step,score,loss\n" + "".join(f"{s},{v},{1 / s}\n" for s, v in pairs)
    (tmp_path / "table.csv").write_text(table)
    files["csv"] = (tmp_path / "table.csv", ["--metric", "score"])
    lines = "".join(json.dumps({"it": s, "score": v}) + "\n" for s, v in pairs)
    (tmp_path / "metrics.jsonl").write_text(lines)
    files["jsonl"] = (tmp_path / "metrics.jsonl", ["--metric", "score", "--step-column", "it"])
    ckpts = {f"ckpt-{s}": {"score": v} for s, v in pairs}
    (tmp_path / "heldout.json").write_text(json.dumps(ckpts))
    files["checkpoints-json"] = (tmp_path / "heldout.json", ["--metric", "score"])
    return files


# -- RPL-1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["trainer-state", "wandb-csv", "csv", "jsonl", "checkpoints-json"])
def test_replay_every_text_format_rpl_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """RPL-1, RPL-5: each format replays to the same stop and best checkpoint."""
    path, options = make_files(tmp_path)[fmt]
    result = cli_json(capsys, str(path), *options)
    check_standard(result)
    assert result["path"] == str(path)
    forced = cli_json(capsys, str(path), *options, "--format", fmt)
    assert forced == result


def test_replay_tensorboard_rpl_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RPL-1: an event directory written by tensorboard's own writer replays the same."""
    summary = pytest.importorskip("tensorboard.summary")
    writer = summary.Writer(str(tmp_path / "tb"))
    for step, value in zip(STEPS, SCORES, strict=True):
        writer.add_scalar("eval/score", value, step)
    writer.close()
    result = cli_json(capsys, str(tmp_path / "tb"))
    assert result["metric"] == "eval/score"
    assert (result["stop_step"], result["best_step"], result["steps_saved"]) == (50, 30, 20)
    assert result["best_value"] == pytest.approx(0.5)


def test_replay_where_and_order_options_rpl_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-1: --where selects a run of a long table, --order log reads a restarted log."""
    rows = [("a", s, v) for s, v in zip(STEPS, SCORES, strict=True)] + [("b", 10, 0.9)]
    path = tmp_path / "long.csv"
    path.write_text("run,step,score\n" + "".join(f"{r},{s},{v}\n" for r, s, v in rows))
    check_standard(cli_json(capsys, str(path), "--metric", "score", "--where", "run=a"))
    log = tmp_path / "restart.jsonl"
    records = [(10, 9.0), (20, 8.0), *zip(STEPS, SCORES, strict=True)]
    log.write_text("".join(json.dumps({"step": s, "score": v}) + "\n" for s, v in records))
    check_standard(cli_json(capsys, str(log), "--order", "log"))


# -- RPL-2 ---------------------------------------------------------------------------------

values = st.lists(st.one_of(st.floats(-1, 1), st.just(math.nan)), min_size=1, max_size=30).filter(
    lambda vs: any(math.isfinite(v) for v in vs)
)


@given(values, st.integers(1, 3))
def test_replay_stops_where_the_monitor_stops_rpl_2(scores: list[float], k: int) -> None:
    """RPL-2: replay's stop is the first Stop of a monitor fed the same scores."""
    trace = Trace("t", "score", TraceFormat.CSV, range(len(scores)), scores)
    result = replay(trace, DeclineDetector(k))
    monitor = Monitor(DeclineDetector(k))
    first_stop = None
    for step, score in enumerate(scores):
        verdict = monitor.observe("x", step, score)
        if verdict.stopped:
            first_stop = verdict
            break
    if first_stop is not None and first_stop.step == len(scores) - 1:
        assert result.fired_at_end and not result.stopped  # RPL-9: a last-step fire is no stop
        first_stop = None
    if first_stop is None:
        assert not result.stopped and result.steps_saved == 0
        assert result.best_step == result.curve_best_step
    else:
        assert result.stop_step == first_stop.step
        assert (result.best_step, result.best_value) == (
            first_stop.best_step,
            first_stop.best_score,
        )
    assert result.regret is not None and result.regret >= 0


# -- RPL-3 ---------------------------------------------------------------------------------


def test_min_mode_counts_a_rise_as_a_decline_rpl_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-3: with --mode min, two rises of eval_loss stop the run at the lowest loss."""
    losses = [2.0, 1.5, 1.2, 1.3, 1.4, 1.0]
    state = {"log_history": [{"step": 10 * (i + 1), "eval_loss": v} for i, v in enumerate(losses)]}
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(state))
    low = cli_json(capsys, str(path), "--metric", "eval_loss", "--mode", "min")
    assert (low["stopped"], low["stop_step"], low["best_step"], low["best_value"]) == (
        True,
        50,
        30,
        1.2,
    )
    assert low["curve_best_value"] == 1.0 and low["regret"] == pytest.approx(0.2)
    high = cli_json(capsys, str(path), "--metric", "eval_loss", "--mode", "max")
    assert high["stopped"] is True and high["stop_step"] == 30  # two falls in max mode
    auto = cli_json(capsys, str(path), "--metric", "eval_loss")  # RPL-9: auto picks min
    assert (auto["mode"], auto["stop_step"]) == ("min", 50)


# -- RPL-4 ---------------------------------------------------------------------------------


def test_detector_names_rpl_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RPL-4: evalstop uses --k; never never stops; stopat fires at a fraction of the run."""
    path, options = make_files(tmp_path)["csv"]
    k3 = cli_json(capsys, str(path), *options, "--k", "3")
    assert k3["stopped"] is False and k3["detector"] == "evalstop(k=3)"
    assert (k3["best_step"], k3["best_value"], k3["steps_saved"]) == (60, 0.6, 0)
    never = cli_json(capsys, str(path), *options, "--detector", "never")
    assert never["stopped"] is False and never["detector"] == "never"
    stopat = cli_json(capsys, str(path), *options, "--detector", "stopat")
    assert stopat["stop_step"] == 50  # the first step >= 0.65 * 70
    half = cli_json(capsys, str(path), *options, "--detector", "stopat", "--fraction", "0.5")
    assert half["stop_step"] == 40 and half["detector"] == "stopat-0.5"
    assert make_detector("stopat", fraction=0.5) == StopAtProgress(0.5)
    with pytest.raises(
        ValueError, match="bocpd, divergence, evalstop, ewma, kl-budget, learned, lossp"
    ):
        make_detector("oracle")


def test_lossplateau_watches_the_metric_or_the_loss_metric_rpl_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-4: lossplateau on the metric itself, or on --loss-metric at the same steps."""
    path, options = make_files(tmp_path)["csv"]
    own = cli_json(capsys, str(path), *options, "--detector", "lossplateau")
    # Best 0.5 at 30, no improvement at 40, 50; 0.6 at 60 improves; 70 is stale once.
    assert own["stopped"] is False and own["detector"] == LossPlateau().name
    loss = cli_json(
        capsys, str(path), *options, "--detector", "lossplateau", "--loss-metric", "loss"
    )
    assert loss["stopped"] is False  # 1/step keeps falling by more than 1%
    plateau = Trace("t", "loss", TraceFormat.CSV, STEPS, [1.0] * 7)
    trace = Trace("t", "score", TraceFormat.CSV, STEPS, SCORES)
    result = replay(trace, LossPlateau(), loss=plateau)
    assert result.stop_step == 40  # three evaluations without improvement after the first


# -- RPL-5 ---------------------------------------------------------------------------------


def test_result_fields_without_a_stop_rpl_5() -> None:
    """RPL-5: without a stop the kept checkpoint is the run's best and nothing is saved."""
    trace = Trace("t", "score", TraceFormat.CSV, [0, 5, 9], [0.1, 0.9, 0.8])
    result = replay(trace)
    assert not result.stopped and result.stop_step is None
    assert (result.best_step, result.best_value, result.steps_saved, result.regret) == (
        5,
        0.9,
        0,
        0.0,
    )
    assert (result.n_evals, result.last_step) == (3, 9)


def test_nad10_replay_keeps_the_noise_aware_level_checkpoint() -> None:
    """NAD-10, RPL-9: replay keeps the checkpoint the noise-aware level keep chooses."""
    from evalstop.core.noise_aware import NoiseAwareDetector

    steps = [1000 + 10 * i for i in range(30)]
    values = [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, *[1.2] * 5, *[1.2 - 0.3 * i for i in range(1, 19)]]
    trace = Trace("t", "score", TraceFormat.CSV, steps, values)
    best = replay(trace, NoiseAwareDetector(keep="best"), mode="max")
    level = replay(trace, NoiseAwareDetector(keep="level", keep_memory=0.2), mode="max")
    assert best.stopped and level.stopped and best.stop_step == level.stop_step
    assert (best.kept_step, best.kept_value) == (1030, 2.0)
    assert (level.kept_step, level.kept_value) == (1110, 1.2)


def test_rule_firing_before_any_finite_value_keeps_nothing_rpl_5() -> None:
    """RPL-5: stopat firing on a NaN checkpoint keeps nothing (null best, null regret)."""
    trace = Trace("t", "score", TraceFormat.CSV, [0, 5, 10], [math.nan, math.nan, 0.5])
    result = replay(trace, StopAtProgress(0.5))
    assert result.stop_step == 5 and result.best_step is None and result.regret is None


# -- RPL-6 ---------------------------------------------------------------------------------


def test_json_one_object_or_a_list_rpl_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-6: one file gives one JSON object with the documented fields and types."""
    csv_path, _ = make_files(tmp_path)["csv"]
    one = cli_json(capsys, str(csv_path), "--metric", "score")
    assert isinstance(one, dict)
    for key, kind in [
        ("stopped", bool),
        ("best_step", int),
        ("best_value", float),
        ("n_evals", int),
        ("stop_step", int),
    ]:
        assert isinstance(one[key], kind), key


def test_json_list_for_several_files_rpl_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-6: several PATHs give a list of objects, each naming its path, in order."""
    first = tmp_path / "a.csv"
    second = tmp_path / "b.csv"
    first.write_text("step,score\n1,0.5\n2,0.4\n3,0.3\n4,0.2\n")
    second.write_text("step,score\n1,0.1\n2,0.2\n")
    results = cli_json(capsys, str(first), str(second))
    assert [r["path"] for r in results] == [str(first), str(second)]
    assert [r["stopped"] for r in results] == [True, False]
    assert results[1]["stop_step"] is None


# -- RPL-7 ---------------------------------------------------------------------------------


def test_table_output_rpl_7(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RPL-7: a title naming detector and mode, a header, one row per file."""
    path, options = make_files(tmp_path)["csv"]
    code, out, err = cli(capsys, str(path), *options)
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0] == "replay: evalstop(k=2), mode max"
    assert lines[1].split() == [
        "file",
        "metric",
        "evals",
        "stop",
        "step",
        "best",
        "step",
        "best",
        "steps",
        "saved",
        "regret",
        "regret",
        "/",
        "gain",
        "stop",
    ]
    row = lines[3].split()
    assert row[:8] == [str(path), "score", "5", "50", "30", "0.5", "20", "0.1"]
    assert row[9] in ("harmful", "benign")
    code, out, _ = cli(capsys, str(path), *options, "--detector", "never")
    assert out.splitlines()[3].split()[3] == "-"


# -- RPL-8 ---------------------------------------------------------------------------------


def error_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    good = tmp_path / "good.csv"
    good.write_text("step,score\n1,0.5\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    broken = tmp_path / "broken.json"
    broken.write_text('{"log_history": [')
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("step,score\n1,2,3\n")
    missing = tmp_path / "missing.csv"
    return [
        ([str(missing)], str(missing)),
        ([str(empty)], str(empty)),
        ([str(broken)], str(broken)),
        ([str(ragged)], str(ragged)),
        ([str(good), "--metric", "reward"], str(good)),
        ([str(good), str(missing)], str(missing)),
        ([str(good), "--where", "nonsense"], "--where"),
        ([str(good), "--k", "0"], "--k"),
        ([str(good), "--fraction", "1.5"], "--fraction"),
        ([str(good), "--detector", "oracle"], "--detector"),
    ]


def test_errors_are_one_line_and_exit_2_rpl_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-8, CLI-1: exit 2, one stderr line naming the file, no traceback, no output."""
    for argv, named in error_cases(tmp_path):
        code, out, err = cli(capsys, *argv)
        assert code == 2, argv
        assert out == "", argv
        assert err.count("\n") == 1 and err.startswith("evalstop: error: "), err
        assert named in err and "Traceback" not in err


def test_metric_error_lists_the_available_metrics_rpl_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-8: a missing metric names the file and lists what it holds."""
    path = tmp_path / "m.csv"
    path.write_text("step,acc,kl\n1,0.5,0.1\n")
    code, _, err = cli(capsys, str(path), "--metric", "reward")
    assert code == 2
    assert (
        err == f"evalstop: error: {path}: metric 'reward' not found; available metrics: acc, kl\n"
    )


def test_no_traceback_from_the_real_process_rpl_8(tmp_path: Path) -> None:
    """RPL-8: the installed entry point exits 2 with one line for an unreadable file."""
    missing = tmp_path / "nope.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "evalstop.cli", "replay", str(missing)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == f"evalstop: error: {missing}: cannot read: No such file or directory\n"


# -- real traces -----------------------------------------------------------------------------


def test_replay_real_par_vanilla_rpl_1(capsys: pytest.CaptureFixture[str]) -> None:
    """RPL-1, RPL-5: PAR's vanilla PPO win rate stops two evals after its peak."""
    path = REAL / "par_ppo_gemma2-2b_ultrafb_proxy_vs_winrate.csv"
    result = cli_json(capsys, str(path), "--metric", "winrate", "--where", "curve=Vanilla")
    assert (result["stop_step"], result["best_step"], result["best_value"]) == (16200, 6480, 0.629)
    assert result["regret"] == 0.0 and result["steps_saved"] == 29160 - 16200


def test_replay_real_files_together_rpl_6(capsys: pytest.CaptureFixture[str]) -> None:
    """RPL-6: several real files in one call (same metric name) give one object each."""
    results = cli_json(
        capsys,
        str(REAL / "rhe_llama3b_f_g_Hard_heldout_f_g.json"),
        str(REAL / "rhe_llama3b_g_Easy_heldout_f_g.json"),
        "--metric",
        "avg_g",
        "--mode",
        "max",
    )
    assert [Path(r["path"]).name for r in results] == [
        "rhe_llama3b_f_g_Hard_heldout_f_g.json",
        "rhe_llama3b_g_Easy_heldout_f_g.json",
    ]
    assert results[1]["n_evals"] == 2 and results[1]["stopped"] is False


def test_rpl9_last_point_fire_regret_and_knobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-9: a fire at the last step is no stop; regret over the gain; knobs build noise-aware."""
    path = tmp_path / "late.csv"
    path.write_text("step,score\n1,0.1\n2,0.5\n3,0.4\n4,0.3\n")  # k=2 fires at the last step
    late = cli_json(capsys, str(path))
    assert (late["stopped"], late["fired_at_end"], late["stop_step"]) == (False, True, None)
    assert (late["kept_step"], late["kept_value"]) == (4, 0.3)
    assert late["relative_regret"] == pytest.approx(0.5) and late["stop_class"] == "none"
    stopped = cli_json(capsys, str(path), "--k", "1")
    assert (stopped["stop_step"], stopped["kept_step"], stopped["stop_class"]) == (3, 2, "benign")
    knobbed = cli_json(capsys, str(path), "--detector", "noise-aware", "--warmup-evals", "2")
    assert knobbed["detector"] == "noise-aware(z=2,memory=0.3,warmup=2)"
    code, _, err = cli(capsys, str(path), "--detector", "evalstop", "--warmup-evals", "3")
    assert code == 2 and "--warmup-evals" in err and "noise-aware" in err
    delta = cli_json(capsys, str(path), "--k", "1", "--min-delta", "0.2")  # DET-1: drops of 0.1
    assert delta["detector"] == "evalstop(k=1,min_delta=0.2)" and not delta["stopped"]
    code, _, err = cli(capsys, str(path), "--detector", "noise-aware", "--warmup-evals", "-1")
    assert code == 2 and "warmup_evals" in err


def test_replay_tensorboard_log_directory_rpl_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RPL-1, TRC-11: a logdir/<run>/events... directory is replayed run by run."""
    summary = pytest.importorskip("tensorboard.summary")
    curves = {"a": [0.1, 0.5, 0.4, 0.3, 0.2], "b/nested": [0.1, 0.2, 0.3, 0.4, 0.5]}
    for run, values in curves.items():
        writer = summary.Writer(str(tmp_path / "logs" / run))
        for step, value in enumerate(values, 1):
            writer.add_scalar("eval/score", value, 10 * step)
        writer.close()
    results = cli_json(capsys, str(tmp_path / "logs"), "--metric", "eval/score")
    assert [r["path"] for r in results] == [str(tmp_path / "logs" / run) for run in curves]
    assert [r["stop_step"] for r in results] == [40, None]
    with pytest.raises(EmptyTraceError, match="log directory of 2 runs"):
        read_trace(tmp_path / "logs", "eval/score")
