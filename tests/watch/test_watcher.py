"""The watcher and its SQLite state (spec WCH), with in-memory sources and simulated crashes."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.core.detectors import DeclineDetector
from evalstop.live.monitor import Monitor
from evalstop.traces import Trace, TraceFormat, replay
from evalstop.watch.source import Point, Run, SourceError
from evalstop.watch.store import StateError, StateStore
from evalstop.watch.watcher import Watcher, watch

SETTINGS = {"metric": "score", "mode": "max", "detector": "evalstop-k2"}


class ListSource:
    """A growing list of points; the position is how many were read. Records each read."""

    def __init__(self, key: str, points: Sequence[tuple[int, float]] = ()) -> None:
        self.key = key
        self.points = list(points)
        self.asked: list[Any] = []
        self.broken: str | None = None

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        self.asked.append(position)
        if self.broken is not None:
            raise SourceError(self.broken)
        start = 0 if position is None else int(position)
        return [Point(*point) for point in self.points[start:]], len(self.points)


class Effects:
    def __init__(self) -> None:
        self.delivered: list[dict[str, Any]] = []
        self.problems: list[str] = []

    def deliver(self, body: dict[str, Any]) -> None:
        self.delivered.append(body)

    def report(self, line: str) -> None:
        self.problems.append(line)


def make_watcher(store: StateStore, effects: Effects) -> Watcher:
    return Watcher(
        store,
        "score",
        lambda: Monitor(DeclineDetector(2)),
        effects.deliver,
        effects.report,
    )


def run(name: str, *sources: ListSource) -> Run:
    return Run(name, name, None, tuple(sources))


def trace(points: Sequence[tuple[int, float]]) -> Trace:
    return Trace("a", "score", TraceFormat.JSONL, [s for s, _ in points], [v for _, v in points])


PEAK = [(10, 0.1), (20, 0.5), (30, 0.4), (40, 0.6), (50, 0.55), (60, 0.5), (70, 0.7)]


def test_decides_as_replay_and_once_wch_2(tmp_path: Path) -> None:
    """WCH-2: the decision is replay's; WCH-4: it is delivered once, then the run is left."""
    source = ListSource("a", PEAK)
    effects = Effects()
    with_store = StateStore(tmp_path / "s.db", SETTINGS)
    watcher = make_watcher(with_store, effects)
    assert watcher.poll([run("a", source)]) == 1
    assert watcher.poll([run("a", source)]) == 0
    expected = replay(trace(PEAK), DeclineDetector(2))
    (body,) = effects.delivered
    assert (body["stop_step"], body["best_step"], body["best_value"]) == (
        expected.stop_step,
        expected.best_step,
        expected.best_value,
    )
    assert body == {
        "run": "a",
        "name": "a",
        "path": None,
        "metric": "score",
        "detector": "evalstop(k=2)",
        "stop_step": 60,
        "best_step": 40,
        "best_value": 0.6,
        "evals": 6,
    }
    assert len(source.asked) == 1, "a decided run is read again"
    with_store.close()


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30),
    cuts=st.lists(st.integers(0, 30), max_size=6),
    restarts=st.lists(st.booleans(), min_size=7, max_size=7),
)
def test_any_split_into_polls_and_restarts_decides_as_replay_wch_2(
    values: list[float], cuts: list[int], restarts: list[bool]
) -> None:
    """WCH-2, WCH-3: however the points arrive and the watcher restarts, replay's decision."""
    points = [(10 * (i + 1), v) for i, v in enumerate(values)]
    # A live run's last step is unknown, so a fire at the last point is a stop for the watcher
    # but not for replay (RPL-9): replay one more point, which cannot change an earlier fire.
    beyond = (points[-1][0] + 10, 0.0)
    expected = replay(trace([*points, beyond]), DeclineDetector(2))
    source = ListSource("a")
    effects = Effects()
    with tempfile.TemporaryDirectory() as folder:
        store = StateStore(Path(folder) / "s.db", SETTINGS)
        watcher = make_watcher(store, effects)
        for cut, restart in zip([*sorted(cuts), len(points)], restarts, strict=False):
            source.points = points[: max(cut, len(source.points))]
            if restart:
                store.close()
                store = StateStore(Path(folder) / "s.db", SETTINGS)
                watcher = make_watcher(store, effects)
            watcher.poll([run("a", source)])
        source.points = points
        watcher.poll([run("a", source)])
        store.close()
    if expected.stopped and expected.stop_step != beyond[0]:
        (body,) = effects.delivered
        assert (body["stop_step"], body["best_step"], body["best_value"]) == (
            expected.stop_step,
            expected.best_step,
            expected.best_value,
        )
    else:
        assert effects.delivered == []


def test_positions_are_kept_and_nothing_is_read_twice_wch_3(tmp_path: Path) -> None:
    """WCH-3: a restarted watcher asks each source for what follows its saved position."""
    source = ListSource("a", PEAK[:3])
    effects = Effects()
    store = StateStore(tmp_path / "s.db", SETTINGS)
    make_watcher(store, effects).poll([run("a", source)])
    store.close()
    source.points = PEAK
    store = StateStore(tmp_path / "s.db", SETTINGS)
    make_watcher(store, effects).poll([run("a", source)])
    assert source.asked == [None, 3]
    assert [body["stop_step"] for body in effects.delivered] == [60]
    store.close()


