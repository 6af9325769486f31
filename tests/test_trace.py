"""Perfetto traces that Perfetto keeps, for every schedule: flows end at or after they start, and the
slices of a track never overlap once timestamps become whole nanoseconds (either way an importer
converts microseconds); the timeline overview shows busy fractions of sub-pixel spans."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from test_golden import PROBLEMS

import gpusim
from gpusim.report.timeline import busy_fractions
from gpusim.report.trace import trace_events, us_of_ns


def _ns(us: float) -> tuple[int, int]:
    """What importers make of a microsecond value: truncated and rounded nanoseconds."""
    return int(us * 1000), round(us * 1000)


@pytest.mark.parametrize("name", gpusim.schedules())
def test_trace_invariants(name: str) -> None:
    """Every flow end >= its start; consecutive slices on a track do not overlap after conversion."""
    p = gpusim.predict(name, costs="datasheet", record=True, attribute=False, **PROBLEMS[name])
    events = trace_events(p.timeline)
    starts = {e["id"]: e["ts"] for e in events if e["ph"] == "s"}
    ends = [e for e in events if e["ph"] == "f"]
    assert len(ends) == len(starts)
    for e in ends:
        assert e["ts"] >= starts[e["id"]]
    tracks: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append(e)
    for slices in tracks.values():
        slices.sort(key=lambda e: e["ts"])
        for convert in (0, 1):
            for a, b in itertools.pairwise(slices):
                assert _ns(a["ts"])[convert] + _ns(a["dur"])[convert] <= _ns(b["ts"])[convert], (a, b)


def test_microseconds_convert_to_the_same_nanoseconds_either_way() -> None:
    for ns in (0, 1, 7, 999, 1001, 1007, 123_456_789, 2**40 + 3):
        x = us_of_ns(ns)
        assert int(x * 1000) == round(x * 1000) == ns and math.isclose(x, ns / 1000)


def test_busy_fraction_per_pixel() -> None:
    """Spans much shorter than a bin still count: 46% busy in many tiny spans reads as 0.46 per bin."""
    spans = [(i * 100.0, i * 100.0 + 46.0) for i in range(1000)]
    frac = busy_fractions(spans, 0.0, 100_000.0, 50)
    assert np.allclose(frac, 0.46)
    assert busy_fractions([(0.0, 5.0), (10.0, 12.0), (11.0, 15.0)], 0.0, 20.0, 4).tolist() == [1, 0, 1, 0]
