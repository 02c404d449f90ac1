"""The event queue: a ``SortedList`` ordered by (time, rank, insertion sequence).

The sequence number makes every key unique, so two events are never compared with each other
and ties at equal time and rank come out in insertion order (spec ``ENG-2``).
"""

from __future__ import annotations

from sortedcontainers import SortedList

from evalstop.engine.events import Event

__all__ = ["EventQueue", "event_key", "precedes"]

EventKey = tuple[int, int, int]


def event_key(time: int, rank: int, seq: int) -> EventKey:
    """The sort key of an event.

    pre: time >= 0 and rank >= 0 and seq >= 0
    post: __return__ == (time, rank, seq)
    """
    return (time, rank, seq)


def precedes(a: EventKey, b: EventKey) -> bool:
    """True when the event keyed ``a`` is handled before the one keyed ``b``.

    pre: a != b
    post: __return__ != precedes(b, a)
    post: (a[0] < b[0]) <= __return__
    """
    return a < b


class EventQueue:
    """A priority queue of events; ``push`` and ``pop`` are O(log n)."""

    __slots__ = ("_items", "_seq")

    def __init__(self) -> None:
        self._items: SortedList[tuple[int, int, int, Event]] = SortedList()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, event: Event) -> None:
        """Add ``event``; its insertion sequence breaks any tie. O(log n).

        Raises:
            ValueError: the event's time is negative.
        """
        if event.time < 0:
            raise ValueError(f"event time must be >= 0, got {event.time}")
        self._items.add((*event_key(event.time, event.rank, self._seq), event))
        self._seq += 1

    def pop(self) -> Event:
        """Remove and return the first event. O(log n).

        Raises:
            IndexError: the queue is empty.
        """
        if not self._items:
            raise IndexError("pop from an empty event queue")
        return self._items.pop(0)[3]

    def peek(self) -> Event | None:
        """The first event without removing it, or None."""
        return self._items[0][3] if self._items else None

    def _check(self) -> None:
        """Assert the internal invariants (for stress tests)."""
        keys = [item[:3] for item in self._items]
        assert keys == sorted(keys)
        assert len(set(keys)) == len(keys)
        assert all(key[2] < self._seq for key in keys)
