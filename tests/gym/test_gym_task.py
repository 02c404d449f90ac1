"""The task's closed forms against brute force (GYM-2), the proxy (GYM-3), the optimiser
(GYM-4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalstop.gym.policy import LOGIT_BOUND, Optimiser, train_step
from evalstop.gym.proxy import Proxy, features, fit_proxy
from evalstop.gym.task import (
    VOCAB,
    Task,
    entropy,
    exact_gold,
    gold_of,
    kl_to,
    make_task,
    probabilities,
    sample,
)


def _enumerate(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every response of a short policy and its probability."""
    length, vocab = probs.shape
    tokens = np.array(list(itertools.product(range(vocab), repeat=length)), dtype=np.int64)
    weights = np.prod(probs[np.arange(length), tokens], axis=1)
    return tokens, weights


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_gold_equals_the_sum_over_every_response(seed: int) -> None:
    """GYM-2: on a 3-position policy the closed form equals the enumeration of 16^3 responses."""
    rng = np.random.default_rng(seed)
    task = make_task(rng)
    probs = probabilities(rng.normal(0.0, 2.0, size=(3, VOCAB)))
    tokens, weights = _enumerate(probs)
    assert weights.sum() == pytest.approx(1.0)
    brute = float((weights * gold_of(task, tokens)).sum())
    assert exact_gold(task, probs) == pytest.approx(brute, abs=1e-12)


def test_kl_and_entropy_equal_the_sums_over_every_response() -> None:
    """GYM-2: KL and entropy of a factorised policy are sums over positions (checked by brute
    force on 2 positions)."""
    rng = np.random.default_rng(5)
    p = probabilities(rng.normal(size=(2, VOCAB)))
    q = probabilities(rng.normal(size=(2, VOCAB)))
    _, wp = _enumerate(p)
    _, wq = _enumerate(q)
    assert kl_to(p, q) == pytest.approx(float((wp * np.log(wp / wq)).sum()), abs=1e-12)
    assert entropy(p) == pytest.approx(float(-(wp * np.log(wp)).sum()), abs=1e-12)
    assert kl_to(p, p) == 0.0


def test_style_is_good_in_moderation() -> None:
    """GYM-2: by hand, on a task whose token 0 has quality 1: no style 1, a quarter style
    0.75 + 4/4 - 8/16 = 1.25, all style -4; the expected gold of a sure policy is its gold."""
    quality = np.zeros(VOCAB)
    quality[0] = 1.0
    style = np.zeros(VOCAB)
    style[-2:] = 1.0
    task = Task(init_logits=np.zeros((8, VOCAB)), quality=quality, style=style)
    none = np.zeros((1, 8), dtype=np.int64)
    quarter = none.copy()
    quarter[0, :2] = VOCAB - 1
    full = np.full((1, 8), VOCAB - 2, dtype=np.int64)
    assert [float(gold_of(task, x)[0]) for x in (none, quarter, full)] == [1.0, 1.25, -4.0]
    sure = np.zeros((8, VOCAB))
    sure[:2, VOCAB - 1] = 1.0
    sure[2:, 0] = 1.0
    assert exact_gold(task, sure) == pytest.approx(1.25)


def test_sampling_follows_the_policy() -> None:
    """GYM-2: the sampler's token frequencies match the policy (20 000 draws, 5 sigma)."""
    rng = np.random.default_rng(3)
    probs = probabilities(rng.normal(size=(8, VOCAB)))
    tokens = sample(probs, 20_000, rng)
    freq = np.stack([np.bincount(tokens[:, at], minlength=VOCAB) for at in range(8)]) / 20_000
    assert np.all(np.abs(freq - probs) <= 5 * np.sqrt(probs * (1 - probs) / 20_000) + 1e-9)


def test_proxy_features_and_a_noise_free_fit() -> None:
    """GYM-3: capacity 1 has 17 features, capacity 2 153; with many samples the linear proxy
    ranks content tokens as gold does."""
    tokens = np.array([[0, 0, 1, 2, 3, 4, 5, 15]])
    assert features(tokens, 1).shape == (1, 17)
    assert features(tokens, 2).shape == (1, 17 + 136)
    assert features(tokens, 1)[0, 1] == 2.0  # token 0 twice
    rng = np.random.default_rng(0)
    task = make_task(rng)
    proxy = fit_proxy(task, probabilities(task.init_logits), 20_000, 1, rng)
    content = np.arange(VOCAB - 2)
    corr = np.corrcoef(proxy.weights[1:][content], task.quality[content])[0, 1]
    assert corr > 0.9


def _one_token_proxy(token: int) -> Proxy:
    weights = np.zeros(1 + VOCAB)
    weights[1 + token] = 1.0  # the proxy: how often ``token`` occurs
    return Proxy(weights=weights, capacity=1)


def test_reinforce_climbs_the_proxy_and_the_kl_penalty_holds_it_back() -> None:
    """GYM-4: against a proxy that counts token 3, 150 steps raise its probability at every
    position; a KL coefficient of 1 keeps the policy within a tenth of the KL it reaches
    without one; a KL coefficient far too large for the step size keeps the logits finite."""
    rng = np.random.default_rng(0)
    init = rng.normal(size=(8, VOCAB))
    free, held, wild = (Optimiser.start(init) for _ in range(3))
    for _ in range(150):
        train_step(free, _one_token_proxy(3), 0.0, 1.0, rng)
        train_step(held, _one_token_proxy(3), 1.0, 1.0, rng)
        train_step(wild, _one_token_proxy(3), 100.0, 100.0, rng)
    before = probabilities(init)[:, 3]
    assert np.all(probabilities(free.logits)[:, 3] > before)
    free_kl = kl_to(probabilities(free.logits), probabilities(init))
    assert free_kl > 1.0
    assert kl_to(probabilities(held.logits), probabilities(init)) < free_kl / 10
    assert np.all(np.abs(wild.logits) <= LOGIT_BOUND)


def test_a_step_reports_its_batch() -> None:
    """GYM-4: at the initial policy the sampled KL of a batch is 0; the proxy reward is the
    batch's mean count of the token, between 0 and 8."""
    rng = np.random.default_rng(1)
    opt = Optimiser.start(rng.normal(size=(8, VOCAB)))
    stats = train_step(opt, _one_token_proxy(0), 0.5, 0.1, rng)
    assert stats.kl == 0.0 and 0.0 <= stats.proxy_reward <= 8.0
