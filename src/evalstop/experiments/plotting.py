"""What the three studies' plots share: whether matplotlib is there, and a headless pyplot.

The plots need the optional ``plots`` extra (matplotlib); every writer asks
:func:`plots_available` first and writes nothing without it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["PLOTS_HINT", "plots_available", "pyplot"]

PLOTS_HINT = "plots skipped: matplotlib is missing; pip install 'evalstop[plots]' to get them"


def plots_available() -> bool:
    """True when matplotlib is importable."""
    return importlib.util.find_spec("matplotlib") is not None


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive ``Agg`` backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
