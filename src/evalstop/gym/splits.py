"""The gym's two corpora, by seed range (spec ``GYM-8``).

``dev`` is for developing and tuning detectors; ``test`` is read only by the scoreboard and
the docs, never by tuning code (``tests/repo/test_gym_splits.py`` refuses a tuning script that
names it). Run ``i`` of a split has seed ``start + i``.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalstop.gym.config import ConfigError

__all__ = ["SPLITS", "SPLIT_SIZE", "split_seeds"]

SPLITS: Mapping[str, int] = {"dev": 0, "test": 1_000_000}
"""Split name -> the seed of its first run."""

SPLIT_SIZE = 10_000
"""Runs a split holds at most: ``dev`` is seeds [0, 10 000), ``test`` [1 000 000, 1 010 000)."""


def split_seeds(split: str, runs: int) -> range:
    """The seeds of the first ``runs`` runs of ``split``.

    Raises:
        ConfigError: an unknown split, or ``runs`` outside [1, SPLIT_SIZE].
    """
    if split not in SPLITS:
        raise ConfigError(f"split {split!r}: choose from {', '.join(SPLITS)}")
    if not 1 <= runs <= SPLIT_SIZE:
        raise ConfigError(f"--runs {runs}: a split holds 1 to {SPLIT_SIZE} runs")
    return range(SPLITS[split], SPLITS[split] + runs)
