"""The Hugging Face adapter (spec ADP), driven by a real ``transformers.Trainer``.

Every test builds a tiny GPT-2 from a config (1 layer, 16 wide, 32 tokens: nothing is
downloaded) and trains it on random tokens on the CPU. The eval score comes from a
``compute_metrics`` that returns a scripted value for the current global step, so the curve's
peak and declines are known; the real ``Trainer`` runs the evaluations, calls the callback,
saves the checkpoints, rotates them and restores the best one. The tests skip without
transformers and torch (``pip install 'evalstop[hf]'``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from evalstop.adapters import BestCheckpoint, MetricFeed
from evalstop.core.detectors import LossPlateau, Never

NAN = math.nan
MISSING = None
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None

# The eval score at each evaluation (every 5 steps). MISSING: compute_metrics returns no score.
# With k=2: the best is step 15; declines at 20 and 35 (NaN at 25 and no score at 30 are
# skipped), so training stops at step 35 of 60.
EVERY, MAX_STEPS = 5, 60
PEAK: dict[int, float | None] = {
    5: 0.2,
    10: 0.4,
    15: 0.6,
    20: 0.5,
    25: NAN,
    30: MISSING,
    35: 0.45,
    **{step: 0.3 for step in range(40, MAX_STEPS + 1, EVERY)},
}
PEAK_STOP, PEAK_BEST = 35, BestCheckpoint(15, 0.6)
MONOTONE: dict[int, float | None] = {s: s / 100 for s in range(EVERY, MAX_STEPS + 1, EVERY)}


def checkpoint(folder: Path, step: int) -> Path:
    return folder / f"checkpoint-{step}"


def make_trainer(
    folder: Path,
    scores: Mapping[int, float | None],
    callback: Any,
    max_steps: int = MAX_STEPS,
    **arguments: Any,
) -> Any:
    """A real Trainer on a tiny GPT-2, evaluating and saving every ``EVERY`` steps."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=32,
        n_positions=8,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config)
    tokens = torch.randint(0, 32, (16, 8), generator=torch.Generator().manual_seed(0))
    data = [{"input_ids": row, "labels": row} for row in tokens]
    trainer: Any = None

    def compute_metrics(_prediction: Any) -> dict[str, float]:
        score = scores[trainer.state.global_step]
        return {} if score is None else {"score": score}

    options: dict[str, Any] = {
        "output_dir": str(folder),
        "max_steps": max_steps,
        "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 8,
        "learning_rate": 1e-3,
        "eval_strategy": "steps",
        "eval_steps": EVERY,
        "save_strategy": "steps",
        "save_steps": EVERY,
        "save_only_model": True,  # no optimizer state: faster (the resume test turns it off)
        "logging_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
        "dataloader_num_workers": 0,
    }
    options.update(arguments)
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(**options),
        train_dataset=data,
        eval_dataset=data[:8],
        compute_metrics=compute_metrics,
        callbacks=[callback],
    )
    return trainer


def weights(path: Path) -> dict[str, Any]:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    loaded: dict[str, Any] = safetensors_torch.load_file(str(path / "model.safetensors"))
    return loaded


def same_weights(model: Any, saved: dict[str, Any]) -> bool:
    torch = pytest.importorskip("torch")
    state = model.state_dict()
    return all(torch.equal(state[name].cpu(), tensor) for name, tensor in saved.items())


def eval_scores(trainer: Any) -> list[tuple[int, Any]]:
    return [(e["step"], e.get("eval_score")) for e in trainer.state.log_history if "eval_loss" in e]


@pytest.fixture
def callback_class() -> Any:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from evalstop.adapters.hf import EvalStopCallback

    return EvalStopCallback


