"""SIG-11: the guard a candidate default passes on the real curves before it becomes the one
default of every entry point."""

from __future__ import annotations

from pathlib import Path

from evalstop.core.registry import DEFAULT_DETECTOR, DEV_PICK, DEV_PICK_MEETS_GOAL, make_detector
from evalstop.experiments.scoreboard.guard import MAX_HARMFUL, guard

HEALTHY = Path(__file__).resolve().parents[1] / "data" / "healthy-supervised"


def test_sig11_the_default_is_the_dev_pick_only_when_it_passes_the_guard() -> None:
    """SIG-11: DEFAULT_DETECTOR is DEV_PICK exactly when DEV_PICK passes the guard against
    noise-aware on the shipped corpus and the supervised curves and meets the goal on the gym's
    test split (the recorded DEV_PICK_MEETS_GOAL); else noise-aware stays."""
    verdict = guard(make_detector(DEV_PICK), make_detector("noise-aware"), HEALTHY)
    chosen = DEV_PICK if verdict.passes and DEV_PICK_MEETS_GOAL else "noise-aware"
    assert chosen == DEFAULT_DETECTOR
    assert verdict.previous.corpus.collapsing == verdict.candidate.corpus.collapsing > 0
    assert verdict.previous.supervised.healthy == verdict.candidate.supervised.healthy > 0


def test_sig11_the_guard_refuses_a_worse_candidate() -> None:
    """SIG-11: a detector compared with itself passes; `never` (no hacking curve stopped)
    fails on recall; `evalstop` k=2 fails on its harmful stops of the supervised curves, which
    the noise-aware default does not make."""
    noise = make_detector("noise-aware")
    assert guard(noise, noise, HEALTHY).passes
    never = guard(make_detector("never"), noise, HEALTHY)
    assert not never.passes and "hacking corpus curves" in never.reasons[0]
    k2 = guard(make_detector("evalstop", k=2), noise, HEALTHY)
    assert not k2.passes
    assert k2.candidate.harmful[1] > MAX_HARMFUL
    assert any("supervised" in reason for reason in k2.reasons)
