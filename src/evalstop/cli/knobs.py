"""The early-stopping knobs users know from Keras, Hugging Face and Lightning, as CLI options.

``--min-delta``, ``--warmup-evals``, ``--warmup-steps`` and ``--baseline`` build the
``noise-aware`` detector's parameters (spec ``NAD-4``); ``evalstop`` takes ``--min-delta`` and
``--warmup-steps``, ``lossplateau`` ``--warmup-steps`` and ``--baseline`` (``DET-11``); a knob
a detector does not take is an error naming the option.
"""

from __future__ import annotations

import argparse
from typing import Any

from evalstop.core.detectors import Detector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import make_detector

__all__ = ["add_knobs", "add_side_options", "build_detector", "knobs"]

_DEFAULTS = NoiseAwareDetector()


def add_knobs(parser: argparse.ArgumentParser) -> None:
    """Add the knob options (all default to the detector's own defaults)."""
    group = parser.add_argument_group("early-stopping knobs (noise-aware; see DET-11 for others)")
    group.add_argument(
        "--min-delta", type=float, help="a drop must also exceed this, in the metric's units (0)"
    )
    group.add_argument(
        "--warmup-evals",
        type=int,
        help=f"no stop before this many valid evaluations ({_DEFAULTS.warmup_evals})",
    )
    group.add_argument("--warmup-steps", type=int, help="no stop before this step (0)")
    group.add_argument(
        "--baseline", type=float, help="stop a run whose smoothed score stays well below this"
    )


def add_side_options(parser: argparse.ArgumentParser) -> None:
    """``--proxy-metric`` and ``--kl-metric``, the side signals ``replay`` and ``watch`` read
    beside the metric (``SIG-10``, ``WCH-16``)."""
    parser.add_argument(
        "--proxy-metric",
        metavar="KEY",
        help="the proxy reward logged with each evaluation, for the divergence detector "
        "(default: proxy_reward, where a log has it)",
    )
    parser.add_argument(
        "--kl-metric",
        metavar="KEY",
        help="the KL logged with each evaluation, for the kl-budget and divergence detectors "
        "(default: kl, where a log has it)",
    )


def knobs(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs given on the command line, as keyword arguments of ``make_detector``."""
    given = {
        "min_delta": args.min_delta,
        "warmup_evals": args.warmup_evals,
        "warmup_steps": args.warmup_steps,
        "baseline": args.baseline,
    }
    return {name: value for name, value in given.items() if value is not None}


def build_detector(
    name: str | None, k: int | None, given: dict[str, Any], **options: Any
) -> Detector[Any] | None:
    """The detector ``replay`` and ``watch`` use, by one rule (``RPL-10``, ``WCH-2``).

    None (the monitor's default) when neither ``--detector``, ``--k`` nor a knob is given; a
    knob without ``--detector`` and ``--k`` builds ``noise-aware``; ``--k`` alone ``evalstop``.

    Raises:
        ValueError: a bad parameter, or a knob the detector does not take.
    """
    if name is None and k is None and not given:
        return None
    if name is None:
        name = "noise-aware" if given and k is None else "evalstop"
    return make_detector(name, **({} if k is None else {"k": k}), **given, **options)
