"""Recorded busy intervals, stored as columns.

A recorded simulation keeps every busy interval of every agent, port and role (for the attribution,
traces and timelines): millions of them in a long heterogeneous kernel. As objects each cost ~110
bytes; here a span is two doubles and a label index (20 bytes), and appending one allocates nothing
that outlives the call.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

SpanTuple = tuple[float, float, str]

_MERGE_TOLERANCE_NS = 1e-6


class SpanLog:
    """Busy intervals ``(start_ns, end_ns, label)`` in the order they were recorded."""

    __slots__ = ("_label_index", "_labelled", "_mergeable_label", "ends", "label_ids", "labels", "starts")

    def __init__(self, spans: list[SpanTuple] | None = None, *, labelled: bool = True) -> None:
        """``labelled=False`` keeps the busy intervals only (every label read back is ``""``), so a
        server busy without a break is one span whatever work it did."""
        self.starts = array("d")
        self.ends = array("d")
        self.label_ids = array("I")
        self.labels: list[str] = [""]
        self._label_index: dict[str, int] = {"": 0}
        self._labelled = labelled
        self._mergeable_label: str | None = None
        """The label of the last span ``extend_or_add`` may lengthen (None: it may lengthen none)."""
        for start, end, label in spans or ():
            self.append(start, end, label)

    def _new_label(self, label: str) -> int:
        index = self._label_index[label] = len(self.labels)
        self.labels.append(label)
        return index

    def append(self, start_ns: float, end_ns: float, label: str) -> None:
        """Record one span."""
        if not self._labelled:
            label = ""
        self.starts.append(start_ns)
        self.ends.append(end_ns)
        index = self._label_index.get(label)
        self.label_ids.append(self._new_label(label) if index is None else index)
        self._mergeable_label = None

    def extend_or_add(self, start_ns: float, end_ns: float, label: str) -> None:
        """Lengthen the span this method recorded last when this one continues it with the same label
        (a server busy without a break on one kind of work), else record a new one."""
        if not self._labelled:
            label = ""
        if self._mergeable_label == label and abs(self.ends[-1] - start_ns) < _MERGE_TOLERANCE_NS:
            self.ends[-1] = end_ns
            return
        self.starts.append(start_ns)
        self.ends.append(end_ns)
        index = self._label_index.get(label)
        self.label_ids.append(self._new_label(label) if index is None else index)
        self._mergeable_label = label

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[SpanTuple]:
        labels = self.labels
        return zip(self.starts, self.ends, [labels[i] for i in self.label_ids], strict=True)

    def __getitem__(self, index: int) -> SpanTuple:
        return self.starts[index], self.ends[index], self.labels[self.label_ids[index]]

    def intervals(self) -> Iterator[tuple[float, float]]:
        """The spans' ``(start_ns, end_ns)`` without labels."""
        return zip(self.starts, self.ends, strict=True)

    def continue_after(self, start_ns: float, shift_ns: float) -> None:
        """Time jumped from ``start_ns`` by ``shift_ns`` (the fast-forward): spans that start at or after
        ``start_ns`` move with it, a span crossing it is cut there and its rest continues after the jump.
        The order by start time is kept (a stable sort of the moved tail)."""
        starts, ends, ids = self.starts, self.ends, self.label_ids
        first = len(starts)  # the spans from here on end after the jump's start
        while first > 0 and ends[first - 1] > start_ns:
            first -= 1
        if first == len(starts):
            self._mergeable_label = None
            return
        in_place: list[tuple[float, float, int]] = []
        pieces: list[tuple[float, float, int]] = []
        for i in range(first, len(starts)):
            if starts[i] >= start_ns:
                in_place.append((starts[i] + shift_ns, ends[i] + shift_ns, ids[i]))
            else:
                in_place.append((starts[i], start_ns, ids[i]))
                pieces.append((start_ns + shift_ns, ends[i] + shift_ns, ids[i]))
        pieces.reverse()
        tail = sorted(in_place + pieces, key=_start)
        if first and tail and starts[first - 1] > tail[0][0]:
            whole = sorted([*zip(starts[:first], ends[:first], ids[:first], strict=True), *tail], key=_start)
            first, tail = 0, whole
        del starts[first:], ends[first:], ids[first:]
        for start, end, label_id in tail:
            starts.append(start)
            ends.append(end)
            ids.append(label_id)
        self._mergeable_label = None


def _start(span: tuple[float, float, int]) -> float:
    return span[0]
