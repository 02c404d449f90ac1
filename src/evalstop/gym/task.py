"""The toy task: a factorised softmax policy over token sequences and its exact gold reward.

A response is ``LENGTH`` tokens from a vocabulary of ``VOCAB``; the policy picks each position's
token independently (a softmax over logits of shape ``(LENGTH, VOCAB)``), so every expectation
the gym needs has a closed form (spec ``GYM-2``). The gold reward of a response ``x`` is

    gold(x) = mean_l quality[x_l] + STYLE_GAIN * f(x) - STYLE_COST * f(x) ** 2

with ``f(x)`` the share of its tokens that are *style* tokens: style is good in moderation
(best at ``f* = STYLE_GAIN / (2 STYLE_COST) = 0.25``) and bad in excess, and the initial
policy uses little of it, so a proxy fitted on its samples sees style as plainly good
(Goodhart's extremal form). Pure: numpy only, randomness from the generator it is given.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

__all__ = [
    "INIT_SCALE",
    "LENGTH",
    "QUALITY_SCALE",
    "STYLE_COST",
    "STYLE_GAIN",
    "STYLE_OFFSET",
    "STYLE_TOKENS",
    "TINY",
    "VOCAB",
    "Task",
    "entropy",
    "exact_gold",
    "gold_of",
    "kl_to",
    "make_task",
    "probabilities",
    "sample",
]

Array = NDArray[np.float64]
Tokens = NDArray[np.int64]

LENGTH = 8
"""Tokens per response (spec ``GYM-2``): small enough that a run takes milliseconds."""

VOCAB = 16
"""Tokens in the vocabulary (spec ``GYM-2``)."""

STYLE_TOKENS = 2
"""How many of the vocabulary's tokens are style tokens (the last ones)."""

STYLE_GAIN = 4.0
"""Gold's linear reward for the style share ``f`` (``GYM-2``)."""

STYLE_COST = 8.0
"""Gold's quadratic cost of the style share: the optimum is ``f* = 0.25`` (``GYM-2``)."""

STYLE_OFFSET = -1.0
"""Added to the style tokens' initial logits: the initial policy uses style rarely."""

TINY = 1e-300
"""Floor under a probability before its logarithm (so ``0 log 0`` is 0, never NaN)."""

INIT_SCALE = 1.0
"""Standard deviation of the initial logits (a peaked but not degenerate start)."""

QUALITY_SCALE = 0.5
"""Standard deviation of a content token's quality: the best content token is worth less
than style looks worth to a proxy fitted on the initial policy (``GYM-2``)."""


@attrs.frozen(slots=True, eq=False)
class Task:
    """One run's task: the initial policy's logits and the gold reward's token qualities.

    Attributes:
        init_logits: the initial policy's logits, shape ``(LENGTH, VOCAB)`` (read-only).
        quality: each token's content quality (0 for style tokens), shape ``(VOCAB,)``.
        style: 1.0 for a style token, else 0.0, shape ``(VOCAB,)``.
    """

    init_logits: Array
    quality: Array
    style: Array


def _frozen(array: Array) -> Array:
    out = np.array(array, dtype=np.float64)
    out.setflags(write=False)
    return out


def make_task(rng: np.random.Generator) -> Task:
    """Draw a task: initial logits N(0, INIT_SCALE), qualities N(0, QUALITY_SCALE), the last
    ``STYLE_TOKENS`` tokens style (quality 0, logits shifted by ``STYLE_OFFSET``)."""
    logits = rng.normal(0.0, INIT_SCALE, size=(LENGTH, VOCAB))
    quality = rng.normal(0.0, QUALITY_SCALE, size=VOCAB)
    style = np.zeros(VOCAB)
    style[VOCAB - STYLE_TOKENS :] = 1.0
    quality[VOCAB - STYLE_TOKENS :] = 0.0
    logits[:, VOCAB - STYLE_TOKENS :] += STYLE_OFFSET
    return Task(init_logits=_frozen(logits), quality=_frozen(quality), style=_frozen(style))


def probabilities(logits: Array) -> Array:
    """Each position's token probabilities (a row-wise softmax)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    out: Array = weights / weights.sum(axis=1, keepdims=True)
    return out


def sample(probs: Array, n: int, rng: np.random.Generator) -> Tokens:
    """``n`` responses drawn from the policy ``probs``, shape ``(n, LENGTH)``, by inverse CDF:
    one sorted search over every position's CDF, each shifted by its position's index."""
    length, vocab = probs.shape
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    offsets = np.arange(length, dtype=np.float64)
    flat = (cdf + offsets[:, None]).ravel()
    u = rng.random((n, length)) + offsets
    index = np.searchsorted(flat, u.ravel(), side="left").reshape(n, length)
    tokens: Tokens = np.minimum(index - np.arange(length) * vocab, vocab - 1).astype(np.int64)
    return tokens


def gold_of(task: Task, tokens: Tokens) -> Array:
    """The gold reward of each response in ``tokens`` (shape ``(n,)``)."""
    content = task.quality[tokens].mean(axis=1)
    share = task.style[tokens].mean(axis=1)
    out: Array = content + STYLE_GAIN * share - STYLE_COST * share**2
    return out


def exact_gold(task: Task, probs: Array) -> float:
    """The policy's expected gold reward, exactly: positions are independent, so the style
    share's second moment is its variance (a sum of Bernoulli variances) plus its mean squared.
    """
    length = probs.shape[0]
    content = float((probs @ task.quality).sum()) / length
    per_position = probs @ task.style
    mean = float(per_position.sum()) / length
    variance = float((per_position * (1.0 - per_position)).sum()) / length**2
    return float(content + STYLE_GAIN * mean - STYLE_COST * (variance + mean**2))


def _log(probs: Array) -> Array:
    """``log p`` with ``0 log 0`` taken as 0 (a probability that underflowed)."""
    out: Array = np.log(np.maximum(probs, TINY))
    return out


def kl_to(probs: Array, reference: Array) -> float:
    """KL(policy || reference) of two factorised policies: the sum over positions."""
    return float((probs * (_log(probs) - _log(reference))).sum())


def entropy(probs: Array) -> float:
    """The policy's entropy (nats): the sum of its positions' entropies."""
    return float(-(probs * _log(probs)).sum())
