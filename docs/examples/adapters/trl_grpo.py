"""Stop a TRL GRPO run when its logged reward declines twice running
(``pip install 'evalstop[trl]'``).

TRL's trainers report rewards through logging, not evaluation, so the Hugging Face callback
reads them with ``event="log"``, by name: here ``rewards/<reward function>/mean``. To stay
small and offline, the model is a one-layer GPT-2 built from a config and the tokenizer a
word-level one built here; the reward function is scripted to rise and then fall. Run it with
``python docs/examples/adapters/trl_grpo.py [DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import transformers
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from trl import GRPOConfig, GRPOTrainer

from evalstop.adapters.hf import EvalStopCallback

folder = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate("abcdefghij ")}}
words = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
words.pre_tokenizer = pre_tokenizers.Split("", "isolated")
tokenizer = transformers.PreTrainedTokenizerFast(
    tokenizer_object=words, pad_token="<pad>", eos_token="<eos>"
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
transformers.GPT2LMHeadModel(config).save_pretrained(folder / "model")
tokenizer.save_pretrained(folder / "model")

REWARDS = [0.1, 0.3, 0.5, 0.6, 0.55, 0.5, 0.4, 0.3, 0.2, 0.1]
rounds: list[int] = []


def judge(completions: list[Any], **kwargs: Any) -> list[float]:
    """A scripted reward per generation round (a stand-in for a reward model)."""
    rounds.append(len(completions))
    return [REWARDS[len(rounds) - 1]] * len(completions)


evalstop = EvalStopCallback("rewards/judge/mean", k=2, event="log")
trainer = GRPOTrainer(
    model=str(folder / "model"),
    reward_funcs=judge,
    args=GRPOConfig(
        output_dir=str(folder / "out"),
        max_steps=len(REWARDS),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=4,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    ),
    train_dataset=Dataset.from_dict({"prompt": ["abc", "bcd", "cde", "def"] * 4}),
    callbacks=[evalstop],
)
trainer.train()
print(f"stopped at step {evalstop.stop_step} of {len(REWARDS)}; best {evalstop.best}")
