"""SIG-11: one default detector for every entry point, from one registry value."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalstop.adapters._core import MetricFeed
from evalstop.cli import main
from evalstop.core.registry import DEFAULT_DETECTOR, DETECTOR_TYPES, make_detector
from evalstop.live.monitor import Monitor

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = (
    "src/evalstop/live/monitor.py",
    "src/evalstop/adapters/_core.py",
    "src/evalstop/adapters/hf.py",
    "src/evalstop/adapters/lightning.py",
    "src/evalstop/adapters/optuna.py",
    "src/evalstop/adapters/ray_tune.py",
    "src/evalstop/cli/replay.py",
    "src/evalstop/cli/watch.py",
)


def default_constructions(source: str) -> list[str]:
    """The registered detector classes ``source`` builds with no argument (a default)."""
    names = "|".join(sorted(DETECTOR_TYPES))
    return re.findall(rf"\b({names})\(\)", source)


def test_sig11_every_entry_point_watches_with_the_registry_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIG-11: Monitor(), an adapter's feed and `evalstop replay` without a detector all use
    make_detector(DEFAULT_DETECTOR)."""
    expected = make_detector(DEFAULT_DETECTOR)
    assert Monitor().detector == expected
    assert MetricFeed("score").monitor.detector == expected
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        "".join(json.dumps({"step": s, "score": 0.1 * s}) + "\n" for s in range(1, 8)),
        encoding="utf-8",
    )
    assert main(["replay", str(log), "--metric", "score", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["detector"] == expected.name


def test_sig11_no_entry_point_names_a_detector_class_for_its_default() -> None:
    """SIG-11: no entry point module builds a registered detector class with no argument (the
    default comes from the registry); the scan finds one in a sample that does."""
    assert default_constructions("x = NoiseAwareDetector() if d is None else d") == [
        "NoiseAwareDetector"
    ]
    assert default_constructions("DeclineDetector(k)") == []
    for path in ENTRY_POINTS:
        assert default_constructions((ROOT / path).read_text(encoding="utf-8")) == [], path
