"""The Lightning callback (spec ADP-11), with a real ``lightning.Trainer`` on a tiny CPU model.

The model is one ``Linear`` layer on random data; its ``validation_step`` logs a scripted
``val_score`` per epoch, so the curve's peak and declines are known. Skips without lightning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

from evalstop.adapters import MissingMetricError  # noqa: E402
from evalstop.adapters.lightning import EvalStopCallback  # noqa: E402

# val_score after each epoch (global step = 4 * epoch, 4 batches an epoch). Best at epoch 2
# (step 12); declines at epochs 3 and 4 -> stop at step 20 (k=2), epoch 4 of 10.
PEAK = [0.2, 0.4, 0.6, 0.5, 0.45, 0.3, 0.2, 0.1, 0.1, 0.1]
BATCHES = 4


class Tiny(pl.LightningModule):  # type: ignore[misc, name-defined]
    def __init__(self, curve: list[float]) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.curve = curve

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_score", torch.tensor(self.curve[self.current_epoch]))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _loader() -> Any:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8 * BATCHES, 4, generator=generator)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    return torch.utils.data.DataLoader(data, batch_size=8)


def _fit(tmp_path: Path, curve: list[float], callback: EvalStopCallback) -> Any:
    checkpoint = pl.callbacks.ModelCheckpoint(
        dirpath=tmp_path, monitor="val_score", mode="max", save_top_k=1
    )
    trainer = pl.Trainer(
        max_epochs=len(curve),
        callbacks=[callback, checkpoint],
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path,
    )
    trainer.fit(Tiny(curve), _loader(), _loader())
    return trainer


def test_adp11_peak_stops_at_the_trigger_and_keeps_the_best(tmp_path: Path) -> None:
    """ADP-11: stop at step 20; ModelCheckpoint keeps step 12, the callback's best."""
    callback = EvalStopCallback("val_score", k=2)
    trainer = _fit(tmp_path, PEAK, callback)
    assert callback.stop_step == 20
    assert trainer.global_step == 20
    assert callback.best is not None
    assert callback.best.step == 12
    assert abs(callback.best.score - 0.6) < 1e-6  # logged as a float32 tensor
    assert callback.best_checkpoint is not None
    assert "step=12" in Path(callback.best_checkpoint).name


def test_adp11_monotone_runs_to_the_end(tmp_path: Path) -> None:
    """ADP-11: a metric that never declines twice running lets the Trainer finish."""
    callback = EvalStopCallback("val_score", k=2)
    trainer = _fit(tmp_path, [0.1 * i for i in range(6)], callback)
    assert not callback.stopped
    assert trainer.global_step == 6 * BATCHES


def test_adp11_stop_file_and_saved_state(tmp_path: Path) -> None:
    """ADP-11: the marker stops the run after the batch that sees it; the monitor is saved
    in the callback's state_dict and restored from it."""
    marker = tmp_path / "evalstop-stop.json"
    marker.write_text("{}")
    callback = EvalStopCallback("val_score", k=2, stop_file=marker)
    trainer = _fit(tmp_path, PEAK, callback)
    assert trainer.global_step == 1
    assert not callback.stopped
    done = EvalStopCallback("val_score", k=2)
    _fit(tmp_path / "b", PEAK, done)
    restored = EvalStopCallback("val_score", k=2)
    restored.load_state_dict(done.state_dict())
    assert restored.stopped and restored.stop_step == 20
    assert restored.best == done.best


def test_adp15_a_misspelt_metric_raises_instead_of_training_to_the_end(tmp_path: Path) -> None:
    """ADP-15: strict (Lightning's default): a monitor the module never logs ends fit with
    MissingMetricError naming the logged metrics, at the first validation."""
    callback = EvalStopCallback("val_scroe", mode="max", k=2)
    with pytest.raises(MissingMetricError, match="val_score"):
        _fit(tmp_path, PEAK, callback)


def test_adp15_a_run_whose_score_is_nan_forever_is_stopped(tmp_path: Path) -> None:
    """ADP-15: check_finite (Lightning's default): a NaN score stops training at the first
    validation; with check_finite=False it is skipped and training runs to the end."""
    nan = float("nan")
    callback = EvalStopCallback("val_score", k=2)
    trainer = _fit(tmp_path, [nan] * 6, callback)
    assert callback.stopped and callback.stop_step == BATCHES == trainer.global_step
    assert callback.best is None
    lenient = EvalStopCallback("val_score", k=2, check_finite=False)
    trainer = _fit(tmp_path / "b", [nan] * 6, lenient)
    assert not lenient.stopped and trainer.global_step == 6 * BATCHES
