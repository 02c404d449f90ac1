"""The fast engine's pending arrivals, fed into its event heap one at a time (``ENG-15``).

Every job's arrival is known when it is submitted, usually long before it happens. In one heap
with the jobs' checkpoints, the arrivals of a 100,000-job run made every push and pop of a
checkpoint climb about 17 levels instead of about 10. :class:`Arrivals` keeps them in a list
sorted earliest first and puts only the earliest into the heap (the *fed* one, plus any
submitted earlier than it); when the fed arrival is handled the next one goes in. The heap's
first event is therefore still the first pending event, in the order of ``ENG-2``. Submits in
time order only append to the list, so a run does not sort (nor touch) every pending arrival
when its first one is fed; submits out of order are sorted in then.
"""

from __future__ import annotations

import heapq
from typing import Any

from evalstop.core.model import JobId

__all__ = ["Arrivals", "QueueItem"]

_COMPACT = 1024  # fed items kept before the list is shortened

QueueItem = tuple[int, int, int, Any, int, int]
"""(time, rank, sequence, key, checkpoint index, epoch): an event, ordered as ``ENG-2`` (its
key is never compared: the sequence number is unique). An arrival's key is the job's id; in
the fast engine's heap a checkpoint's key is the job's record (``JobRecord``: no lookup by id
at each checkpoint)."""


class Arrivals:
    """The arrivals that wait outside the heap.

    Invariant: every item held here comes after :attr:`fed`, an arrival in the heap and the
    last of the heap's arrivals; ``fed`` is None only when nothing is held here. Held items
    are a list sorted earliest first, read from ``_head`` on (submits in time order, as
    ``simulate`` makes them, only append to it), plus those submitted out of order since the
    last merge, sorted in when the next arrival is fed.
    """

    __slots__ = ("_head", "_items", "_new", "fed")

    def __init__(self) -> None:
        self._items: list[QueueItem] = []  # sorted earliest first; those before _head were fed
        self._head = 0
        self._new: list[QueueItem] = []  # held out of order since the last merge
        self.fed: QueueItem | None = None

    def __len__(self) -> int:
        """How many arrivals wait outside the heap."""
        return len(self._items) - self._head + len(self._new)

    def submit(self, queue: list[QueueItem], item: QueueItem) -> None:
        """Schedule the arrival ``item``: into the heap ``queue`` if it comes before the fed
        arrival (or none is fed: it becomes the fed one), else held here."""
        fed = self.fed
        if fed is None or item < fed:
            heapq.heappush(queue, item)
            if fed is None:
                self.fed = item
            return
        items = self._items
        if not self._new and (len(items) == self._head or not item < items[-1]):
            items.append(item)  # in order: stays sorted
        else:
            self._new.append(item)

    def arrived(self, queue: list[QueueItem], time: int, job_id: JobId) -> None:
        """Job ``job_id``'s arrival at ``time`` was handled; if it was the fed one, the next
        held arrival goes into the heap ``queue`` (a job arrives once, so time and id name it)."""
        fed = self.fed
        if fed is None or fed[3] != job_id or fed[0] != time:
            return
        items, head = self._items, self._head
        if self._new:  # one sort of two sorted runs when submits came in time order: O(n)
            items = self._items = [*items[head:], *self._new]
            self._new.clear()
            items.sort()
            head = 0
        if head == len(items):
            self.fed = None
            items.clear()
            self._head = 0
            return
        self.fed = following = items[head]
        head += 1
        if head >= _COMPACT and 2 * head >= len(items):  # let the fed ones go: O(1) amortized
            del items[:head]
            head = 0
        self._head = head
        heapq.heappush(queue, following)
