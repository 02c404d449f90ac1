"""SIG-9: the protocol that chose the multi-signal defaults, checked against its committed
output and its own rule."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path
from types import ModuleType

from evalstop.core.registry import DEV_PICK, make_detector
from evalstop.core.regret import RegretSummary

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "tune_signals.py"
OUT = SCRIPT.with_suffix(".out")


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tune_signals", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tune_signals"] = module
    spec.loader.exec_module(module)
    return module


def summary(recall: float, harmful: float, floored: float) -> RegretSummary:
    nan = math.nan
    return RegretSummary(
        10, 5, 5, 0, 0, 0, 0, recall, harmful, 0.0, nan, nan, nan, nan, nan, floored
    )


def test_sig9_the_code_defaults_are_the_ones_the_script_chose() -> None:
    """SIG-9: each `chosen NAME: DETECTOR` line of the committed output names the registry's
    default of NAME, and `chosen default:` names DEV_PICK's (the candidate SIG-11 guards)."""
    text = OUT.read_text(encoding="utf-8")
    chosen = dict(re.findall(r"^chosen ([a-z-]+): (.+)$", text, flags=re.MULTILINE))
    assert set(chosen) == {"ewma", "divergence", "kl-budget", "bocpd", "default"}
    for name in ("ewma", "divergence", "kl-budget", "bocpd"):
        assert make_detector(name).name == chosen[name]
    assert make_detector(DEV_PICK).name == chosen["default"]


def test_sig9_the_rule_and_the_data() -> None:
    """SIG-9: harmful > 5% at any density is inadmissible; the highest mean recall wins, ties
    within a point go to the lower floored regret; with none admissible, the lowest highest
    harmful rate; the script reads the dev split and never names the test split."""
    module = script()
    a = (make_detector("ewma"), {10: summary(0.9, 0.01, 0.2), 20: summary(0.9, 0.06, 0.2)})
    b = (make_detector("bocpd"), {10: summary(0.8, 0.01, 0.1), 20: summary(0.8, 0.02, 0.1)})
    c = (make_detector("kl-budget"), {10: summary(0.805, 0.0, 0.05), 20: summary(0.8, 0.0, 0.05)})
    assert module.choose([a, b]) is b
    assert module.choose([a, b, c]) is c
    assert module.choose([a]) is a
    source = SCRIPT.read_text(encoding="utf-8")
    assert module.SPLIT == "dev"
    assert not re.search(r"""["']test["']|1_?000_?000""", source)
