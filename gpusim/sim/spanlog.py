"""Recorded busy intervals, stored as columns.

A recorded simulation keeps every busy interval of every agent, port and role (for the attribution,
traces and timelines): millions of them in a long heterogeneous kernel. As objects each cost ~110
bytes; here a span is two doubles (``BusyLog``, what the attribution reads of agents and ports) or two
doubles and a label index (``SpanLog``, for traces and timelines), and appending one allocates nothing
that outlives the call.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import repeat

SpanTuple = tuple[float, float, str]

_MERGE_TOLERANCE_NS = 1e-6


class BusyLog:
    """Busy intervals ``(start_ns, end_ns)`` in the order they were recorded, without what the work was
    (read back with the label ``""``): a server busy without a break is one span whatever it did."""

    __slots__ = ("_mergeable_label", "ends", "starts")

    def __init__(self, spans: list[SpanTuple] | None = None) -> None:
        self.starts = array("d")
        self.ends = array("d")
        self._mergeable_label: str | None = None
        """The label of the last span ``extend_or_add`` may lengthen (None: it may lengthen none; a
        ``BusyLog`` keeps no labels, so any label continues its ``""``)."""
        for start, end, label in spans or ():
            self.append(start, end, label)

    def append(self, start_ns: float, end_ns: float, label: str) -> None:
        """Record one span (``label`` is not kept)."""
        self.starts.append(start_ns)
        self.ends.append(end_ns)
        self._mergeable_label = None

    def extend_or_add(self, start_ns: float, end_ns: float, label: str) -> None:
        """Lengthen the span this method recorded last when this one continues it, else record one."""
        ends = self.ends
        if self._mergeable_label is not None and abs(ends[-1] - start_ns) < _MERGE_TOLERANCE_NS:
            ends[-1] = end_ns
            return
        self.starts.append(start_ns)
        ends.append(end_ns)
        self._mergeable_label = ""

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[SpanTuple]:
        return zip(self.starts, self.ends, repeat(""))

    def __getitem__(self, index: int) -> SpanTuple:
        return self.starts[index], self.ends[index], ""

    def intervals(self) -> Iterator[tuple[float, float]]:
        """The spans' ``(start_ns, end_ns)``."""
        return zip(self.starts, self.ends, strict=True)

    def _label_ids(self) -> array | None:
        return None

    def continue_after(self, start_ns: float, shift_ns: float) -> None:
        """Time jumped from ``start_ns`` by ``shift_ns`` (the fast-forward): spans that start at or after
        ``start_ns`` move with it, a span crossing it is cut there and its rest continues after the jump.
        The order by start time is kept (a stable sort of the moved tail)."""
        self._mergeable_label = None
        starts, ends, ids = self.starts, self.ends, self._label_ids()
        first = len(starts)  # the spans from here on end after the jump's start
        while first > 0 and ends[first - 1] > start_ns:
            first -= 1
        if first == len(starts):
            return
        in_place: list[tuple[float, float, int]] = []
        pieces: list[tuple[float, float, int]] = []
        for i in range(first, len(starts)):
            label_id = ids[i] if ids is not None else 0
            if starts[i] >= start_ns:
                in_place.append((starts[i] + shift_ns, ends[i] + shift_ns, label_id))
            else:
                in_place.append((starts[i], start_ns, label_id))
                pieces.append((start_ns + shift_ns, ends[i] + shift_ns, label_id))
        pieces.reverse()  # the cut spans' rests follow the moved ones, last first (stable for equal starts)
        tail = sorted(in_place + pieces, key=_start)
        if first and tail and starts[first - 1] > tail[0][0]:
            head = [(starts[i], ends[i], ids[i] if ids is not None else 0) for i in range(first)]
            first, tail = 0, sorted(head + tail, key=_start)
        del starts[first:], ends[first:]
        if ids is not None:
            del ids[first:]
        for start, end, label_id in tail:
            starts.append(start)
            ends.append(end)
            if ids is not None:
                ids.append(label_id)


class SpanLog(BusyLog):
    """Busy intervals with what they were: ``(start_ns, end_ns, label)``; each label is stored once."""

    __slots__ = ("_label_index", "label_ids", "labels")

    def __init__(self, spans: list[SpanTuple] | None = None) -> None:
        self.label_ids = array("I")
        self.labels: list[str] = []
        self._label_index: dict[str, int] = {}
        super().__init__(spans)

    def _label_id(self, label: str) -> int:
        index = self._label_index.get(label)
        if index is None:
            index = self._label_index[label] = len(self.labels)
            self.labels.append(label)
        return index

    def _label_ids(self) -> array | None:
        return self.label_ids

    def append(self, start_ns: float, end_ns: float, label: str) -> None:
        """Record one span."""
        self.starts.append(start_ns)
        self.ends.append(end_ns)
        self.label_ids.append(self._label_id(label))
        self._mergeable_label = None

    def extend_or_add(self, start_ns: float, end_ns: float, label: str) -> None:
        """Lengthen the span this method recorded last when this one continues it with the same label
        (a server busy without a break on one kind of work), else record a new one."""
        if self._mergeable_label == label and abs(self.ends[-1] - start_ns) < _MERGE_TOLERANCE_NS:
            self.ends[-1] = end_ns
            return
        self.append(start_ns, end_ns, label)
        self._mergeable_label = label

    def __iter__(self) -> Iterator[SpanTuple]:
        labels = self.labels
        return zip(self.starts, self.ends, [labels[i] for i in self.label_ids], strict=True)

    def __getitem__(self, index: int) -> SpanTuple:
        return self.starts[index], self.ends[index], self.labels[self.label_ids[index]]


def _start(span: tuple[float, float, int]) -> float:
    return span[0]
