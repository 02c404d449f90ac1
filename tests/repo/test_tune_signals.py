"""SIG-9: the protocol that chose the multi-signal defaults, checked against its committed
output and its own rule."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

from builders import load_script
from evalstop.core.divergence import DivergenceDetector
from evalstop.core.registry import DEV_PICK, make_detector
from evalstop.core.regret import RegretSummary

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "tune_signals.py"
OUT = SCRIPT.with_suffix(".out")
DEFAULT_SCRIPT = ROOT / "docs" / "scripts" / "tune_default.py"
DEFAULT_OUT = DEFAULT_SCRIPT.with_suffix(".out")


def script(path: Path = SCRIPT, name: str = "tune_signals") -> ModuleType:
    return load_script(path, name)


def summary(recall: float, harmful: float, floored: float) -> RegretSummary:
    nan = math.nan
    return RegretSummary(
        10, 5, 5, 0, 0, 0, 0, recall, harmful, 0.0, nan, nan, nan, nan, nan, floored
    )


def test_sig9_the_code_defaults_are_the_ones_the_script_chose() -> None:
    """SIG-9: each `chosen NAME: DETECTOR` line of tune_signals.py's committed output names the
    registry's default of NAME for ewma, kl-budget and bocpd; since issue 26's fourth round
    divergence's default and DEV_PICK's (the candidate SIG-11 guards) are those of
    tune_default.py's committed output (`chosen divergence:`, `chosen pick:`)."""
    text = OUT.read_text(encoding="utf-8")
    chosen = dict(re.findall(r"^chosen ([a-z-]+): (.+)$", text, flags=re.MULTILINE))
    assert set(chosen) == {"ewma", "divergence", "kl-budget", "bocpd", "default"}
    for name in ("ewma", "kl-budget", "bocpd"):
        assert make_detector(name).name == chosen[name]
    text = DEFAULT_OUT.read_text(encoding="utf-8")
    chosen = dict(re.findall(r"^chosen ([a-z-]+): (.+)$", text, flags=re.MULTILINE))
    assert set(chosen) == {"divergence", "pick"}
    assert make_detector("divergence").name == chosen["divergence"]
    assert make_detector(DEV_PICK).name == chosen["pick"]


def test_sig9_tune_default_rule_and_data() -> None:
    """SIG-9: (fourth round) a point that meets the goal with margins at every density wins
    over any that does not, the lowest mean floored regret among such; with none, the largest
    worst slack, ties within 0.5 points to the lower floored regret; the script reads the dev
    split only, tunes on seeds 0-2999 and never names the test split; its grid pins every
    field it does not vary."""
    module = script(DEFAULT_SCRIPT, "tune_default")
    met = {10: summary(0.93, 0.03, 0.04), 20: summary(0.95, 0.02, 0.044)}
    short = {10: summary(0.99, 0.0, 0.01), 20: summary(0.91, 0.0, 0.01)}
    assert module.with_margin(met) and not module.with_margin(short)
    assert math.isclose(module.slack(short), 1.0)
    a: Any = (make_detector("ewma"), met, [])
    b: Any = (make_detector("bocpd"), short, [])
    assert module.choose([b, a]) is a
    c: Any = (make_detector("kl-budget"), {10: summary(0.89, 0.0, 0.01)}, [])
    d: Any = (make_detector("never"), {10: summary(0.887, 0.0, 0.005)}, [])
    e: Any = (make_detector("stopat"), {10: summary(0.95, 0.07, 0.005)}, [])
    assert module.choose([c, d, e]) is d  # within 0.5 points of c's slack, lower regret
    source = DEFAULT_SCRIPT.read_text(encoding="utf-8")
    assert module.SPLIT == "dev" and module.TUNING == 3000
    assert not re.search(r"""["']test["']|1_?000_?000""", source)
    every = {f.name for f in attrs.fields(DivergenceDetector)}
    assert set(module.FIXED) | {"z", "side_z"} == every
    assert module.PREVIOUS.name == (
        "divergence(z=1.25,side_z=2,fallback_z=3,signal=proxy_reward,memory=0.3,warmup=5,"
        "stall=0.1/4/0.5)"
    )


