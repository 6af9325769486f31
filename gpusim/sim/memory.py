"""Chip-wide L2 and HBM bandwidth shared fairly among in-flight transfers, and per-SM memory ports.

Each simulated SM has an ingress port (loads: TMA, cp.async, ldg) and an egress port (stores). A port
serves its transfers in issue order; the transfer at its head is *active*. Active transfers share the
L2 and HBM bandwidth by max-min fairness (progressive filling), each limited by its port's own rate.
A simulated SM stands for ``weight`` identical SMs, so its transfer counts ``weight`` times on the
chip-wide resources: a lone SM in a tail wave gets more bandwidth than one of 132.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from gpusim.sim.spanlog import BusyLog

_EPS_BYTES = 1e-6


@dataclass(slots=True, eq=False)
class Transfer:
    """One load or store moving ``bytes`` through L2 (``l2_coef`` per byte) and HBM (``hbm_coef``)."""

    bytes: float
    l2_coef: float
    hbm_coef: float
    latency_ns: float
    weight: float
    on_done: Callable[[], None] | None
    done: simpy.Event
    remaining: float = 0.0
    rate: float = 0.0
    port: Port | None = None
    is_write: bool = False


@dataclass(slots=True, eq=False)
class Port:
    """A per-SM memory port serving its transfers one after another at up to ``cap_bytes_per_ns``."""

    net: FlowNetwork
    name: str
    cap_bytes_per_ns: float
    weight: float
    queue: deque[Transfer] = field(default_factory=deque)
    busy_ns: float = 0.0
    bytes_moved: float = 0.0
    spans: BusyLog | None = None
    _head_since: float = 0.0

    def submit(self, transfer: Transfer) -> None:
        """Queue a transfer; it starts when the transfers before it have moved their bytes."""
        transfer.port = self
        transfer.remaining = transfer.bytes
        self.queue.append(transfer)
        if len(self.queue) == 1:
            self._head_since = self.net.env.now
            self.net.activate(transfer)

    def head_finished(self, transfer: Transfer) -> None:
        """Called by the network when the head transfer has moved all its bytes."""
        popped = self.queue.popleft()
        assert popped is transfer
        now = self.net.env.now
        self.busy_ns += now - self._head_since
        self.bytes_moved += transfer.bytes
        if self.spans is not None:
            self.spans.append(self._head_since, now, "store" if transfer.is_write else "load")
        if self.queue:
            self._head_since = now
            self.net.activate(self.queue[0])


class FlowNetwork:
    """Max-min fair sharing of L2 and HBM bandwidth among the active transfers of all ports."""

    def __init__(self, env: simpy.Environment, l2_bytes_per_ns: float, hbm_bytes_per_ns: float) -> None:
        self.env = env
        self.l2_capacity = l2_bytes_per_ns
        self.hbm_capacity = hbm_bytes_per_ns
        self.active: list[Transfer] = []
        self._last_update = 0.0
        self._version = 0
        self.hbm_read_bytes = 0.0
        self.hbm_write_bytes = 0.0
        self.l2_read_bytes = 0.0
        self.l2_write_bytes = 0.0
        self.hbm_rate_samples: list[tuple[float, float]] | None = None
        self.l2_rate_samples: list[tuple[float, float]] | None = None
        self.read_rate_samples: list[tuple[float, float, float]] | None = None
        """When recording: (t, L2 read bytes/ns, HBM read bytes/ns), for the L2 hit rate over time."""

    def activate(self, transfer: Transfer) -> None:
        """A port's head transfer starts moving bytes."""
        self._advance()
        self.active.append(transfer)
        self._rerate_and_schedule()

    def _advance(self) -> None:
        now = self.env.now
        elapsed = now - self._last_update
        if elapsed > 0:
            for t in self.active:
                t.remaining -= t.rate * elapsed
        self._last_update = now

    def _rerate_and_schedule(self) -> None:
        self._assign_rates()
        if self.hbm_rate_samples is not None:
            # one pass, the same products added in the same order as ``sum`` of each did
            now = self.env.now
            hbm = l2 = read_l2 = read_hbm = 0  # an int, as sum() starts (and returns when empty)
            for t in self.active:
                flow = t.rate * t.weight
                hbm += flow * t.hbm_coef
                l2 += flow * t.l2_coef
                if not t.is_write:
                    read_l2 += flow * t.l2_coef
                    read_hbm += flow * t.hbm_coef
            self.hbm_rate_samples.append((now, hbm))
            self.l2_rate_samples.append((now, l2))  # type: ignore[union-attr]
            if self.read_rate_samples is not None:
                self.read_rate_samples.append((now, read_l2, read_hbm))
        self._version += 1
        if not self.active:
            return
        delay = math.inf
        for t in self.active:
            remaining = t.remaining
            if remaining < 0.0:  # max(remaining, 0.0) without the call
                remaining = 0.0
            until = remaining / t.rate
            if until < delay:
                delay = until
        version = self._version
        event = self.env.timeout(delay)
        event.callbacks.append(NetTimer(self, version))

    def _assign_rates(self) -> None:
        """Progressive filling: raise all unfrozen rates together until a resource or a port cap binds."""
        # Explicit loops (the hot path of every detailed event): the same sums in the same order as
        # before, so the rates are bit-identical.
        unfrozen = self.active
        l2_left, hbm_left = self.l2_capacity, self.hbm_capacity
        while unfrozen:
            l2_demand = hbm_demand = 0.0
            level_cap = math.inf
            for t in unfrozen:
                weight = t.weight
                l2_demand += weight * t.l2_coef
                hbm_demand += weight * t.hbm_coef
                cap = t.port.cap_bytes_per_ns  # type: ignore[union-attr]
                if cap < level_cap:
                    level_cap = cap
            level_l2 = l2_left / l2_demand if l2_demand > 0 else math.inf
            level_hbm = hbm_left / hbm_demand if hbm_demand > 0 else math.inf
            level = min(level_l2, level_hbm, level_cap)
            by_cap = level == level_cap
            by_hbm = not by_cap and level == level_hbm
            rate = max(level, 1e-12)
            rest = []
            for t in unfrozen:
                if by_cap:
                    bind = t.port.cap_bytes_per_ns <= level  # type: ignore[union-attr]
                elif by_hbm:
                    bind = t.hbm_coef > 0
                else:
                    bind = t.l2_coef > 0
                if bind:
                    t.rate = rate
                    l2_left -= rate * t.weight * t.l2_coef
                    hbm_left -= rate * t.weight * t.hbm_coef
                else:
                    rest.append(t)
            unfrozen = rest
            l2_left, hbm_left = max(l2_left, 0.0), max(hbm_left, 0.0)

    def _on_timer(self, version: int) -> None:
        if version != self._version:
            return
        self._advance()
        finished = [
            t
            for t in self.active
            if t.remaining <= _EPS_BYTES * max(1.0, t.bytes) or t.rate * 1e-9 >= t.remaining
        ]
        if not finished:
            finished = [min(self.active, key=lambda t: t.remaining / t.rate)]
        for t in finished:
            self.active.remove(t)
        for t in finished:
            self._account(t)
            t.port.head_finished(t)  # type: ignore[union-attr]
            finish = self.env.timeout(t.latency_ns)
            finish.callbacks.append(TransferDone(t))
        self._advance()
        self._rerate_and_schedule()

    def _account(self, t: Transfer) -> None:
        if t.is_write:
            self.l2_write_bytes += t.bytes * t.weight * t.l2_coef
            self.hbm_write_bytes += t.bytes * t.weight * t.hbm_coef
        else:
            self.l2_read_bytes += t.bytes * t.weight * t.l2_coef
            self.hbm_read_bytes += t.bytes * t.weight * t.hbm_coef


@dataclass(slots=True, eq=False)
class NetTimer:
    """The network's next-completion timer; stale once the rates changed (``version`` moved on)."""

    net: FlowNetwork
    version: int

    def __call__(self, _event: simpy.Event) -> None:
        self.net._on_timer(self.version)


@dataclass(slots=True, eq=False)
class TransferDone:
    """A transfer's bytes have landed after its latency: run its callback and fire its event."""

    transfer: Transfer

    def __call__(self, _event: simpy.Event) -> None:
        t = self.transfer
        if t.on_done is not None:
            t.on_done()
        t.done.succeed()
