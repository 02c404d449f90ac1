"""Plain-text tables for terminal output (pure: rows in, text out)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["format_table", "pct", "signed_pct"]


def pct(value: float, digits: int = 1) -> str:
    """A fraction as a percentage, or ``n/a`` for NaN."""
    return "n/a" if math.isnan(value) else f"{100 * value:.{digits}f}%"


def signed_pct(value: float, digits: int = 1) -> str:
    """A percentage change with its sign, or ``n/a`` for NaN."""
    return "n/a" if math.isnan(value) else f"{value:+.{digits}f}%"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str = "") -> str:
    """Left-aligned first column, right-aligned others, one space-padded line per row.

    Args:
        header: the column names.
        rows: the cells, already formatted, one sequence per row.
        title: a line printed above the header, if any.

    Returns:
        The table, lines joined by newlines, a dashed rule under the header.

    Raises:
        ValueError: a row without one cell per column.
    """
    widths = [len(h) for h in header]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells, header has {len(header)}")
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in rows]
    return "\n".join(out)
