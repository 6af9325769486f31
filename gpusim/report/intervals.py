"""Interval arithmetic on sorted, disjoint ``(start, end)`` lists (nanoseconds), for timelines."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of ``intervals`` as a sorted list of disjoint, non-empty intervals."""
    out: list[Interval] = []
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def subtract(base: list[Interval], cut: list[Interval]) -> list[Interval]:
    """``base`` minus ``cut``; both sorted and disjoint (as :func:`merge` returns)."""
    out: list[Interval] = []
    j = 0
    for a, b in base:
        start = a
        while j < len(cut) and cut[j][1] <= start:
            j += 1
        k = j
        while k < len(cut) and cut[k][0] < b:
            ca, cb = cut[k]
            if ca > start:
                out.append((start, ca))
            start = max(start, cb)
            if start >= b:
                break
            k += 1
        if start < b:
            out.append((start, b))
    return out


def clip(intervals: list[Interval], lo: float, hi: float) -> list[Interval]:
    """The parts of sorted, disjoint ``intervals`` inside ``[lo, hi]`` (a binary search finds the first,
    so clipping a long timeline to a short window costs the window, not the timeline)."""
    out: list[Interval] = []
    for i in range(bisect.bisect_right(intervals, lo, key=_end), len(intervals)):
        a, b = intervals[i]
        if a >= hi:
            break
        out.append((max(a, lo), min(b, hi)))
    return out


def _end(interval: Interval) -> float:
    return interval[1]


def total(intervals: Iterable[Interval]) -> float:
    """Summed length."""
    return sum(b - a for a, b in intervals)
