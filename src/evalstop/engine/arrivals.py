"""The fast engine's pending arrivals, fed into its event heap one at a time (``ENG-15``).

Every job's arrival is known when it is submitted, usually long before it happens. In one heap
with the jobs' checkpoints, the arrivals of a 100,000-job run made every push and pop of a
checkpoint climb about 17 levels instead of about 10. :class:`Arrivals` keeps them in a list
sorted latest first and puts only the earliest into the heap (the *fed* one, plus any submitted
earlier than it); when the fed arrival is handled the next one goes in. The heap's first event
is therefore still the first pending event, in the order of ``ENG-2``.
"""

from __future__ import annotations

import heapq

from evalstop.core.model import JobId

__all__ = ["Arrivals", "QueueItem"]

QueueItem = tuple[int, int, int, JobId, int, int]
"""(time, rank, sequence, job id, checkpoint index, epoch): an event, ordered as ``ENG-2``."""


class Arrivals:
    """The arrivals that wait outside the heap.

    Invariant: every item held here comes after :attr:`fed`, an arrival in the heap and the
    last of the heap's arrivals; ``fed`` is None only when nothing is held here.
    """

    __slots__ = ("_items", "_new", "fed")

    def __init__(self) -> None:
        self._items: list[QueueItem] = []  # sorted latest first
        self._new: list[QueueItem] = []  # held since the last sort
        self.fed: QueueItem | None = None

    def __len__(self) -> int:
        """How many arrivals wait outside the heap."""
        return len(self._items) + len(self._new)

    def submit(self, queue: list[QueueItem], item: QueueItem) -> None:
        """Schedule the arrival ``item``: into the heap ``queue`` if it comes before the fed
        arrival (or none is fed: it becomes the fed one), else held here."""
        fed = self.fed
        if fed is None or item < fed:
            heapq.heappush(queue, item)
            if fed is None:
                self.fed = item
        else:
            self._new.append(item)

    def arrived(self, queue: list[QueueItem], time: int, job_id: JobId) -> None:
        """Job ``job_id``'s arrival at ``time`` was handled; if it was the fed one, the next
        held arrival goes into the heap ``queue`` (a job arrives once, so time and id name it)."""
        fed = self.fed
        if fed is None or fed[3] != job_id or fed[0] != time:
            return
        items = self._items
        if self._new:  # submits in time order make this one merge of two runs: O(n)
            items += self._new
            self._new.clear()
            items.sort(reverse=True)
        self.fed = following = items.pop() if items else None
        if following is not None:
            heapq.heappush(queue, following)