def test_sig9_the_rule_and_the_data() -> None:
    """SIG-9: harmful > 5% at any density is inadmissible; the highest mean recall wins, ties
    within a point go to the lower floored regret; with none admissible, the lowest highest
    harmful rate; the script reads the dev split and never names the test split."""
    module = script()
    a: Any = (make_detector("ewma"), {10: summary(0.9, 0.01, 0.2), 20: summary(0.9, 0.06, 0.2)})
    b: Any = (make_detector("bocpd"), {10: summary(0.8, 0.01, 0.1), 20: summary(0.8, 0.02, 0.1)})
    c: Any = (
        make_detector("kl-budget"),
        {10: summary(0.805, 0.0, 0.05), 20: summary(0.8, 0.0, 0.05)},
    )
    assert module.choose([a, b]) is b
    assert module.choose([a, b, c]) is c
    assert module.choose([a]) is a
    source = SCRIPT.read_text(encoding="utf-8")
    assert module.SPLIT == "dev"
    assert not re.search(r"""["']test["']|1_?000_?000""", source)


LEARNED_SCRIPT = ROOT / "docs" / "scripts" / "tune_learned.py"
LEARNED_OUT = LEARNED_SCRIPT.with_suffix(".out")


def test_sig17_the_shipped_weights_are_the_ones_the_fit_printed() -> None:
    """SIG-17: learned's WEIGHTS and BIAS are the `WEIGHTS = ...` and `BIAS = ...` lines of
    tune_learned.py's committed output, the threshold is 0, and FIT names the tuning seeds."""
    from evalstop.core import learned

    text = LEARNED_OUT.read_text(encoding="utf-8")
    weights = re.search(r"^WEIGHTS = (\(.+\))$", text, flags=re.MULTILINE)
    bias = re.search(r"^BIAS = (.+)$", text, flags=re.MULTILINE)
    assert weights is not None and bias is not None
    assert tuple(float(v) for v in weights[1].strip("()").split(", ")) == learned.WEIGHTS
    assert float(bias[1]) == learned.BIAS
    assert learned.THRESHOLD == 0.0
    assert learned.FIT.startswith("dev0-2999@")


def test_sig17_the_fit_reads_the_dev_split_only() -> None:
    """SIG-17: the fit tunes on dev seeds 0-2999 through tune_default.py's runs, never names
    the other split, the corpus or the supervised curves (nor does its planned-length
    what-if); its starts are the four of the spec; its objective is the worst slack plus 0.05
    times the capped slacks."""
    module = script(DEFAULT_SCRIPT, "tune_default")
    assert module.SPLIT == "dev"
    fit = script(LEARNED_SCRIPT, "tune_learned")
    source = LEARNED_SCRIPT.read_text(encoding="utf-8")
    names = r"""["']test["']|1_?00[0-9]_?[0-9]{3}|healthy-supervised|real_scores|evalstop\.data"""
    assert not re.search(names, source)
    information = LEARNED_SCRIPT.with_name("tune_learned_progress.py").read_text(encoding="utf-8")
    assert not re.search(names, information)
    assert fit.TUNING == 3000 and fit.STEPS == 3000
    assert fit.STARTS == ((1.0, 0.25), (0.1, 0.5), (10.0, 0.0), (1.0, 0.75))
    cells = {10: (0.95, 0.01, 0.02), 20: (0.91, 0.04, 0.06)}
    assert fit.slacks(cells) == pytest.approx([5.0, 4.0, 3.0, 1.0, 1.0, -1.0])
    assert fit.objective(cells) == pytest.approx(-1.0 + 0.05 * (3.0 + 3.0 + 3.0 + 1 + 1 - 1))


def test_sig17_the_scored_range_and_the_decision_agree_with_the_registry() -> None:
    """SIG-17, SIG-11: the round's page scored the range the spec fixed (seeds 1,002,000 to
    1,003,099, never the rounds-3/4 range), and its decision is the registry's: `learned` is
    DEFAULT_DETECTOR exactly when the page says it met the goal and passed the guard."""
    from evalstop.core.registry import DEFAULT_DETECTOR

    page = (ROOT / "docs" / "gym-round5.md").read_text(encoding="utf-8")
    spec = (ROOT / "spec" / "signals.md").read_text(encoding="utf-8")
    assert "seeds 1,002,000 to 1,003,099" in page and "1,002,000-1,003,099" in spec
    scorer = (ROOT / "docs" / "scripts" / "gym_round5.py").read_text(encoding="utf-8")
    assert "FIRST_SEED = 1_002_000" in scorer and "RUNS = 1100" in scorer
    adopted = "it becomes the one default" in page
    assert adopted == (DEFAULT_DETECTOR == "learned")
    assert "disagrees" not in page
