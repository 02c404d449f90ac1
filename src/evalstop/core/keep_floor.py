"""Keep floors: how little regret any stopping time could give, when a checkpoint is kept by its
observed scores (spec ``RGT-6``).

A detector that stops a run keeps a checkpoint chosen from the scores it has seen: the best
reported one (``DET-4``) or the peak of the noise-aware detector's level (``NAD-10``). Under
evaluation noise that checkpoint is often not the truly best one, whatever the stopping time.
:func:`kept_indices` gives, for every prefix of a run, the checkpoint a keep rule holds after
it; :func:`keep_floors` turns those into three reference choices scored against the run's
quality:

- *hindsight*: the keep rule applied to the whole curve (a rule that saw every score);
- *stop floor*: the best stopping time in hindsight (or running to the end) for that keep
  rule. No detector that keeps by the rule can have a lower regret on the run: its kept
  checkpoint is one of the choices the floor minimises over;
- *oracle stop*: stopping at the truly best checkpoint, keeping by the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from evalstop.core.detectors import start_watch
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.noise_fold import NoiseFold
from evalstop.core.regret import regret_fraction

__all__ = ["FloorChoice", "KeepFloors", "keep_floors", "kept_indices"]


@attrs.frozen(slots=True)
class FloorChoice:
    """A reference outcome of one run: where it stops and what it keeps (0-based checkpoints).

    Attributes:
        stop: the checkpoint of the stop; None when the run goes to its end.
        kept: the kept checkpoint; None for a stop before any finite score (the first
            checkpoint's quality then counts, ``RGT-1``).
    """

    stop: int | None
    kept: int | None


@attrs.frozen(slots=True)
class KeepFloors:
    """The three reference choices of :func:`keep_floors` for one run and one keep rule."""

    hindsight: FloorChoice
    stop_floor: FloorChoice
    oracle_stop: FloorChoice


def kept_indices(
    steps: Sequence[int], scores: Sequence[float], keep_memory: float | None
) -> list[int | None]:
    """The checkpoint a keep rule holds after each prefix of a run (``RGT-6``).

    ``keep_memory`` None is the best reported score (``DET-4``: the first strictly highest
    finite score); a number is the noise-aware detector's level keep with that memory
    (``NAD-10``). None before the first finite score.
    """
    kept: list[int | None] = []
    if keep_memory is None:
        best: int | None = None
        for index, score in enumerate(scores):
            finite = score - score == 0.0
            if finite and (best is None or score > scores[best]):
                best = index
            kept.append(best)
        return kept
    rule = NoiseAwareDetector(keep="level", keep_memory=keep_memory)
    fold = NoiseFold(start_watch(rule))
    first_index: dict[int, int] = {}
    for index, (step, score) in enumerate(zip(steps, scores, strict=True)):
        first_index.setdefault(step, index)
        fold.fold(rule, step, score)
        kept.append(None if fold.best_step is None else first_index[fold.best_step])
    return kept


def keep_floors(quality: Sequence[float], kept: Sequence[int | None]) -> KeepFloors:
    """Hindsight keep, stop floor and oracle stop of one run (``RGT-6``).

    ``quality`` is the run's quality at its checkpoints (the truth in the simulator), ``kept``
    what the keep rule holds after each prefix (:func:`kept_indices`). A stop at the last
    checkpoint is no stop (``RGT-4``): the run ends there and keeps its last checkpoint.
    Ties in the stop floor go to the earliest stop.

    pre: len(quality) == len(kept) and len(quality) > 0
    """
    last = len(quality) - 1
    best = max(quality)
    peak = list(quality).index(best)

    def regret(index: int | None) -> float:
        value = quality[0] if index is None else quality[index]
        return regret_fraction(best, quality[0], value)

    options = [FloorChoice(t, kept[t]) for t in range(last)] + [FloorChoice(None, last)]
    floor = min(options, key=lambda choice: regret(choice.kept))
    oracle = FloorChoice(peak, kept[peak]) if peak < last else FloorChoice(None, last)
    return KeepFloors(FloorChoice(None, kept[last]), floor, oracle)
