"""The one progress bar of the long commands (``reproduce``, ``gym``)."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar"]


class ProgressBar:
    """A one-line progress bar on stderr; plain lines every 10% when stderr is not a terminal.

    Args:
        label: what the bar counts, first on its line (``"291 simulations"``, ``"gym"``).
        enabled: False draws nothing (``--no-progress``).
        unit: the name of the things counted (``workloads``, ``runs``).
    """

    def __init__(self, label: str, enabled: bool = True, unit: str = "workloads") -> None:
        self.label, self.enabled, self.unit = label, enabled, unit
        self.start = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last_decile = -1

    def __call__(self, done: int, total: int) -> None:
        """Show that ``done`` of ``total`` are done."""
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if self.tty:
            filled = 30 * done // total
            bar = "#" * filled + "." * (30 - filled)
            end = "\n" if done == total else ""
            line = f"\r{self.label} [{bar}] {done}/{total} {self.unit} {elapsed:5.1f}s{end}"
            sys.stderr.write(line)
            sys.stderr.flush()
        elif (decile := 10 * done // total) > self.last_decile:
            self.last_decile = decile
            sys.stderr.write(f"{self.label}: {done}/{total} {self.unit}, {elapsed:.1f}s\n")
