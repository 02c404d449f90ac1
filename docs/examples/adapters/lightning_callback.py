"""Stop a Lightning run at the second consecutive decline of its validation score and keep the
best checkpoint (``pip install 'evalstop[lightning]'``).

A one-layer model on random data; ``validation_step`` logs a held-out score that peaks at
epoch 3 and then declines. ``ModelCheckpoint`` watches the same metric, so the checkpoint it
keeps is the one EvalStop names. Run it with
``python docs/examples/adapters/lightning_callback.py [DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

import lightning.pytorch as pl
import torch

from evalstop.adapters.lightning import EvalStopCallback

SCORES = [0.2, 0.4, 0.6, 0.7, 0.65, 0.6, 0.5, 0.4, 0.3, 0.2]


class Model(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_score", SCORES[self.current_epoch])  # a stand-in for a real eval

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), 8)
folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
evalstop = EvalStopCallback("val_score", k=2)  # mode "max": the name does not end in "loss"
keep = pl.callbacks.ModelCheckpoint(dirpath=folder, monitor="val_score", mode="max")
trainer = pl.Trainer(
    max_epochs=len(SCORES),
    callbacks=[evalstop, keep],
    accelerator="cpu",
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
)
trainer.fit(Model(), data, data)
best = evalstop.best
assert best is not None
print(f"stopped at step {evalstop.stop_step} of {len(SCORES) * 4}; best step {best.step}", end="")
print(f" ({best.score:.3f}, logged as a float32 tensor)")
print(f"best checkpoint: {evalstop.best_checkpoint}")
