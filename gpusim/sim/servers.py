"""Per-SM agents that serve work in order at a fixed rate (tensor core, CUDA-core pipes, SFU, LSU, TMEM).

A FIFO server at a fixed rate needs no process of its own: the finish time of each request follows
from the time the server frees up, so a request costs one timeout event.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from gpusim.sim.spanlog import BusyLog


@dataclass(slots=True)
class FifoServer:
    """Serves requests in arrival order at ``rate_per_ns`` units of work per nanosecond."""

    env: simpy.Environment
    name: str
    rate_per_ns: float
    free_at_ns: float = 0.0
    busy_ns: float = 0.0
    work_done: float = 0.0
    spans: BusyLog | None = None

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
            self.spans.extend_or_add(start, end, label)
        return start, end

    def serve(self, amount: float, label: str = "", extra_latency_ns: float = 0.0) -> simpy.Event:
        """An event that fires when ``amount`` of work (queued behind earlier work) is done."""
        _, end = self.reserve(amount, label=label)
        return self.env.timeout(end - self.env.now + extra_latency_ns)


@dataclass(slots=True, eq=False)
class TensorJob:
    """One MMA group on a shared tensor core: ``work_ns`` of service at the full rate, at most ``cap`` of
    the rate (an mma.sync role of one warp drives only its sub-partition's quarter)."""

    owner: str
    work_ns: float
    remaining_ns: float
    cap: float
    latency_ns: float
    done: simpy.Event
    label: str
    rate: float = 0.0
    smsp_warps: tuple[int, ...] = ()
    """For an mma.sync job on a core with a warp-rate table: the issuing warps on each sub-partition."""


@dataclass(slots=True, eq=False)
class CoreTimer:
    """The shared tensor core's next-completion timer; stale once the sharing changed."""

    core: SharedTensorCore
    version: int

    def __call__(self, _event: simpy.Event) -> None:
        self.core._on_timer(self.version)


@dataclass(slots=True, eq=False)
class JobDone:
    """An MMA group's result is there (after its latency): fire its event."""

    job: TensorJob

    def __call__(self, _event: simpy.Event) -> None:
        self.job.done.succeed()


_EPS_NS = 1e-9

COUPLING_LABEL = "CUDA-core work on the same sub-partitions"
"""The label of the tensor-core time that CUDA-core/SFU work takes from it (the ``pipe_coupling``
mechanism): a job with this label holds the tensor core without doing MMA work."""


@dataclass(slots=True, eq=False)
class IssueBatch:
    """The MMA groups issued at one instant: each issuer's groups in order, the issuers interleaved."""

    issued_ns: float
    queues: dict[str, deque[TensorJob]] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class SharedTensorCore:
    """A tensor core whose instruction queue interleaves the MMA groups issued together.

    MMA instructions execute in the order they were issued. Groups issued at the same instant by
    different issuers (two warpgroups woken by the same barrier) have their instruction streams
    interleaved by the warp schedulers, so they progress together and, if equal, finish together; a
    FIFO of whole groups would hand one of them its result a whole group early. Groups issued later
    wait behind them (a warpgroup that issues after the other's groups are queued, as in ping-pong, runs
    after them). Inside a batch each issuer's groups run in order and the issuers share the rate equally
    (progressive filling, each at most its ``cap``: an mma.sync role of one warp drives a quarter).
    Busy time integrates the rate in use, so utilization is counted as for a FIFO server.

    With ``sync_rate`` (the arch's measured mma.sync rate by warps per sub-partition; the
    ``mma_sync_issuing`` mechanism), mma.sync is not queued in batches: a warp's mma.sync instructions
    interleave with every other warp's at instruction granularity, so every mma.sync job in flight runs
    at once (``sync_jobs``). Each sub-partition delivers ``sync_rate(w)`` of its quarter of the peak for
    the ``w`` warps issuing mma.sync on it at that moment, shared among them by warp count; a warp busy
    with other work (softmax, a barrier) does not count. Batched groups share what is left.
    """

    env: simpy.Environment
    name: str
    rate_per_ns: float = 1.0
    batches: deque[IssueBatch] = field(default_factory=deque)
    active: list[TensorJob] = field(default_factory=list)
    sync_jobs: list[TensorJob] = field(default_factory=list)
    sync_rate: Callable[[float], float] | None = None
    busy_ns: float = 0.0
    work_done: float = 0.0
    coupled_ns: float = 0.0
    """Tensor-core time held by CUDA-core/SFU work on the same sub-partitions (``COUPLING_LABEL`` jobs):
    neither busy nor idle."""
    spans: BusyLog | None = None
    _last_update: float = 0.0
    _version: int = 0
    _busy_since: float = 0.0
    _busy_label: str = ""

    def submit(self, work_ns: float, owner: str, label: str = "", cap: float = 1.0,
               latency_ns: float = 0.0, smsp_warps: tuple[int, ...] = ()) -> simpy.Event:  # fmt: skip
        """Issue ``work_ns`` of full-rate tensor work by ``owner``; the event fires ``latency_ns`` after
        it is done. ``smsp_warps``: an mma.sync job's warps per sub-partition (with ``sync_rate``, it
        runs beside every other mma.sync job instead of in a batch)."""
        done = self.env.event()
        if work_ns <= 0:
            done.succeed()
            return done
        now = self.env.now
        self._advance()
        if label != COUPLING_LABEL:
            self.work_done += work_ns
        job = TensorJob(owner, work_ns, work_ns, min(max(cap, 1e-9), 1.0), latency_ns, done, label)
        if smsp_warps and self.sync_rate is not None:
            job.smsp_warps = smsp_warps
            if not self.active:
                self._busy_since = now
                self._busy_label = label
            self.sync_jobs.append(job)
            self.active.append(job)
            self._reschedule()
            return done
        batch = self.batches[-1] if self.batches else None
        if batch is None or batch.issued_ns != now:
            batch = IssueBatch(now)
            self.batches.append(batch)
        queue = batch.queues.get(owner)
        if queue is None:
            queue = batch.queues[owner] = deque()
        queue.append(job)
        if len(queue) == 1 and batch is self.batches[0]:
            if not self.active:
                self._busy_since = now
                self._busy_label = label
            self.active.append(job)
            self._reschedule()
        return done

    def _advance(self) -> None:
        now = self.env.now
        elapsed = now - self._last_update
        if elapsed > 0 and self.active:
            used = held = 0.0
            for job in self.active:
                job.remaining_ns -= job.rate * elapsed
                if job.label == COUPLING_LABEL:
                    held += job.rate
                else:
                    used += job.rate
            self.busy_ns += elapsed * used
            if held:
                self.coupled_ns += elapsed * held
        self._last_update = now

    def _assign_rates(self) -> None:
        """mma.sync jobs first (each sub-partition's rate for the warps issuing on it, split by warp
        count), then progressive filling of the rest: equal shares, each job at most its cap, the rest
        to the others."""
        left = self.rate_per_ns
        unfrozen = self.active
        if self.sync_jobs:
            left -= self._assign_sync_rates()
            unfrozen = [j for j in self.active if not j.smsp_warps]
            left = max(left, 0.0)
        while unfrozen:
            level = left / len(unfrozen)
            capped = [j for j in unfrozen if j.cap * self.rate_per_ns <= level]
            if not capped:
                for j in unfrozen:
                    j.rate = level
                return
            for j in capped:
                j.rate = j.cap * self.rate_per_ns
                left -= j.rate
            unfrozen = [j for j in unfrozen if j.cap * self.rate_per_ns > level]

    def _assign_sync_rates(self) -> float:
        """Rates of the mma.sync jobs in flight; returns their sum."""
        jobs = self.sync_jobs
        rate_of = self.sync_rate
        assert rate_of is not None
        smsps = len(jobs[0].smsp_warps)
        issuing = [0] * smsps
        for job in jobs:
            for smsp, count in enumerate(job.smsp_warps):
                issuing[smsp] += count
        quarter = self.rate_per_ns / smsps
        per_warp = [quarter * rate_of(w) / w if w else 0.0 for w in issuing]
        total = 0.0
        for job in jobs:
            job.rate = sum(per_warp[smsp] * count for smsp, count in enumerate(job.smsp_warps))
            total += job.rate
        return total

    def _reschedule(self) -> None:
        self._version += 1
        if not self.active:
            return
        self._assign_rates()
        delay = math.inf
        for job in self.active:
            if job.rate <= 0:  # a group waiting while mma.sync takes the whole core
                continue
            until = max(job.remaining_ns, 0.0) / job.rate
            if until < delay:
                delay = until
        timer = self.env.timeout(delay)
        timer.callbacks.append(CoreTimer(self, self._version))

    def _on_timer(self, version: int) -> None:
        if version != self._version:
            return
        self._advance()
        finished = [j for j in self.active if j.remaining_ns <= _EPS_NS * max(1.0, j.work_ns)]
        if not finished:
            finished = [min(self.active, key=lambda j: j.remaining_ns / j.rate if j.rate > 0 else math.inf)]
        batch = self.batches[0] if self.batches else None
        for job in finished:
            self.active.remove(job)
            if job.smsp_warps:
                self.sync_jobs.remove(job)
                continue
            assert batch is not None
            queue = batch.queues[job.owner]
            queue.popleft()
            if queue:
                self.active.append(queue[0])
            else:
                del batch.queues[job.owner]
        if batch is not None and not batch.queues:
            self.batches.popleft()
            if self.batches:
                self.active = self.sync_jobs + [q[0] for q in self.batches[0].queues.values()]
        if not self.active and self.spans is not None:
            self.spans.append(self._busy_since, self.env.now, self._busy_label)
        self._reschedule()
        for job in finished:
            if job.latency_ns > 0:
                self.env.timeout(job.latency_ns).callbacks.append(JobDone(job))
            else:
                job.done.succeed()
