"""A run source's listing, waited for at most a bound (spec ``WCH-15``).

A source that lists its runs from a server (MLflow's search) may never answer. A
:class:`BoundedListing` asks it in a daemon thread and waits at most ``wait`` seconds: when the
answer has not come, this poll goes on without that source's runs (one problem line), and the
source is not asked again until the pending call returns, so a server that never answers costs
one thread, not one a poll.
"""

from __future__ import annotations

import threading

from evalstop.watch.source import Run, RunSource

__all__ = ["BoundedListing"]


class BoundedListing:
    """``source.runs()`` waited for at most ``wait`` seconds.

    Args:
        source: the run source.
        wait: seconds a poll waits for its listing.
    """

    def __init__(self, source: RunSource, wait: float) -> None:
        self._source, self._wait = source, wait
        self._thread: threading.Thread | None = None
        self._answer: tuple[list[Run], list[str]] | None = None

    def _ask(self) -> None:
        try:
            self._answer = self._source.runs()
        except Exception as error:  # a source's own failure is a problem line, never fatal
            name = type(self._source).__name__
            self._answer = ([], [f"{name}: cannot list its runs ({error})"])

    def runs(self) -> tuple[list[Run], list[str]]:
        """The source's runs and problems; no runs and one problem when it has not answered
        within ``wait`` seconds (its call goes on, and is collected at a later poll)."""
        if self._thread is None:
            self._answer = None
            self._thread = threading.Thread(
                target=self._ask, daemon=True, name="evalstop-list-runs"
            )
            self._thread.start()
        self._thread.join(self._wait)
        if self._thread.is_alive():
            name = type(self._source).__name__
            return [], [f"{name}: its runs did not come within {self._wait:g} s; skipped"]
        self._thread = None
        answer, self._answer = self._answer, None
        return answer if answer is not None else ([], [])
