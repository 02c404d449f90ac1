"""REINFORCE with a baseline and a KL penalty on the factorised policy (``GYM-4``).

Each step samples ``BATCH`` responses, scores each with the proxy minus ``kl_coef`` times its
log-ratio to the initial policy (the per-sample KL estimate RLHF trainers use), subtracts the
batch mean as the baseline and takes a plain gradient step on the logits (no momentum: the
softmax policy gradient's slow escape from rare tokens is part of the dynamics). Pure: numpy
only.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from evalstop.gym.proxy import Proxy
from evalstop.gym.task import TINY, probabilities, sample

__all__ = ["BATCH", "LOGIT_BOUND", "Optimiser", "StepStats", "train_step"]

Array = NDArray[np.float64]

BATCH = 32
"""Responses sampled per optimisation step."""

LOGIT_BOUND = 50.0
"""Logits are kept in [-50, 50] after each step: a step size or KL coefficient too large for
plain gradient steps oscillates, and the bound keeps every number finite (a token 100 logits
below another has probability under 1e-43, so the bound changes nothing a sane run does)."""


@attrs.define(slots=True, eq=False)
class Optimiser:
    """The mutable state of one run's training.

    Attributes:
        logits: the policy's logits, shape ``(LENGTH, VOCAB)``.
        init_log_probs: log-probabilities of the initial policy (the KL reference).
    """

    logits: Array
    init_log_probs: Array

    @classmethod
    def start(cls, init_logits: Array) -> Optimiser:
        """A fresh optimiser at the initial policy."""
        logits = np.array(init_logits, dtype=np.float64)
        return cls(logits, np.log(np.maximum(probabilities(logits), TINY)))


@attrs.frozen(slots=True)
class StepStats:
    """What one step's batch shows (observable by the trainer).

    Attributes:
        proxy_reward: the batch's mean proxy reward.
        kl: the batch's mean log-ratio to the initial policy (the sampled KL estimate).
        loss: the policy-gradient loss, ``-mean(advantage * log pi(x))``.
    """

    proxy_reward: float
    kl: float
    loss: float


def train_step(
    opt: Optimiser, proxy: Proxy, kl_coef: float, lr: float, rng: np.random.Generator
) -> StepStats:
    """One REINFORCE step with Adam on ``opt`` (updated in place)."""
    probs = probabilities(opt.logits)
    length, vocab = probs.shape
    tokens = sample(probs, BATCH, rng)
    log_probs = np.log(np.maximum(probs, TINY))
    positions = np.arange(length)
    picked = log_probs[positions, tokens]
    log_ratio = (picked - opt.init_log_probs[positions, tokens]).sum(axis=1)
    proxy_reward = proxy(tokens)
    reward = proxy_reward - kl_coef * log_ratio
    # x.sum() / n is numpy's mean bit for bit (the same pairwise sum, one division), without
    # its per-call overhead (a quarter of a step's time at BATCH 32)
    advantage = reward - reward.sum() / BATCH
    seq_log_prob = picked.sum(axis=1)
    loss = -float((advantage * seq_log_prob).sum() / BATCH)
    # d loss / d logits[l] = -mean_i A_i (onehot(x_il) - p_l); the p_l term vanishes (mean A = 0)
    index = (positions * vocab + tokens).ravel()
    weights = np.repeat(advantage, length)
    counted = np.bincount(index, weights=weights, minlength=length * vocab)
    grad: Array = -counted.reshape(length, vocab) / BATCH
    opt.logits = np.clip(opt.logits - lr * grad, -LOGIT_BOUND, LOGIT_BOUND)
    return StepStats(
        proxy_reward=float(proxy_reward.sum() / BATCH), kl=float(log_ratio.sum() / BATCH), loss=loss
    )
