"""The decline rule written once (``evalstop.core.folds``), which fold applies to which detector
(``registry.in_place``) and the one registry table every list of detectors comes from."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.cli import build_parser
from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import (
    DeclineDetector,
    LossPlateau,
    Never,
    StopAtProgress,
    Watch,
    count_declines,
    improves,
    observe,
    start_watch,
)
from evalstop.core.folds import DeclineFold, DeclineState, decline_folder
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import NoiseAwareDetector, NoiseState
from evalstop.core.noise_fold import NoiseFold
from evalstop.core.registry import (
    DETECTOR_NAMES,
    DETECTOR_TYPES,
    DETECTORS,
    KNOBS,
    LIVE_DETECTORS,
    InPlace,
    alone,
    in_place,
    make_detector,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "evalstop"
SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.0, -0.0, 0.5, math.nan, math.inf, -math.inf]),
)


def reference(
    detector: DeclineDetector, steps_scores: list[tuple[int, float]]
) -> list[tuple[int, float | None, int, int | None, float | None, int | None]]:
    """The decline rule as spec DET-1 to DET-5 and DET-11 state it, written plainly (an
    oracle: no code of the package but the contract helpers count_declines and improves)."""
    declines, previous, evals = 0, None, 0
    best_step: int | None = None
    best: float | None = None
    fired: int | None = None
    out = []
    for step, score in steps_scores:
        if math.isfinite(score):
            if step >= detector.warmup_steps:
                limit: float | None = None if previous is None else previous - detector.min_delta
                declines, previous = count_declines(declines, limit, score), score
            evals += 1
            if improves(best, score):
                best_step, best = step, score
        if fired is None and declines >= detector.k:
            fired = step
        out.append((declines, previous, evals, best_step, best, fired))
    return out


@given(
    k=st.integers(1, 4),
    scores=st.lists(SCORES, max_size=30),
    min_delta=st.sampled_from([0.0, 0.5, 1.0]),
    warmup=st.sampled_from([0, 25, 100]),
)
def test_det10_the_one_decline_fold_is_the_rule_the_spec_states(
    k: int, scores: list[float], min_delta: float, warmup: int
) -> None:
    """DET-10, DET-1, DET-2, DET-3, DET-5, DET-11: decline_folder folds every report as the
    spec's rule does (a plain reference), and DeclineDetector.update, observe and the fold
    agree report by report."""
    detector = DeclineDetector(k, min_delta=min_delta, warmup_steps=warmup)
    steps_scores = [(10 * (i + 1), score) for i, score in enumerate(scores)]
    fold, state = decline_folder(detector), DeclineFold(start_watch(detector))
    watch = start_watch(detector)
    for (step, score), expected in zip(
        steps_scores, reference(detector, steps_scores), strict=True
    ):
        assert fold(state, step, score) == math.isfinite(score)
        got = (state.declines, state.previous, state.evals)
        assert repr((*got, state.best_step, state.best_score, state.fired_step)) == repr(expected)
        view = CheckpointView(1, JobKind.RLHF, 1, step, 0, score, math.nan, None, 0.5)
        watch = observe(detector, watch, view)
        assert repr(InPlace.watch(state)) == repr(watch)
        assert watch.rule == DeclineState(state.declines, state.previous)


def test_det12_in_place_gives_the_rows_fold_to_the_builtin_classes_only() -> None:
    """DET-12: in_place gives the decline fold to DeclineDetector and the noise-aware fold to
    NoiseAwareDetector, built from a watch; None to a subclass (which may change update) and
    to every other detector; alone is in_place of a single detector only."""

    @attrs.frozen(slots=True)
    class Laxer(DeclineDetector):
        def fired(self, state: DeclineState) -> bool:
            return state.declines > self.k

    decline, noise = in_place(DeclineDetector(3)), in_place(NoiseAwareDetector())
    assert decline is not None and decline.kind is DeclineFold
    assert noise is not None and noise.kind is NoiseFold
    watch = Watch(DeclineState(2, 0.5), 4, 30, 0.9, None)
    assert repr(InPlace.watch(decline.kind(watch))) == repr(watch)
    assert decline.fold(decline.kind(watch), 50, 0.1) and decline.kind(watch).fired_step is None
    fresh = start_watch(NoiseAwareDetector())
    assert repr(InPlace.watch(noise.kind(fresh))) == repr(fresh)
    assert isinstance(noise.kind(fresh).rule, NoiseState)
    for other in (Laxer(2), LossPlateau(), Never(), StopAtProgress(0.5), object()):
        assert in_place(other) is None  # type: ignore[arg-type]
    assert alone((DeclineDetector(2),)) is not None
    assert alone(()) is None
    assert alone((DeclineDetector(2), NoiseAwareDetector())) is None


@attrs.frozen
class KeepsLast:
    """A user detector with the optional kept() hook: it keeps the last report it saw."""

    name: str = "keeps-last"

    def initial(self) -> tuple[int, float] | None:
        return None

    def update(self, state: tuple[int, float] | None, obs: CheckpointView) -> tuple[int, float]:
        return obs.step, obs.eval_score

    def fired(self, state: tuple[int, float] | None) -> bool:
        return False

    def kept(self, state: tuple[int, float] | None) -> tuple[int, float] | None:
        return state


def test_det12_observe_keeps_what_the_kept_hook_says_for_any_detector() -> None:
    """DET-12, DET-4: observe names no detector class: any detector's kept() pair is the
    watch's best checkpoint; a detector without the hook keeps the best reported score."""
    views = [
        CheckpointView(1, JobKind.RLHF, i + 1, 10 * (i + 1), 0, score, math.nan, None, 0.5)
        for i, score in enumerate([0.2, 0.9, 0.4])
    ]
    hooked: Watch[Any] = start_watch(KeepsLast())
    plain = start_watch(LossPlateau())
    for view in views:
        hooked, plain = observe(KeepsLast(), hooked, view), observe(LossPlateau(), plain, view)
    assert (hooked.best_step, hooked.best_score) == (30, 0.4)
    assert (plain.best_step, plain.best_score) == (20, 0.9)


