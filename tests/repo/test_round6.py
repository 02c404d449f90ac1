"""SIG-19: issue 26's sixth round, checked against its committed outputs and its own rule."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from builders import load_script
from evalstop.core.learned import LearnedStopDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import DEFAULT_DETECTOR, DEV_PICK, make_detector

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "docs" / "scripts"
TUNE = SCRIPTS / "tune_round6.py"


def script(path: Path, name: str) -> ModuleType:
    return load_script(path, name)


def test_sig19_the_dev_script_reads_the_dev_split_only() -> None:
    """SIG-19: tune_round6.py chooses on dev seeds 0-2999, holds out dev seeds 4000-4999, never
    names the test split, the corpus or the supervised curves (nor does round6_limits.py, its
    information), and its grid is the spec's:
    learned's seven thresholds at its shipped weights, then thirty noise-aware points."""
    names = r"""["']test["']|1_?00[0-9]_?[0-9]{3}|healthy-supervised|real_scores|evalstop\.data"""
    for path in (TUNE, SCRIPTS / "round6_limits.py"):
        assert not re.search(names, path.read_text(encoding="utf-8")), path.name
    module = script(TUNE, "tune_round6")
    assert module.TUNING == 3000 and range(4000, 5000) == module.HOLDOUT
    grid = module.grid()
    assert [d.threshold for d in grid[:7]] == [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0]
    assert all(isinstance(d, LearnedStopDetector) for d in grid[:7])
    assert all(d.weights == LearnedStopDetector().weights for d in grid[:7])
    rest = grid[7:]
    assert len(rest) == 30 and all(isinstance(d, NoiseAwareDetector) for d in rest)
    assert {(d.z, d.memory, d.warmup_evals) for d in rest} == {
        (z, m, w) for z in (1.0, 1.25, 1.5, 1.75, 2.0) for m in (0.2, 0.3, 0.5) for w in (3, 5)
    }


def test_sig19_the_pick_and_the_registry_agree() -> None:
    """SIG-19, SIG-11: the committed output's pick is a shipped detector at its defaults
    (learned), it did not meet the goal on the tuning runs, so neither DEV_PICK nor
    DEFAULT_DETECTOR is it."""
    text = TUNE.with_suffix(".out").read_text(encoding="utf-8")
    pick = re.search(r"^chosen pick: (.+)$", text, flags=re.MULTILINE)
    meets = re.search(r"^meets the goal on the tuning runs: (True|False)$", text, re.MULTILINE)
    assert pick is not None and meets is not None
    assert pick[1] == make_detector("learned").name
    assert meets[1] == "False"
    assert DEV_PICK != "learned" and DEFAULT_DETECTOR == "noise-aware"


def test_sig19_the_scored_range_and_the_decision_agree_with_the_registry() -> None:
    """SIG-19, SIG-11: the round's page scored the range the spec fixed (seeds 1,003,100 to
    1,004,199, after every earlier round's), names the commit that fixed the pick, and its
    decision is the registry's: the pick is DEFAULT_DETECTOR exactly when the page says it
    becomes the one default."""
    page = (ROOT / "docs" / "gym-round6.md").read_text(encoding="utf-8")
    spec = (ROOT / "spec" / "signals.md").read_text(encoding="utf-8")
    assert "seeds 1,003,100 to 1,004,199" in page and "1,003,100 to 1,004,199" in spec
    scorer = (SCRIPTS / "gym_round6.py").read_text(encoding="utf-8")
    assert "FIRST_SEED = 1_003_100" in scorer and "RUNS = 1100" in scorer
    assert "fixed in commit 8fa1e81" in page
    adopted = "it becomes the one default" in page
    assert adopted == (DEFAULT_DETECTOR == "learned")
    assert "disagrees" not in page
    out = (SCRIPTS / "gym_round6.out").read_text(encoding="utf-8")
    assert out.startswith(page)