def test_a_crash_inside_the_transaction_commits_nothing_wch_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-3: dying while recording leaves no position, no monitor, no decision behind."""
    source = ListSource("a", PEAK)
    store = StateStore(tmp_path / "s.db", SETTINGS)

    def die(*args: object) -> None:
        raise KeyboardInterrupt  # as a kill would, between two writes of one transaction

    monkeypatch.setattr(store, "record", die)
    with pytest.raises(KeyboardInterrupt):
        make_watcher(store, Effects()).poll([run("a", source)])
    assert store.position("a") is None
    assert store.monitor("a") is None
    store.close()
    effects = Effects()
    store = StateStore(tmp_path / "s.db", SETTINGS)
    make_watcher(store, effects).poll([run("a", source)])
    assert source.asked == [None, None]
    assert [body["stop_step"] for body in effects.delivered] == [60]
    store.close()


def test_undelivered_decisions_are_delivered_at_restart_wch_4(tmp_path: Path) -> None:
    """WCH-4: a watcher killed after the commit, before the effects, delivers at restart."""
    source = ListSource("a", PEAK)
    store = StateStore(tmp_path / "s.db", SETTINGS)

    def die(body: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    watcher = Watcher(store, "score", lambda: Monitor(DeclineDetector(2)), die, print)
    with pytest.raises(KeyboardInterrupt):
        watcher.poll([run("a", source)])
    store.close()
    effects = Effects()
    store = StateStore(tmp_path / "s.db", SETTINGS)
    make_watcher(store, effects).poll([])
    assert [body["run"] for body in effects.delivered] == ["a"]
    make_watcher(store, effects).poll([run("a", source)])
    assert len(effects.delivered) == 1
    assert [d["stop_step"] for d in store.decisions()] == [60]
    assert store.pending() == []
    store.close()


def test_a_kill_during_the_action_repeats_only_the_action_wch_4(tmp_path: Path) -> None:
    """WCH-4: announced before the kill, the decision is not announced again; the action is
    carried out at restart."""
    source = ListSource("a", PEAK)
    store = StateStore(tmp_path / "s.db", SETTINGS)
    effects = Effects()

    def die(body: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    watcher = Watcher(
        store, "score", lambda: Monitor(DeclineDetector(2)), effects.deliver, print, die
    )
    with pytest.raises(KeyboardInterrupt):
        watcher.poll([run("a", source)])
    store.close()
    acted: list[dict[str, Any]] = []
    store = StateStore(tmp_path / "s.db", SETTINGS)
    Watcher(
        store, "score", lambda: Monitor(DeclineDetector(2)), effects.deliver, print, acted.append
    ).poll([run("a", source)])
    assert [body["run"] for body in effects.delivered] == ["a"]
    assert [body["run"] for body in acted] == ["a"]
    assert store.pending() == []
    store.close()


def test_one_watcher_per_state_file_and_its_settings_wch_5(tmp_path: Path) -> None:
    """WCH-5: a second watcher, or one with other settings, is refused."""
    store = StateStore(tmp_path / "s.db", SETTINGS)
    with pytest.raises(StateError, match="another watcher"):
        StateStore(tmp_path / "s.db", SETTINGS)
    store.close()
    with pytest.raises(StateError, match="other settings"):
        StateStore(tmp_path / "s.db", {**SETTINGS, "metric": "loss"})
    (tmp_path / "junk.db").write_text("not sqlite " * 100)
    with pytest.raises(StateError, match="not a usable state file"):
        StateStore(tmp_path / "junk.db", SETTINGS)


def test_a_broken_source_is_reported_once_and_skipped_wch_6(tmp_path: Path) -> None:
    """WCH-6: one line per distinct problem; the other runs go on; retried at the next poll."""
    broken, good = ListSource("b", PEAK), ListSource("g", PEAK)
    broken.broken = "b: cannot read"
    effects = Effects()
    store = StateStore(tmp_path / "s.db", SETTINGS)
    watcher = make_watcher(store, effects)
    runs = [run("b", broken), run("g", good)]
    watcher.poll(runs)
    watcher.poll(runs)
    assert effects.problems == ["b: cannot read"]
    assert [body["run"] for body in effects.delivered] == ["g"]
    assert store.position("b") is None
    broken.broken = None
    watcher.poll(runs)
    assert [body["run"] for body in effects.delivered] == ["g", "b"]
    store.close()


def test_watch_loop_once_and_stopping_wch_7(tmp_path: Path) -> None:
    """WCH-7: once polls one time; a stop request ends the loop between polls."""
    store = StateStore(tmp_path / "s.db", SETTINGS)
    watcher = make_watcher(store, Effects())
    calls: list[int] = []

    def discover() -> list[Run]:
        calls.append(1)
        return []

    watch(watcher, discover, interval=0.01, once=True, stopping=lambda: False)
    assert len(calls) == 1
    watch(watcher, discover, interval=0.01, once=False, stopping=lambda: len(calls) >= 3)
    assert len(calls) == 3
    store.close()
