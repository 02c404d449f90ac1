"""The adapters' core and the Ray Tune adapters (spec ADP), against a real local Ray.

The first tests exercise the framework-free core (``evalstop.adapters.MetricFeed``) and run
everywhere. The Ray tests need Ray Tune (``pip install 'evalstop[ray]'``) and skip without it:
they start a 2-CPU local Ray with no dashboard and no usage reporting, run small Tune
experiments whose function trainable reports a scripted eval score, and shut Ray down.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

import evalstop
from evalstop.adapters import BestCheckpoint, MetricFeed
from evalstop.adapters._core import optional_class
from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import DeclineDetector, LossPlateau, Never
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.monitor import Continue, Monitor, Reason, Stop

NAN = math.nan
HAS_RAY = importlib.util.find_spec("ray") is not None

# One trial's reports: a float is an evaluation (the trainable saves a checkpoint with it),
# None is a training-only report without the metric. Iterations count from 1.
#   iteration:  1    2    3     4    5    6    7     8    9    10
PEAK: list[float | None] = [0.1, 0.3, None, 0.5, 0.4, NAN, 0.35, 0.3, 0.2, 0.1]
MONOTONE: list[float | None] = [0.1 * i for i in range(1, 11)]
# With k=2: best at iteration 4 (0.5); declines at 5 and 7 (the NaN at 6 and the report
# without the metric at 3 are skipped), so the trial stops at iteration 7.
PEAK_STOP, PEAK_BEST = 7, BestCheckpoint(4, 0.5)


@attrs.frozen
class Patience:
    """A custom (not built-in) detector: fires after 3 evaluations, whatever the scores."""

    @property
    def name(self) -> str:
        return "patience-3"

    def initial(self) -> int:
        return 0

    def update(self, state: int, obs: CheckpointView) -> int:
        return state + 1

    def fired(self, state: int) -> bool:
        return state >= 3


def feed_all(feed: MetricFeed, run: str, curve: Sequence[float | None]) -> list[Any]:
    """Feed ``curve`` as results at steps 1, 2, ... (None: a result without the metric)."""
    return [
        feed.feed(run, step, {} if value is None else {"score": value})
        for step, value in enumerate(curve, start=1)
    ]


# -- the core: ADP-1 to ADP-4, no Ray needed --------------------------------------------------


def test_adp1_feed_decides_as_the_monitor() -> None:
    """ADP-1: a MetricFeed's verdicts are a Monitor's verdicts for the same observations."""
    feed = MetricFeed("score", k=2)
    reference = Monitor(DeclineDetector())
    for step, value in enumerate(PEAK, start=1):
        got = feed.feed("t", step, {} if value is None else {"score": value})
        if value is None:
            assert got is None
        else:
            assert got == reference.observe("t", step, value)
    assert feed.monitor.to_dict() == reference.to_dict()
    assert feed.monitor.detector == reference.detector


def test_adp1_detector_or_k() -> None:
    """ADP-1: k builds DeclineDetector(k); a detector replaces it; giving both is an error.

    With neither, the feed uses the noise-aware detector (MON-13).
    """
    assert MetricFeed("score", k=3).monitor.detector.name == "evalstop(k=3)"
    assert MetricFeed("score").monitor.detector == NoiseAwareDetector()
    assert MetricFeed("score", detector=Never()).monitor.detector == Never()
    with pytest.raises(ValueError, match="not both"):
        MetricFeed("score", k=2, detector=Never())
    with pytest.raises(ValueError, match="empty"):  # the right type, a wrong value (ADP-14)
        MetricFeed("")


def test_adp2_metric_lookup() -> None:
    """ADP-2: exact key, then a /-separated path in nested dicts, then the aliases."""
    feed = MetricFeed("eval/score", k=2, aliases=("eval_score",))
    assert feed.find({"eval/score": 1.0}) == 1.0
    assert feed.find({"eval": {"score": 2}}) == 2.0
    assert feed.find({"eval_score": 3.0}) == 3.0
    assert feed.find({"eval": {"other": 1.0}, "score": 4.0}) is None
    assert feed.find({"eval/score": None}) is None


def test_adp2_values_must_be_numbers() -> None:
    """ADP-2: any real number is a score (numpy scalars too); bools and strings are refused."""
    numpy = pytest.importorskip("numpy")
    feed = MetricFeed("score", k=2)
    assert feed.find({"score": numpy.float32(0.5)}) == 0.5
    assert feed.find({"score": 3}) == 3.0
    for bad in (True, "0.5", [0.5]):
        with pytest.raises(TypeError, match="score"):
            feed.find({"score": bad})


def test_adp3_missing_metric_is_not_an_evaluation() -> None:
    """ADP-3: a result without the metric changes nothing; NaN follows MON-5."""
    feed = MetricFeed("score", k=2)
    assert feed.feed("t", 1, {"loss": 1.0}) is None
    assert "t" not in feed.monitor
    assert feed.verdict("t") is None and feed.best("t") is None
    verdicts = feed_all(feed, "t", PEAK)
    reasons = [None if v is None else v.reason for v in verdicts]
    assert reasons[2] is None  # iteration 3: no metric, no observation
    assert reasons[5] is Reason.NON_FINITE  # iteration 6: NaN, skipped by the rule (MON-5)
    assert [v is not None and v.stopped for v in verdicts].index(True) + 1 == PEAK_STOP
    assert verdicts[PEAK_STOP - 1].reason is Reason.COUNTED
    assert all(v.reason is Reason.ALREADY_STOPPED for v in verdicts[PEAK_STOP:])  # MON-7


def test_adp4_best_and_stop_queries_change_nothing() -> None:
    """ADP-4: best / stopped / stop_step read the monitor, verdict is the last one; read-only."""
    feed = MetricFeed("score", k=2)
    peak = feed_all(feed, "peak", PEAK)
    up = feed_all(feed, "up", MONOTONE)
    before = feed.monitor.to_dict()
    assert feed.best("peak") == PEAK_BEST
    assert feed.stopped("peak") and feed.stop_step("peak") == PEAK_STOP
    last = feed.verdict("peak")
    assert isinstance(last, Stop) and last == peak[-1] and last.step == len(PEAK)
    best_up = feed.best("up")
    assert best_up is not None and best_up.step == 10
    assert best_up.score == pytest.approx(1.0)
    assert not feed.stopped("up") and feed.stop_step("up") is None
    assert isinstance(feed.verdict("up"), Continue) and feed.verdict("up") == up[-1]
    assert feed.monitor.to_dict() == before
    assert feed.forget("peak") and feed.verdict("peak") is None and feed.best("peak") is None
    assert not feed.forget("peak")  # MON-8


def test_adp4_min_mode_reports_callers_units() -> None:
    """ADP-4: in min mode a rise is a decline and the best is the lowest, not negated (MON-4)."""
    feed = MetricFeed("loss", mode="min", k=2)
    feed_all_loss = [feed.feed("t", s, {"loss": v}) for s, v in enumerate([3.0, 2.0, 2.5, 2.7])]
    assert feed_all_loss[-1] is not None and feed_all_loss[-1].stopped
    assert feed.best("t") == BestCheckpoint(1, 2.0)


def test_adp4_restore_round_trip() -> None:
    """ADP-4: a feed restored from ``monitor.to_dict()`` goes on with the same verdicts."""
    feed = MetricFeed("score", k=2)
    feed_all(feed, "t", PEAK[:5])
    saved = feed.monitor.to_dict()
    other = MetricFeed("score", k=2)
    other.restore(saved)
    assert other.best("t") == feed.best("t") and other.stop_step("t") is None
    assert other.verdict("t") is None  # no observation through this feed since the restore
    assert other.feed("t", 7, {"score": 0.35}) == feed.feed("t", 7, {"score": 0.35})
    plateau = MetricFeed("score", detector=LossPlateau())
    plateau.restore(saved)  # a built-in detector is rebuilt from the saved parameters
    assert plateau.monitor.detector.name == "evalstop(k=2)"
    custom = MetricFeed("score", detector=Patience())
    feed_all(custom, "t", PEAK[:2])
    MetricFeed("score", detector=Patience()).restore(custom.monitor.to_dict())
    with pytest.raises(ValueError, match="differs"):  # a custom detector must be given back
        MetricFeed("score", k=2).restore(custom.monitor.to_dict())


def test_adp9_importing_evalstop_imports_no_framework() -> None:
    """ADP-9: evalstop and evalstop.adapters never import ray, transformers or torch."""
    import subprocess
    import sys

    code = (
        "import sys, evalstop, evalstop.adapters, evalstop.adapters._core\n"
        "print(sorted(m for m in ('ray', 'transformers', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert evalstop.Monitor is Monitor


def test_adp9_missing_library_fails_at_construction() -> None:
    """ADP-9: without its library an adapter module imports, and building one names the extra."""
    stand_in = optional_class("evalstop_no_such_library", "Thing", "ray")

    class Adapter(stand_in):  # type: ignore[misc, valid-type]
        pass

    with pytest.raises(ImportError, match=r"Adapter needs .*evalstop\[ray\]"):
        Adapter()


@pytest.mark.skipif(HAS_RAY, reason="Ray is installed: the stand-in is not used")
def test_adp9_ray_adapter_without_ray() -> None:
    """ADP-9: with no Ray, evalstop.adapters.ray_tune imports and its classes refuse to build."""
    from evalstop.adapters import ray_tune

    for cls in (ray_tune.EvalStopStopper, ray_tune.EvalStopScheduler):
        with pytest.raises(ImportError, match=r"evalstop\[ray\]"):
            cls("score")


# -- Ray Tune: ADP-5, ADP-6 -------------------------------------------------------------------

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",  # no usage report (there is no network)
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no CSV / JSON / TensorBoard loggers
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_MAX_PENDING_TRIALS_PG": "2",
}


CURVES: dict[str, list[float | None]] = {"peak": PEAK, "monotone": MONOTONE}


@pytest.fixture(scope="module")
def ray() -> Iterator[Any]:
    """A local 2-CPU Ray for this module (no dashboard, no usage stats), shut down after it."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.tune")
    saved = {key: os.environ.get(key) for key in RAY_ENV}
    os.environ.update(RAY_ENV)
    # The trainable below travels to Ray's workers by value: they cannot import this module.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def trainable(config: dict[str, Any]) -> None:
    """Report the curve ``CURVES[config["name"]]``, one value an iteration.

    Each evaluation comes with a checkpoint holding its iteration; a None is a report
    without the metric and without a checkpoint.
    """
    import importlib
    import tempfile

    tune = importlib.import_module("ray.tune")

    for iteration, value in enumerate(CURVES[config["name"]], start=1):
        if value is None:
            tune.report({"loss": 1.0 / iteration})
            continue
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "iteration.txt").write_text(str(iteration), encoding="utf-8")
            checkpoint = tune.Checkpoint.from_directory(folder)
            tune.report({"score": value, "loss": 1.0 / iteration}, checkpoint=checkpoint)


