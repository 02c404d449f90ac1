"""The early-stopping knobs users know from Keras, Hugging Face and Lightning, as CLI options.

``--min-delta``, ``--warmup-evals``, ``--warmup-steps`` and ``--baseline`` build the
``noise-aware`` detector's parameters (spec ``NAD-4``); ``evalstop`` takes ``--min-delta`` and
``--warmup-steps``, ``lossplateau`` ``--warmup-steps`` and ``--baseline`` (``DET-11``); a knob
a detector does not take is an error naming the option.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_knobs", "knobs"]


def add_knobs(parser: argparse.ArgumentParser) -> None:
    """Add the knob options (all default to the detector's own defaults)."""
    group = parser.add_argument_group("early-stopping knobs (noise-aware; see DET-11 for others)")
    group.add_argument(
        "--min-delta", type=float, help="a drop must also exceed this, in the metric's units (0)"
    )
    group.add_argument(
        "--warmup-evals", type=int, help="no stop before this many valid evaluations (4)"
    )
    group.add_argument("--warmup-steps", type=int, help="no stop before this step (0)")
    group.add_argument(
        "--baseline", type=float, help="stop a run whose smoothed score stays well below this"
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