IDENTITY = re.compile(
    r"\b(?:type\([^()]*\) is(?: not)?|isinstance\([^()]*,)\s*\(?"
    r"(?:DeclineDetector|NoiseAwareDetector|EvalStop|Never|LossPlateau|StopAtProgress)\b"
)
ENTRY_POINT = "core/registry.py"
"""The one module that may name a built-in detector's or the wrapper's class to dispatch."""
LEAVING = {
    "adapters/hf.py": "reads DeclineDetector.k to save the callback's own k argument",
}
"""Modules excused, each with the reason (an entry goes when its line does)."""


def test_det12_no_module_but_the_entry_point_dispatches_on_a_detector_class() -> None:
    """DET-12, SYS-2: outside core/registry.py no module tells detectors (or EvalStop) apart
    by their class (``type(x) is DeclineDetector``, ``isinstance(x, NoiseAwareDetector)``)."""
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if str(path.relative_to(SRC)) not in {ENTRY_POINT, *LEAVING}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if IDENTITY.search(line)
    ]
    assert found == []
    assert IDENTITY.search("if type(detector) is DeclineDetector:")
    assert IDENTITY.search("isinstance(d, (NoiseAwareDetector, X))")
    assert (SRC / ENTRY_POINT).exists()


def test_sys2_every_list_of_detectors_is_derived_from_the_one_table() -> None:
    """SYS-2: each row builds its class by name, takes exactly its knobs and is offered live
    unless it needs the run's length; the names, live names, knobs and saved-state types are
    the table's, and so are the choices of replay's and watch's --detector."""
    assert tuple(row.name for row in DETECTORS) == DETECTOR_NAMES
    assert tuple(row.name for row in DETECTORS if row.live) == LIVE_DETECTORS
    assert "stopat" in DETECTOR_NAMES and "stopat" not in LIVE_DETECTORS
    assert set(KNOBS) == set().union(*(row.knobs for row in DETECTORS))
    assert dict(DETECTOR_TYPES) == {row.kind.__name__: row.kind for row in DETECTORS}
    values: dict[str, Any] = {"baseline": 0.5, "min_delta": 0.01}
    values |= {"warmup_evals": 2, "warmup_steps": 5}
    for row in DETECTORS:
        assert type(make_detector(row.name)) is row.kind
        taken = {knob: values[knob] for knob in row.knobs}
        assert type(make_detector(row.name, **taken)) is row.kind
        for knob in set(KNOBS) - row.knobs:
            with pytest.raises(ValueError, match="--" + knob.replace("_", "-")):
                make_detector(row.name, **{knob: values[knob]})
        assert (in_place(make_detector(row.name)) is not None) == (row.fold is not None)
    parser = build_parser()
    choices = {
        name: next(a.choices for a in sub._actions if "--detector" in a.option_strings)
        for name, sub in parser._subparsers._group_actions[0].choices.items()  # type: ignore[union-attr]
        if name in ("replay", "watch")
    }
    assert tuple(choices["replay"]) == DETECTOR_NAMES
    assert tuple(choices["watch"]) == LIVE_DETECTORS


def test_mon18_the_install_is_pure_python_with_no_code_for_one_build_only() -> None:
    """MON-18: retired: no build hook compiles anything, and no module of the package exists
    only for a compiled build (the per-call observer, the slot builders, the build list)."""
    root = SRC.parents[1]
    assert not (root / "hatch_build.py").exists()
    assert "hooks.custom" not in (root / "pyproject.toml").read_text(encoding="utf-8")
    for gone in ("live/fast.py", "live/slots.py", "live/native.py"):
        assert not (SRC / gone).exists(), gone
    assert not any("EXTENSION_SUFFIXES" in p.read_text(encoding="utf-8") for p in SRC.rglob("*.py"))
