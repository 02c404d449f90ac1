"""The distribution, the knobs (GYM-5), the labels (GYM-6) and Gao's fit (GYM-12)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest

from evalstop.gym.config import (
    DISTRIBUTION,
    KNOB_LIMITS,
    KNOBS,
    V1,
    V2,
    ConfigError,
    check_overrides,
    draw_config,
)
from evalstop.gym.gao import fit_gao
from evalstop.gym.labels import DROP_SHARE, drop_share, label_of


def test_draws_stay_in_their_ranges() -> None:
    """GYM-5: 300 drawn configs stay inside the documented ranges (V2, the default), all
    densities occur."""
    assert DISTRIBUTION == V2
    configs = [draw_config(seed) for seed in range(300)]
    assert all(20 <= c.proxy_samples <= 2000 for c in configs)
    assert {c.capacity for c in configs} == {1, 2}
    assert all(c.kl_coef == 0.0 or 0.01 <= c.kl_coef <= 0.3 for c in configs)
    assert 0.1 < sum(c.kl_coef == 0.0 for c in configs) / 300 < 0.3
    assert all(0.15 <= c.lr <= 1.0 and 300 <= c.steps <= 1000 for c in configs)
    assert {c.evals for c in configs} == {10, 20, 40}
    assert all(16 <= c.eval_samples <= 64 for c in configs)
    assert max(c.eval_samples for c in configs) > 50 and min(c.steps for c in configs) < 350


def test_v1_is_kept_and_draws_the_same_uniforms() -> None:
    """GYM-5: the first distribution still draws its ranges; the same seed takes the same
    uniforms under both, so a parameter whose range did not change is the same, and one whose
    range narrowed keeps its place in it (log scale)."""
    for seed in range(50):
        old, new = draw_config(seed, distribution=V1), draw_config(seed)
        assert 4 <= old.eval_samples <= 256 and 300 <= old.steps <= 3000
        assert (old.proxy_samples, old.capacity, old.lr, old.evals) == (
            new.proxy_samples,
            new.capacity,
            new.lr,
            new.evals,
        )
        assert (old.kl_coef == 0.0) == (new.kl_coef == 0.0)
        if old.kl_coef:
            place = math.log(old.kl_coef / 0.01) / math.log(1.0 / 0.01)
            assert math.isclose(place, math.log(new.kl_coef / 0.01) / math.log(0.3 / 0.01))


def test_a_knob_changes_no_other_draw() -> None:
    """GYM-5: fixing one knob leaves every other parameter of the run as drawn."""
    for seed in range(20):
        drawn = draw_config(seed)
        for name, value in [("kl_coef", 0.0), ("lr", 1.0), ("proxy_samples", 50), ("evals", 5)]:
            fixed = draw_config(seed, {name: value})
            assert getattr(fixed, name) == value
            assert attrs.evolve(fixed, **{name: getattr(drawn, name)}) == drawn


def test_checkpoints_span_the_run() -> None:
    """GYM-5: checkpoints at round(j * steps / (evals - 1)), from 0 to the last step."""
    config = draw_config(0, {"steps": 10, "evals": 4})
    assert config.checkpoints() == [0, 3, 7, 10]
    assert draw_config(0, {"steps": 2}).evals == 3  # a drawn density cut to steps + 1


@pytest.mark.parametrize("name", KNOBS)
def test_every_knob_out_of_range_names_itself(name: str) -> None:
    """GYM-11: below, above, NaN and (for counts) fractional values name the knob."""
    low, high = KNOB_LIMITS[name]
    flag = "--" + name.replace("_", "-")
    for bad in (low - 1, high * 2, math.nan, math.inf):
        with pytest.raises(ConfigError, match=flag):
            check_overrides({name: bad})
    if name in ("proxy_samples", "steps", "evals", "eval_samples"):
        with pytest.raises(ConfigError, match="whole"):
            check_overrides({name: low + 0.5})
    assert check_overrides({name: low}) == {name: low}


def test_evals_beyond_the_steps_is_an_error() -> None:
    """GYM-11: --evals greater than --steps + 1 names --evals."""
    with pytest.raises(ConfigError, match="--evals"):
        check_overrides({"evals": 12, "steps": 10})
    seed = next(s for s in range(100) if draw_config(s).steps < 999)
    with pytest.raises(ConfigError, match="--evals"):
        draw_config(seed, {"evals": 1000})  # more checkpoints than the drawn steps + 1
    with pytest.raises(ConfigError, match="not a knob"):
        check_overrides({"capacity": 1})


def test_labels_by_hand() -> None:
    """GYM-6: gain 10, drop 1 is hacking (at the threshold); drop 0.75 healthy; a curve that
    only falls is hacking; a flat or rising one healthy."""
    assert DROP_SHARE == 0.1
    assert label_of([0.0, 10.0, 9.0]) == "hacking"
    assert label_of([0.0, 10.0, 9.25]) == "healthy"
    assert label_of([0.0, -0.5, -1.0]) == "hacking"
    assert drop_share([0.0, -0.5, -1.0]) == math.inf
    assert label_of([0.0, 0.0, 0.0]) == "healthy" and drop_share([1.0, 1.0]) == 0.0
    assert label_of([0.0, 0.5, 1.0]) == "healthy"
    assert drop_share([1.0, 3.0, 2.0]) == pytest.approx(0.5)


def test_gao_fit_recovers_its_own_form() -> None:
    """GYM-12: a curve made by the form (alpha 0.38, beta 0.15) is fitted exactly, R^2 1; a
    curve that is not of the form fits worse."""
    kl = np.linspace(0.0, 60.0, 25)
    d = np.sqrt(kl)
    with np.errstate(divide="ignore", invalid="ignore"):
        gold = np.where(d > 0, d * (0.38 - 0.15 * np.log(d)), 0.0) + 2.0
    fit = fit_gao(list(gold), list(kl))
    assert fit.alpha == pytest.approx(0.38) and fit.beta == pytest.approx(0.15)
    assert fit.r2 == pytest.approx(1.0)
    zigzag = [0.0, 1.0, -1.0, 1.0, -1.0, 1.0]
    assert fit_gao(zigzag, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).r2 < 0.5
    assert math.isnan(fit_gao([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]).r2)