def fit(path: Path, tune_config: Any = None, **run_config: Any) -> dict[str, Any]:
    """Fit a Tuner with one trial per curve; its results by curve name."""
    tune = pytest.importorskip("ray.tune")

    tuner = tune.Tuner(
        trainable,
        param_space={"name": tune.grid_search(list(CURVES))},
        tune_config=tune_config or tune.TuneConfig(),
        run_config=tune.RunConfig(
            name="evalstop",
            storage_path=str(path),
            verbose=0,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=None),  # keep them all
            **run_config,
        ),
    )
    grid = tuner.fit()
    assert not grid.errors, grid.errors
    return {result.config["name"]: result for result in grid}


def check_outcome(adapter: Any, results: dict[str, Any]) -> None:
    """The peaking trial stops at its k-th decline and keeps its peak; the other runs on."""
    peak, monotone = results["peak"], results["monotone"]
    peak_id, monotone_id = peak.metrics["trial_id"], monotone.metrics["trial_id"]
    # Stopped early, at the k-th consecutive decline: iteration 7 of 10 was its last.
    assert peak.metrics["training_iteration"] == PEAK_STOP
    assert adapter.stopped(peak_id) and adapter.stop_step(peak_id) == PEAK_STOP
    assert adapter.best(peak_id) == PEAK_BEST
    kept = adapter.best_checkpoint(peak)
    assert kept is not None
    assert Path(kept.path, "iteration.txt").read_text(encoding="utf-8") == str(PEAK_BEST.step)
    # Ran to its end, never stopped; its best is its last evaluation.
    assert monotone.metrics["training_iteration"] == len(MONOTONE)
    assert not adapter.stopped(monotone_id) and adapter.stop_step(monotone_id) is None
    best = adapter.best(monotone_id)
    assert best is not None and best.step == len(MONOTONE)
    kept = adapter.best_checkpoint(monotone)
    assert kept is not None
    assert Path(kept.path, "iteration.txt").read_text(encoding="utf-8") == str(len(MONOTONE))


