"""The proxy reward model: ridge regression on a response's token counts, fitted to noisy gold
labels of samples from the initial policy (spec ``GYM-3``).

Capacity 1 is linear in the counts (``VOCAB`` weights and an intercept); capacity 2 adds every
product of two counts (what it needs to see that style is good only in moderation, if its
training samples show enough style to tell). Pure: numpy only.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from evalstop.gym.task import VOCAB, Task, gold_of, sample

__all__ = [
    "CAPACITIES",
    "LABEL_NOISE",
    "RIDGE",
    "Proxy",
    "counts",
    "features",
    "fit_proxy",
]

Array = NDArray[np.float64]
Tokens = NDArray[np.int64]

CAPACITIES = (1, 2)
"""The proxy's capacities: 1 linear in the token counts, 2 also quadratic."""

LABEL_NOISE = 0.5
"""Standard deviation of the noise on each gold label the proxy is fitted to (``GYM-3``)."""

RIDGE = 1.0
"""The ridge penalty on the proxy's weights (features are token counts, 0 to ``LENGTH``)."""

_UPPER = np.triu_indices(VOCAB)


def features(tokens: Tokens, capacity: int) -> Array:
    """The proxy's features of each response: 1, the token counts and, at capacity 2, their
    pairwise products; shape ``(n, 1 + VOCAB)`` or ``(n, 1 + VOCAB + VOCAB (VOCAB + 1) / 2)``.
    """
    c = counts(tokens)
    parts = [np.ones((tokens.shape[0], 1)), c]
    if capacity >= 2:
        parts.append((c[:, :, None] * c[:, None, :])[:, _UPPER[0], _UPPER[1]])
    out: Array = np.concatenate(parts, axis=1)
    return out


def counts(tokens: Tokens) -> Array:
    """How often each token occurs in each response, shape ``(n, VOCAB)``."""
    n, length = tokens.shape
    rows = np.repeat(np.arange(n), length) * VOCAB + tokens.ravel()
    out: Array = np.bincount(rows, minlength=n * VOCAB).reshape(n, VOCAB).astype(np.float64)
    return out


@attrs.frozen(slots=True, eq=False)
class Proxy:
    """A fitted proxy reward model: ``bias + c . linear + c^T quadratic c`` of the counts ``c``
    (``quadratic`` upper-triangular, zero at capacity 1), the ridge weights rearranged.

    Attributes:
        weights: the ridge weights over :func:`features`.
        capacity: 1 or 2.
    """

    weights: Array
    capacity: int
    linear: Array = attrs.field(init=False)
    quadratic: Array = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        linear = np.array(self.weights[1 : 1 + VOCAB])
        quadratic = np.zeros((VOCAB, VOCAB))
        if self.capacity >= 2:
            quadratic[_UPPER] = self.weights[1 + VOCAB :]
        object.__setattr__(self, "linear", linear)
        object.__setattr__(self, "quadratic", quadratic)

    def __call__(self, tokens: Tokens) -> Array:
        """The proxy reward of each response (equal to ``features(tokens) @ weights``)."""
        c = counts(tokens)
        out: Array = self.weights[0] + c @ self.linear
        if self.capacity >= 2:
            out = out + ((c @ self.quadratic) * c).sum(axis=1)
        return out


def fit_proxy(
    task: Task, init_probs: Array, samples: int, capacity: int, rng: np.random.Generator
) -> Proxy:
    """Fit a proxy on ``samples`` responses of the initial policy labelled with their gold
    reward plus N(0, LABEL_NOISE) noise (the intercept is not penalised)."""
    tokens = sample(init_probs, samples, rng)
    labels = gold_of(task, tokens) + rng.normal(0.0, LABEL_NOISE, size=samples)
    x = features(tokens, capacity)
    penalty = RIDGE * np.eye(x.shape[1])
    penalty[0, 0] = 0.0
    weights: Array = np.asarray(np.linalg.solve(x.T @ x + penalty, x.T @ labels), np.float64)
    weights.setflags(write=False)
    return Proxy(weights=weights, capacity=capacity)