@pytest.fixture
def trainer_log() -> Iterator[list[logging.LogRecord]]:
    """The records of the Trainer's own logger (transformers' loggers do not propagate)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign, assignment]
    target = logging.getLogger("transformers.trainer")
    target.addHandler(handler)
    yield records
    target.removeHandler(handler)


def test_adp7_stops_at_the_kth_decline_and_keeps_the_best(
    callback_class: Any, tmp_path: Path, trainer_log: list[logging.LogRecord]
) -> None:
    """ADP-7: the Trainer stops at step 35, the k-th consecutive decline; the best is step 15.

    Also ADP-3 (the NaN at step 25 and the evaluation without the metric at step 30 are
    skipped) and ADP-4 (best step and score). With metric_for_best_model unset the callback
    points state.best_model_checkpoint at checkpoint-15, which the Trainer therefore keeps
    through save_total_limit=2 rotation.
    """
    callback = callback_class("eval_score", mode="max", k=2)
    trainer = make_trainer(tmp_path, PEAK, callback, save_total_limit=2)
    trainer.train()
    assert trainer.state.global_step == PEAK_STOP < MAX_STEPS
    assert [step for step, _ in eval_scores(trainer)] == list(range(EVERY, PEAK_STOP + 1, EVERY))
    assert callback.stopped and callback.stop_step == PEAK_STOP
    assert callback.best == PEAK_BEST
    best = checkpoint(tmp_path, PEAK_BEST.step)
    assert callback.best_checkpoint == str(best)
    assert best.is_dir()
    assert trainer.state.best_model_checkpoint == str(best)
    assert trainer.state.best_metric == PEAK_BEST.score
    assert trainer.state.best_global_step == PEAK_BEST.step
    # Rotation kept the best and the latest only.
    kept = sorted(p.name for p in tmp_path.glob("checkpoint-*"))
    assert kept == [f"checkpoint-{PEAK_BEST.step}", f"checkpoint-{PEAK_STOP}"]
    # The last checkpoint's trainer state names the best one and holds the callback's state.
    saved = json.loads((checkpoint(tmp_path, PEAK_STOP) / "trainer_state.json").read_text())
    assert saved["best_model_checkpoint"] == str(best)
    assert saved["stateful_callbacks"]["EvalStopCallback"]["args"]["metric"] == "eval_score"
    # The kept checkpoint is a loadable model (a local folder: nothing is downloaded).
    transformers = pytest.importorskip("transformers")
    restored = transformers.GPT2LMHeadModel.from_pretrained(str(best))
    assert same_weights(restored, weights(best))
    assert not same_weights(trainer.model, weights(best))  # the run went on past it
    # ADP-12: the stop is logged once through the Trainer's logger, at WARNING.
    (stop,) = [r for r in trainer_log if "fired" in r.getMessage()]
    assert stop.levelno == logging.WARNING
    assert "evalstop(k=2) fired on 'eval_score' at step 35" in stop.getMessage()
    assert f"best step 15 (0.6), checkpoint {best}" in stop.getMessage()


def test_adp12_warns_once_when_evaluation_is_off(
    callback_class: Any, tmp_path: Path, trainer_log: list[logging.LogRecord]
) -> None:
    """ADP-12: with eval_strategy="no" the callback warns once; it cannot stop training."""
    callback = callback_class("eval_score", k=2)
    for _ in range(2):
        trainer = make_trainer(
            tmp_path, PEAK, callback, max_steps=5, eval_strategy="no", save_strategy="no"
        )
        trainer.train()
        assert trainer.state.global_step == 5
    warnings = [r for r in trainer_log if "evaluation is off" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_adp12_stop_file_stops_training_cleanly(
    callback_class: Any, tmp_path: Path, trainer_log: list[logging.LogRecord]
) -> None:
    """ADP-12: once the marker file exists, training stops at the end of that step."""
    marker = tmp_path / "evalstop-stop.json"
    callback = callback_class("eval_score", k=2, stop_file=marker)
    trainer = make_trainer(tmp_path / "run", MONOTONE, callback)

    class Writer(pytest.importorskip("transformers").TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 12:
                marker.write_text("{}")

    trainer.add_callback(Writer())
    trainer.train()
    assert trainer.state.global_step == 13  # the callback ran before the writer at step 12
    assert not callback.stopped
    assert callback.best == BestCheckpoint(10, 0.1)
    assert sum("exists, stopping" in r.getMessage() for r in trainer_log) == 1


def test_adp7_monotone_runs_to_max_steps(callback_class: Any, tmp_path: Path) -> None:
    """ADP-7: a score that never declines never stops the Trainer: it runs to max_steps."""
    callback = callback_class("score", k=2)  # "eval_" is tried when "score" is absent
    assert callback.mode == "max"
    trainer = make_trainer(tmp_path, MONOTONE, callback)
    trainer.train()
    assert trainer.state.global_step == MAX_STEPS
    assert not callback.stopped and callback.stop_step is None
    assert callback.best == BestCheckpoint(MAX_STEPS, MAX_STEPS / 100)
    assert callback.best_checkpoint == str(checkpoint(tmp_path, MAX_STEPS))
    assert trainer.state.best_model_checkpoint == callback.best_checkpoint


def test_adp8_load_best_model_at_end_restores_our_best(callback_class: Any, tmp_path: Path) -> None:
    """ADP-8: with the same metric and direction the Trainer restores EvalStop's best at the end.

    The Trainer tracks the best itself (it fails on an evaluation without its metric, so this
    curve has none); the callback leaves its state alone, and both name checkpoint-15.
    """
    scores = {**PEAK, 30: 0.45}  # 20: 0.5, 25: NaN, 30: 0.45: the second decline is at 30
    callback = callback_class("eval_score", mode="max", k=2)
    trainer = make_trainer(
        tmp_path,
        scores,
        callback,
        load_best_model_at_end=True,
        metric_for_best_model="score",
        greater_is_better=True,
        save_total_limit=2,
    )
    trainer.train()
    assert trainer.state.global_step == 30
    assert callback.best == PEAK_BEST
    best = checkpoint(tmp_path, PEAK_BEST.step)
    assert trainer.state.best_model_checkpoint == str(best) == callback.best_checkpoint
    assert trainer.state.best_metric == PEAK_BEST.score
    # The model in memory after train() is the best checkpoint's, not the last step's.
    assert same_weights(trainer.model, weights(best))
    assert not same_weights(trainer.model, weights(checkpoint(tmp_path, 30)))


def test_adp8_refuses_a_different_best(callback_class: Any, tmp_path: Path) -> None:
    """ADP-8: load_best_model_at_end on another metric or direction is refused at train begin."""
    callback = callback_class("eval_score", mode="max")
    trainer = make_trainer(
        tmp_path, MONOTONE, callback, load_best_model_at_end=True, metric_for_best_model="loss"
    )
    with pytest.raises(ValueError, match="metric_for_best_model"):
        trainer.train()
    assert trainer.state.global_step == 0


def test_adp8_resume_restores_the_decline_count(callback_class: Any, tmp_path: Path) -> None:
    """ADP-8: resumed with restore_callback_states_from_checkpoint, the count goes on.

    The first run ends at step 20 after the first decline; the resumed run stops at step 35,
    the second decline, which a fresh callback could not do (it would need two more).
    """
    first = make_trainer(
        tmp_path, PEAK, callback_class("eval_score", k=2), max_steps=20, save_only_model=False
    )
    first.train()
    resumed_callback = callback_class("eval_score", k=2)
    second = make_trainer(
        tmp_path,
        PEAK,
        resumed_callback,
        restore_callback_states_from_checkpoint=True,
        save_only_model=False,
    )
    second.train(resume_from_checkpoint=str(checkpoint(tmp_path, 20)))
    assert second.state.global_step == PEAK_STOP
    (restored,) = [cb for cb in second.callback_handler.callbacks if isinstance(cb, callback_class)]
    assert restored.stop_step == PEAK_STOP and restored.best == PEAK_BEST
    assert second.state.best_model_checkpoint == str(checkpoint(tmp_path, PEAK_BEST.step))


def test_adp7_new_run_starts_afresh_and_other_rules(callback_class: Any, tmp_path: Path) -> None:
    """ADP-7: a callback reused for a new run forgets the last one; min mode; any detector."""
    callback = callback_class("eval_score", k=2)
    make_trainer(tmp_path / "a", PEAK, callback).train()
    assert callback.stopped
    make_trainer(tmp_path / "b", MONOTONE, callback, max_steps=15).train()
    assert not callback.stopped and callback.best == BestCheckpoint(15, 0.15)
    assert callback_class().metric == "eval_loss" and callback_class().mode == "min"
    torch = pytest.importorskip("torch")
    assert MetricFeed("x", "max").find({"x": torch.tensor(0.25)}) == 0.25  # ADP-2: a torch scalar
    assert callback_class(detector=Never()).monitor.detector == Never()
    assert callback_class(detector=LossPlateau()).state()["args"]["k"] is None
    assert callback_class(k=3).state()["args"]["k"] == 3  # the k given, as given (ARC-8)
    with pytest.raises(ValueError, match="not both"):
        callback_class(k=2, detector=Never())


@pytest.mark.skipif(HAS_TRANSFORMERS, reason="transformers is installed: no stand-in")
def test_adp9_hf_adapter_without_transformers() -> None:
    """ADP-9: with no transformers, evalstop.adapters.hf imports and refuses to build."""
    from evalstop.adapters import hf

    with pytest.raises(ImportError, match=r"evalstop\[hf\]"):
        hf.EvalStopCallback()
