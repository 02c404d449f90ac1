"""TRL: the Hugging Face callback folds a metric the trainer logs (spec ADP-13).

A real ``trl.GRPOTrainer`` trains a 1-layer GPT-2 built from a config, with a word-level
tokenizer built here (nothing is downloaded; the model is saved to a temporary folder so that
TRL can build its reference model from it). The reward function returns a scripted reward per
generation round, so the logged ``rewards/scripted/mean`` rises, peaks at step 3 and declines:
with ``event="log"`` and k=2 the callback stops training at step 5. Skips without trl.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalstop.adapters import BestCheckpoint

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
datasets = pytest.importorskip("datasets")

CURVE = [0.1, 0.3, 0.5, 0.4, 0.35, 0.3, 0.2, 0.1, 0.1, 0.1]  # reward at steps 1..10
MAX_STEPS = 10


def tiny_model(folder: Path) -> str:
    """A tiny GPT-2 and its tokenizer, saved to ``folder``; returns the folder."""
    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate("abcdefghij ")}}
    model = tokenizers.models.WordLevel(vocab, unk_token="<pad>")
    raw = tokenizers.Tokenizer(model)
    raw.pre_tokenizer = tokenizers.pre_tokenizers.Split("", "isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", eos_token="<eos>"
    )
    config = transformers.GPT2Config(
        vocab_size=len(vocab),
        n_positions=32,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_adp13_grpo_reward_from_the_logs_stops_training(tmp_path: Path) -> None:
    """ADP-13: event="log" folds the logged reward by name; training stops at step 5."""
    from evalstop.adapters.hf import EvalStopCallback

    calls: list[int] = []

    def scripted(completions: list[Any], **kwargs: Any) -> list[float]:
        calls.append(len(completions))
        return [CURVE[len(calls) - 1]] * len(completions)

    callback = EvalStopCallback("rewards/scripted/mean", k=2, event="log")
    assert callback.mode == "max"
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=MAX_STEPS,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=4,
        logging_steps=1,
        beta=0.1,  # a reference model, so the KL is logged too
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=tiny_model(tmp_path / "model"),
        reward_funcs=scripted,
        args=args,
        train_dataset=datasets.Dataset.from_dict({"prompt": ["abc", "bcd", "cde", "def"] * 4}),
        callbacks=[callback],
    )
    trainer.train()
    assert trainer.state.global_step == 5 < MAX_STEPS
    assert callback.stop_step == 5
    assert callback.best == BestCheckpoint(3, 0.5)
    logged = [e for e in trainer.state.log_history if "kl" in e]
    assert [e["rewards/scripted/mean"] for e in logged] == pytest.approx(CURVE[:5])


def test_adp13_event_is_checked() -> None:
    """ADP-13: event is "evaluate" or "log"."""
    pytest.importorskip("transformers")
    from evalstop.adapters.hf import EvalStopCallback

    with pytest.raises(ValueError, match="event"):
        EvalStopCallback("reward", event="step")  # type: ignore[arg-type]
