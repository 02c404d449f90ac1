"""The new adapters' optional imports (spec ADP-9), checked with their libraries blocked."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = ("optuna", "lightning", "trl", "mlflow", "torch", "transformers", "ray")

CHECK = f"""
import sys
for name in {BLOCKED!r}:
    sys.modules[name] = None  # "import name" now raises ImportError
import evalstop, evalstop.adapters
from evalstop.adapters import lightning, optuna
from evalstop.watch import mlflow
for build, extra in [
    (lambda: optuna.EvalStopPruner(), "optuna"),
    (lambda: lightning.EvalStopCallback("val_score"), "lightning"),
    (lambda: mlflow.MlflowRuns("sqlite:///x.db", None, "score"), "mlflow"),
]:
    try:
        build()
    except ImportError as error:
        assert f"evalstop[{{extra}}]" in str(error), error
    else:
        raise AssertionError(extra)
print("ok")
"""


def test_adp9_new_adapters_import_without_their_libraries() -> None:
    """ADP-9: optuna, lightning and mlflow modules import without them; building names the
    extra to install."""
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_adp9_importing_evalstop_imports_no_new_framework() -> None:
    """ADP-9: import evalstop (and evalstop.adapters) imports none of the new libraries."""
    code = (
        "import sys, evalstop, evalstop.adapters\n"
        f"print(sorted(m for m in {BLOCKED!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
