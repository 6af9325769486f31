"""Limits on simulated work: they count events simulated in detail, never wall-clock seconds, so the
same command gives the same rows and the same result on a fast or a loaded machine."""

from __future__ import annotations

DEFAULT_MAX_EVENTS = 5_000_000
"""Events one simulation may simulate in detail (fast-forwarded periods do not count, nor events that
run no simulation code: one nothing waits on, a network or tensor-core timer made stale by a change of
rates). The shipped
schedules at the sizes of bench/bench_predict.py need well under a hundredth of it with the
fast-forward; an exact (``--exact``) run of a very large problem can exceed it."""