def test_adp5_stopper_in_a_real_tune_run(ray: Any, tmp_path: Path) -> None:
    """ADP-5: EvalStopStopper in RunConfig(stop=...) stops the peaking trial at iteration 7.

    Also ADP-3 (a report without the metric at iteration 3 and a NaN at iteration 6 are
    skipped) and ADP-4 (best(trial_id) and best_checkpoint(result) name iteration 4).
    """
    from evalstop.adapters.ray_tune import EvalStopStopper

    stopper = EvalStopStopper("score", mode="max", k=2)
    check_outcome(stopper, fit(tmp_path, stop=stopper))
    assert stopper.stop_all() is False


def test_adp6_scheduler_in_a_real_tune_run(
    ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADP-6: EvalStopScheduler, taking metric and mode from TuneConfig, stops the same trial.

    Tune's strict metric check would reject the report without the metric: turned off here.
    """
    from evalstop.adapters.ray_tune import EvalStopScheduler

    tune = pytest.importorskip("ray.tune")
    monkeypatch.setenv("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    scheduler = EvalStopScheduler(k=2)
    config = tune.TuneConfig(scheduler=scheduler, metric="score", mode="max")
    check_outcome(scheduler, fit(tmp_path, tune_config=config))
    assert scheduler.metric == "score"
    assert "evalstop(k=2)" in scheduler.debug_string()


def test_adp5_stopper_calls(ray: Any) -> None:
    """ADP-5: the Stopper interface called directly: nested metric, min mode, step key."""
    from evalstop.adapters.ray_tune import EvalStopStopper

    stopper = EvalStopStopper("eval/loss", mode="min", k=2, step_key="step")
    assert isinstance(stopper, pytest.importorskip("ray.tune").Stopper)
    results = [{"step": s, "eval": {"loss": v}} for s, v in [(10, 2.0), (20, 1.0), (30, 1.5)]]
    assert [stopper("a", r) for r in results] == [False, False, False]
    assert stopper("a", {"step": 40}) is False  # no metric: not an evaluation (ADP-3)
    assert stopper("a", {"step": 50, "eval": {"loss": 1.7}}) is True
    assert stopper("a", {"step": 60, "eval": {"loss": 0.1}}) is True  # latched (MON-7)
    assert stopper("a", {"step": 70}) is True  # still stopped, with or without the metric
    assert stopper.best("a") == BestCheckpoint(20, 1.0)
    assert stopper.best("b") is None and not stopper.stopped("b")
    with pytest.raises(ValueError, match="'step'"):
        stopper("b", {"eval": {"loss": 1.0}})
    with pytest.raises(ValueError, match="not both"):
        EvalStopStopper("score", k=2, detector=Never())


def test_adp6_scheduler_metric_from_one_place_only(ray: Any) -> None:
    """ADP-6: metric and mode come from the scheduler or from TuneConfig, not from both."""
    from evalstop.adapters.ray_tune import EvalStopScheduler

    assert EvalStopScheduler("score").set_search_properties("score", None) is False
    assert EvalStopScheduler(mode="min").set_search_properties(None, "max") is False
    assert EvalStopScheduler("score").monitor.mode == "max"  # neither gives a mode
    scheduler = EvalStopScheduler()
    assert scheduler.set_search_properties("loss", "min") is True
    assert scheduler.metric == "loss" and scheduler.monitor.mode == "min"
    with pytest.raises(ValueError, match="needs a metric"):
        EvalStopScheduler().best("t")
