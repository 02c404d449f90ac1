"""Named systems: a base policy, optionally wrapped by a detector, from a string.

``"srtf-est"`` is a base policy alone; ``"<detector>+<base>"`` wraps it with
:func:`~evalstop.wrapper.evalstop`, where the detector is one of ``evalstop`` (k consecutive
declines), ``stopat-<fraction>`` (e.g. ``stopat-0.65``), ``lossplateau`` or ``never``
(spec ``SYS-1``).
"""

from __future__ import annotations

from typing import Any

from evalstop.detectors import DeclineDetector, Detector, LossPlateau, Never, StopAtProgress
from evalstop.policies import BASE_POLICIES, Policy, base_policy
from evalstop.wrapper import evalstop

__all__ = ["DETECTOR_NAMES", "make_detector", "make_policy"]

DETECTOR_NAMES: tuple[str, ...] = ("evalstop", "lossplateau", "never", "stopat-<fraction>")


def make_detector(name: str, *, k: int = 2) -> Detector[Any]:
    """The detector called ``name``; raises ``ValueError`` naming the choices."""
    if name == "evalstop":
        return DeclineDetector(k)
    if name == "lossplateau":
        return LossPlateau()
    if name == "never":
        return Never()
    if name.startswith("stopat-"):
        try:
            fraction = float(name.removeprefix("stopat-"))
        except ValueError:
            raise ValueError(f"bad progress fraction in {name!r}; write e.g. stopat-0.65") from None
        return StopAtProgress(fraction)
    raise ValueError(f"unknown detector {name!r}; choose one of: {', '.join(DETECTOR_NAMES)}")


def make_policy(name: str, *, k: int = 2) -> Policy:
    """The system called ``name`` (see the module docstring); ``ValueError`` when unknown."""
    detector_name, plus, base_name = name.rpartition("+")
    try:
        base = base_policy(base_name)
    except KeyError:
        choices = ", ".join(sorted(BASE_POLICIES))
        raise ValueError(
            f"unknown policy {base_name!r}; choose a base ({choices}), optionally "
            f"prefixed by a detector and '+', e.g. evalstop+srtf-est"
        ) from None
    if not plus:
        return base
    return evalstop(base, make_detector(detector_name, k=k))
