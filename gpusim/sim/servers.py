"""Per-SM agents that serve work in order at a fixed rate (tensor core, CUDA-core pipes, SFU, LSU, TMEM).

A FIFO server at a fixed rate needs no process of its own: the finish time of each request follows
from the time the server frees up, so a request costs one timeout event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import simpy


@dataclass(slots=True)
class Span:
    """A busy interval on an agent, for traces and timelines."""

    start_ns: float
    end_ns: float
    name: str


@dataclass(slots=True)
class FifoServer:
    """Serves requests in arrival order at ``rate_per_ns`` units of work per nanosecond."""

    env: simpy.Environment
    name: str
    rate_per_ns: float
    free_at_ns: float = 0.0
    busy_ns: float = 0.0
    work_done: float = 0.0
    spans: list[Span] | None = None
    _last_span: Span | None = field(default=None, repr=False)

    def reserve(
        self, amount: float, earliest_ns: float | None = None, label: str = ""
    ) -> tuple[float, float]:
        """Book ``amount`` of work; returns (start, end) in ns without creating an event."""
        now = self.env.now if earliest_ns is None else earliest_ns
        free = self.free_at_ns
        start = free if free > now else now  # max(now, free) without the call
        duration = amount / self.rate_per_ns
        end = start + duration
        self.free_at_ns = end
        self.busy_ns += duration
        self.work_done += amount
        if self.spans is not None and duration > 0:
            last = self._last_span
            if last is not None and last.name == label and abs(last.end_ns - start) < 1e-6:
                last.end_ns = end
            else:
                self._last_span = Span(start, end, label)
                self.spans.append(self._last_span)
        return start, end

    def serve(self, amount: float, label: str = "", extra_latency_ns: float = 0.0) -> simpy.Event:
        """An event that fires when ``amount`` of work (queued behind earlier work) is done."""
        _, end = self.reserve(amount, label=label)
        return self.env.timeout(end - self.env.now + extra_latency_ns)
