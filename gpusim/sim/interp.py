"""Role programs executed as simpy processes: one generator per role replica per CTA."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import simpy

from gpusim.errors import InputError, quote
from gpusim.schedule.program import Stmt
from gpusim.sim.hardware import warps_per_smsp
from gpusim.sim.limits import WorkBudget
from gpusim.sim.spanlog import SpanLog
from gpusim.sim.sync import (
    ChunkBuffer,
    Credit,
    Cursor,
    EventBarrier,
    Land,
    NamedBarrier,
    Stage,
    StageRing,
    Tag,
    Turnstile,
)

if TYPE_CHECKING:
    from gpusim.schedule.ir import Role, Schedule
    from gpusim.sim.hardware import SimSM
    from gpusim.sim.l2cache import WaveMisses


@dataclass(eq=False)
class Cta:
    """One simulated CTA: its units, buffers, barriers and the SM it runs on."""

    env: simpy.Environment
    sched: Schedule
    sm: SimSM
    rank: int
    units: list[dict[str, Any]]
    wave_offset: int
    miss: WaveMisses
    rings: dict[str, StageRing] = field(default_factory=dict)
    chunks: dict[str, ChunkBuffer] = field(default_factory=dict)
    named: dict[str, NamedBarrier] = field(default_factory=dict)
    events: dict[str, EventBarrier] = field(default_factory=dict)
    turnstiles: dict[str, Turnstile] = field(default_factory=dict)
    syncthreads: NamedBarrier | None = None
    peers: dict[str, list[Cta]] = field(default_factory=dict)
    """Operand -> the CTAs of the cluster that receive this CTA's multicast of it (itself included)."""
    pair: list[SimSM] = field(default_factory=list)
    outstanding: list[simpy.Event] = field(default_factory=list)
    """Stores (stg) this CTA issued that may still be in flight (the completed ones at its head are dropped)."""
    operand_multicast: dict[str, int] = field(default_factory=dict)
    memo: dict[tuple, Any] = field(default_factory=dict)
    """Values of program expressions by the values of the names they read (shared by the CTAs of one
    simulation; a cache, not state: expressions are pure)."""
    first_warp: int = 0
    """The SM warp slot of this CTA's first warp (CTA position on the SM x warps per CTA)."""
    dynamic_names: frozenset[str] | None = None
    """The names whose values change as roles run (loop variables, ``tile``, the units' fields): an
    expression that reads none of them has one value per role replica, kept without a memo key
    (None: every expression goes through the memo)."""
    work: WorkBudget = field(default_factory=lambda: WorkBudget(None))
    """The program operations the simulation may still interpret (shared by all its CTAs)."""
    wave_of: Callable[[int], int] | None = None
    """The L2 model's wave of this CTA's ``i``-th unit when the units come from a tile counter
    (gpusim/sim/tilequeue.py); None: ``wave_offset + i``."""

    def miss_fraction(self, operand: str | None, tile: int) -> float:
        """Fraction of an operand's bytes that come from HBM in this tile's wave."""
        if operand is None:
            return 1.0
        wave = self.wave_offset + tile if self.wave_of is None else self.wave_of(tile)
        if wave >= len(self.miss):
            return 1.0
        return self.miss[wave].get(operand, 1.0)


@dataclass(slots=True, eq=False)
class LoopFrame:
    """One active loop of a role: a ``for`` (``var``) or the persistent tile loop (``var`` = tile)."""

    stmt: Stmt
    var: str
    value: int
    stop: int
    every: int = 1
    offset: int = 0
    settled: bool = False
    """Set by the fast-forward once no further whole period fits in this loop instance."""


def _warp_offset(sched: Schedule, role: Role, replica: int) -> int:
    """The CTA warp index of a role replica's first warp: roles in file order, replicas in turn."""
    offset = 0
    for other in sched.roles.values():
        if other is role:
            return offset + replica * role.warps
        offset += other.warps * other.replicas
    return offset


class RoleRunner:
    """Interprets one role replica's program on one CTA."""

    def __init__(self, cta: Cta, role: Role, replica: int) -> None:
        self.cta = cta
        self.role = role
        self.replica = replica
        self.env = cta.env
        self.sm = cta.sm
        self.vars: dict[str, Any] = {**cta.sched.env, "r": replica, "cta_rank": cta.rank}
        self.loop: Tag = {}
        self.queues: dict[str, deque[simpy.Event]] = {}
        self.held: dict[str, list[Stage]] = {}
        self.cursors: dict[str, Cursor] = {}
        self.last_mma: simpy.Event | None = None
        self.blocked_on = "starting"
        self.finished = False
        self.warps = role.warps
        self.smsp_warps = warps_per_smsp(cta.first_warp + _warp_offset(cta.sched, role, replica), role.warps,
                                         cta.sm.smsps)  # fmt: skip
        """How many of this replica's warps sit on each SM sub-partition."""
        self.name = f"{role.name}[{replica}]" if role.replicas > 1 else role.name
        self._lookahead: dict[tuple[int, int], list[Stmt]] = {}
        self.spans: SpanLog | None = SpanLog() if cta.sm.record_spans else None
        self.frames: list[LoopFrame] = []
        """The loops the role is in, outermost first (the fast-forward reads and advances them)."""
        self.work = cta.work
        self.pc: Stmt | None = None
        """The statement the role is executing (or blocked in)."""
        self.op_start_ns = 0.0
        self.ff: Any = None
        """The fast-forward controller (gpusim.sim.fastforward), or None in an exact run."""
        self.constants: dict[Any, Any] = {}
        """Values of the expressions that read no dynamic name (``Cta.dynamic_names``), by expression
        (``size``: by ("size", expression); counts by (minimum, whole, expression)): constant for this
        replica (a cache, not state)."""
        rates = self.sm.rates
        wake = {op: getattr(rates, field) for op, field in _WAKE.items() if getattr(rates, field) > 0}
        self.wake_ns: dict[str, float] | None = wake or None
        """Per barrier-waiting op, how long a waiter takes to resume after the barrier completes (the
        ``sync_latency`` mechanism); None: every waiter resumes at once."""
        self.varying: set[Any] = set()
        """The expressions that read a dynamic name (evaluated through the memo every time)."""

    # ---- driver -----------------------------------------------------------------------------------

    def run(self) -> Generator[simpy.Event, Any, None]:
        """The process body."""
        yield from self._block(self.role.program)
        for name, q in self.queues.items():
            for ev in list(q):
                if not ev.processed:
                    self.blocked_on = f"draining async queue '{name}' at exit"
                    yield ev
        self.finished = True
        self.blocked_on = "finished"
        for t in self.cta.turnstiles.values():
            if t.name in self._turnstiles_used():
                t.leave(self.replica)

    def _turnstiles_used(self) -> set[str]:
        from gpusim.schedule.program import walk

        return {s.args.name for s, _ in walk(self.role.program) if s.op == "turn"}

    def _block(self, stmts: tuple[Stmt, ...]) -> Generator[simpy.Event, Any, None]:
        work = self.work
        for i, stmt in enumerate(stmts):
            work.left -= 1
            if work.left < 0:
                raise work.exhausted(self._at(stmt))
            if stmt.guard is not None:
                taken = self._eval(stmt.guard, stmt)
                if type(taken) is str:
                    raise InputError(f"{stmt.where}: if: evaluates to the word {quote(taken, 60)!r}, not a "
                                     "condition (compare it: op == \"copy\")")  # fmt: skip
                if not taken:
                    continue
            self.pc = stmt
            op = stmt.op
            if op == "for":
                yield from self._for(stmt)
            elif op == "tiles":
                yield from self._tiles(stmt)
            elif op == "turn":
                yield from self._turn(stmt)
            else:
                self.blocked_on = stmt.where
                event = _HANDLERS[op](self, stmt, stmts, i)
                wake = None if self.wake_ns is None else self.wake_ns.get(op)
                if event is None and wake is not None and op in _ROUND_OPS:
                    event, wake = self.env.timeout(wake), None  # the completing arrival waits the round too
                if event is not None:
                    self.op_start_ns = self.env.now
                    yield event
                    if wake is not None:  # sync_latency: a waiter resumes a while after the barrier completes
                        yield self.env.timeout(wake)
                    if self.spans is not None and self.env.now > self.op_start_ns:
                        self.spans.append(self.op_start_ns, self.env.now, _span_label(stmt))

    def _key(self, kind: Any, expr: Any) -> tuple:
        """The memo key: what is evaluated and the values of every name it reads."""
        names = self.cta.memo.get(expr)
        if names is None:
            names = self.cta.memo[expr] = tuple(sorted(expr.names))
        get = self.vars.get
        return (kind, expr, *map(get, names))

    def _keep(self, key: Any, expr: Any, value: Any) -> bool:
        """Keep a value of ``expr`` under ``key`` if it cannot change (it reads no dynamic name); whether
        it was kept."""
        if expr in self.varying:
            return False
        dynamic = self.cta.dynamic_names
        if dynamic is None or not expr.names.isdisjoint(dynamic):
            self.varying.add(expr)
            return False
        self.constants[key] = value
        return True

    def _at(self, stmt: Stmt) -> str:
        """Where ``stmt`` is, for a message: its file and path, and which replica of the role ran it."""
        return f"{stmt.where} (replica {self.name})" if self.name != self.role.name else stmt.where

    def _eval(self, expr: Any, stmt: Stmt) -> Any:
        value = self.constants.get(expr, _MISSING)
        if value is not _MISSING:
            return value
        memo = self.cta.memo
        key = self._key(None, expr)
        value = memo.get(key, _MISSING)
        if value is _MISSING:
            value = expr(self.vars, where=stmt.where)
            _remember(memo, key, value)
        if self._keep(expr, expr, value):
            return value  # the fast-forward records only reads of dynamic names
        ff = self.ff
        if ff is not None and ff.logging:  # observe() records nothing while the fast-forward is not logging
            ff.observe(self, expr, value)
        return value

    def count(self, stmt: Stmt, expr: Any, minimum: float = 0, whole: bool = True) -> int:
        """``stmt.count`` of ``expr`` in this role's variables (told to the fast-forward)."""
        constant = (minimum, whole, expr)
        value = self.constants.get(constant, _MISSING)
        if value is not _MISSING:
            return value
        memo = self.cta.memo
        key = self._key((minimum, whole), expr)
        value = memo.get(key, _MISSING)
        if value is _MISSING:
            value = stmt.count(expr, self.vars, minimum=minimum, whole=whole)
            _remember(memo, key, value)
        if self._keep(constant, expr, value):
            return value
        ff = self.ff
        if ff is not None and ff.logging:  # observe() records nothing while the fast-forward is not logging
            ff.observe(self, expr, value)
        return value

    def size(self, stmt: Stmt, expr: Any) -> float:
        """``stmt.size`` of ``expr`` in this role's variables (told to the fast-forward)."""
        constant = ("size", expr)
        value = self.constants.get(constant, _MISSING)
        if value is not _MISSING:
            return value
        memo = self.cta.memo
        key = self._key("size", expr)
        value = memo.get(key, _MISSING)
        if value is _MISSING:
            value = stmt.size(expr, self.vars)
            _remember(memo, key, value)
        if self._keep(constant, expr, value):
            return value
        ff = self.ff
        if ff is not None and ff.logging:  # observe() records nothing while the fast-forward is not logging
            ff.observe(self, expr, value)
        return value

    # ---- control flow ----------------------------------------------------------------------------

    def _for(self, stmt: Stmt) -> Generator[simpy.Event, Any, None]:
        args = stmt.args
        var = args.var
        start = self.count(stmt, args.start, minimum=-math.inf, whole=True)
        stop = self.count(stmt, args.stop, minimum=-math.inf, whole=True)
        frame = LoopFrame(stmt, var, start, stop)
        self.frames.append(frame)
        work = self.work
        while frame.value < frame.stop:
            work.left -= 1  # an iteration is work even when its body is empty or guarded off
            if work.left < 0:
                raise work.exhausted(self._at(stmt))
            self.vars[var] = frame.value
            self.loop[var] = frame.value
            if self.ff is not None:
                self.ff.iteration(self, frame)
            yield from self._block(stmt.body)
            frame.value += 1
        self.frames.pop()
        self.loop.pop(var, None)

    def _tiles(self, stmt: Stmt) -> Generator[simpy.Event, Any, None]:
        args = stmt.args
        every = 1 if args.every is None else self.count(stmt, args.every, minimum=1)
        offset = 0 if args.offset is None else self.count(stmt, args.offset)
        units = self.cta.units
        taken = None if self.cta.wave_of is None else units  # a tile counter: units end when it runs out
        frame = LoopFrame(stmt, "tile", 0, len(units) if taken is None else taken.bound, every, offset)
        self.frames.append(frame)
        while frame.value < frame.stop:
            ordinal = frame.value
            if taken is not None and not taken.reach(ordinal):
                break
            if ordinal >= offset and (ordinal - offset) % every == 0:
                self.vars.update(self.cta.units[ordinal])
                self.vars["tile"] = ordinal
                self.loop = {"tile": ordinal}
                if self.ff is not None:
                    self.ff.iteration(self, frame)
                yield from self._block(stmt.body)
            frame.value += 1
        self.frames.pop()

    def _turn(self, stmt: Stmt) -> Generator[simpy.Event, Any, None]:
        name = stmt.args.name
        turnstile = self.cta.turnstiles.get(name)
        if turnstile is None:
            raise InputError(f"{stmt.where}: unknown turnstile '{name}'")
        event = turnstile.wait_turn(self.replica)
        if event is not None:
            self.blocked_on = (
                f"{stmt.where} (waiting for its turn on '{name}', held by replica {turnstile.token})"
            )
            self.op_start_ns = self.env.now
            yield event
            if self.wake_ns is not None and "turn" in self.wake_ns:  # sync_latency
                yield self.env.timeout(self.wake_ns["turn"])
            if self.spans is not None and self.env.now > self.op_start_ns:
                self.spans.append(self.op_start_ns, self.env.now, f"turn {name}")
        yield from self._block(stmt.body)
        turnstile.pass_turn(self.replica)

    # ---- helpers ----------------------------------------------------------------------------------

    def ring(self, stmt: Stmt, name: str) -> StageRing:
        """The protocol ring of buffer ``name``."""
        ring = self.cta.rings.get(name)
        if ring is None:
            raise InputError(f"{stmt.where}: buffer '{name}' has no protocol (or does not exist); "
                             f"acquire/commit/wait/release need a buffer with a protocol")  # fmt: skip
        return ring

    def context(self, stmt: Stmt) -> Tag:
        """The consumer's loop context with ``at`` overrides applied."""
        ctx = dict(self.loop)
        for key, expr in getattr(stmt.args, "at", _NO_OVERRIDES).items():
            ctx[key] = value = expr(self.vars, where=stmt.where)
            if self.ff is not None:
                self.ff.observe(self, expr, value, tag_name=key)
        return ctx

    def queue(self, name: str) -> deque[simpy.Event]:
        """The async queue ``name`` of this role replica."""
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = deque()
        return q

    def push(self, name: str, event: simpy.Event) -> None:
        """Append an async op to queue ``name``, first dropping the completed ops at its head: a role that
        never waits on the queue (cp.async completing on an mbarrier) would otherwise hold every op of the
        kernel. Exact: ``wait_async`` waits for all but the newest ``pending`` ops, and a completed op
        at the head never changes that."""
        q = self.queue(name)
        while q and q[0].processed:
            q.popleft()
        q.append(event)

    def expected_bytes(self, stmts: tuple[Stmt, ...], index: int, buf: str) -> float:
        """Bytes of the tma_load / cp_async ops into ``buf`` that follow this acquire (expect_tx)."""
        key = (id(stmts), index)
        following = self._lookahead.get(key)
        if following is None:
            following = []
            for stmt in stmts[index + 1 :]:
                if stmt.op == "acquire" and stmt.args.buf == buf:
                    break
                if stmt.op in ("tma_load", "cp_async") and stmt.args.buf == buf:
                    following.append(stmt)
            self._lookahead[key] = following
        total = 0.0
        for stmt in following:
            if stmt.guard is None or self._eval(stmt.guard, stmt):
                total += self.size(stmt, stmt.args.bytes)
        return total

    def transfer(self, nbytes: float, *, operand: str | None, write: bool, tma: bool = False,
                 on_done: Any = None) -> simpy.Event:  # fmt: skip
        """Move bytes for this role through its SM (the cost model is the SM's, see hardware.py)."""
        if write:
            miss = 1.0
        else:
            tile = int(self.vars.get("tile", 0))
            miss = self.cta.miss_fraction(operand, tile)
            if self.ff is not None:
                self.ff.observe_miss(self, operand, tile, miss)
        return self.sm.transfer(nbytes, miss=miss, write=write, tma=tma, on_done=on_done)


_WAKE = {
    "sync": "barrier_wake_ns",
    "syncthreads": "barrier_wake_ns",
    "acquire": "mbarrier_wake_ns",
    "wait": "mbarrier_wake_ns",
    "turn": "barrier_wake_ns",
}
"""Ops that wait at a barrier, and the ``Rates`` field with the time a waiter takes to resume after it
completes (G12): named barriers (bar.sync) and turnstiles, and mbarriers (stage rings, event barriers,
chunk landings)."""
_ROUND_OPS = frozenset({"sync", "syncthreads"})
"""Named-barrier ops whose every participant pays the barrier's round, the arrival that completes it
included (an mbarrier waiter that finds its phase complete does not wait)."""
_NO_OVERRIDES: dict[str, Any] = {}
_PRUNE_STORES = 32
"""A CTA's list of stores in flight drops its completed head once it is this long (else it would hold
every store of the kernel: memory and snapshot time that grow with the problem)."""
_MISSING = object()
_MEMO_ENTRIES = 65_536
"""The most remembered expression values per simulation (the memo starts over past it)."""


def _remember(memo: dict[tuple, Any], key: tuple, value: Any) -> None:
    if len(memo) >= _MEMO_ENTRIES:
        memo.clear()
    memo[key] = value


def _span_label(stmt: Stmt) -> str:
    """A short trace label: the op and what it names (``wait ab``, ``cuda softmax``, ``mma wgmma``)."""
    hit = _LABELS.get(id(stmt))
    if hit is not None and hit[0] is stmt:  # the entry holds the statement, so its id is not reused
        return hit[1]
    if stmt.label:
        label = stmt.label
    else:
        args = stmt.args
        target = next(
            (v for v in (getattr(args, f, None) for f in ("buf", "bar", "queue", "mix", "unit")) if v), ""
        )
        label = f"{stmt.op} {target}".strip()
    if len(_LABELS) >= _MEMO_ENTRIES:
        _LABELS.clear()
    _LABELS[id(stmt)] = (stmt, label)
    return label


_LABELS: dict[int, tuple[Stmt, str]] = {}
"""Trace labels by statement (a recorded run labels every op it runs)."""


# ---- op handlers: each returns an event to wait on, or None -----------------------------------------


def _acquire(rr: RoleRunner, stmt: Stmt, stmts: tuple[Stmt, ...], i: int) -> simpy.Event | None:
    buf = stmt.args.buf
    ring = rr.ring(stmt, buf)
    cursor = rr.cursors.setdefault(buf, Cursor())
    expect = rr.expected_bytes(stmts, i, buf) if ring.producer in ("tma", "cp_async") else 0.0
    event = ring.acquire(cursor, rr.context(stmt), expect)
    if event is not None:
        rr.blocked_on = f"{stmt.where} (acquire '{buf}': waiting for an empty stage)"
    return event


def _commit(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    buf = stmt.args.buf
    ring = rr.ring(stmt, buf)
    cursor = rr.cursors.get(buf)
    if cursor is None:
        raise InputError(
            f"{stmt.where}: commit of '{buf}' without a preceding acquire in role '{rr.role.name}'"
        )
    ring.commit(cursor, after=rr.last_mma if ring.producer == "umma" else None)


def _wait(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    ctx = rr.context(stmt)
    if stmt.args.bar is not None:
        name = stmt.args.bar
        barrier = rr.cta.events.get(name)
        if barrier is None:
            raise InputError(f"{stmt.where}: '{name}' is not an event barrier")
        tile = ctx.get("tile", 0)
        if tile < 0:
            return None
        event = barrier.wait((tile,))
        if event is not None:
            rr.blocked_on = f"{stmt.where} (event '{name}' for tile {tile})"
        return event
    buf = stmt.args.buf
    if buf in rr.cta.chunks:
        chunk = 0 if stmt.args.chunk is None else rr.count(stmt, stmt.args.chunk)
        event = rr.cta.chunks[buf].wait(ctx, rr.cta.chunks[buf].check_chunk(chunk, stmt.where))
        if event is not None:
            rr.blocked_on = f"{stmt.where} (chunk {chunk} of '{buf}' for {ctx})"
        return event
    ring = rr.ring(stmt, buf)
    holder = rr.held.setdefault(buf, [])
    event = ring.wait(ctx, holder, owner=rr)
    if event is not None:
        rr.blocked_on = f"{stmt.where} (waiting for {ring.describe_blocked(ctx)})"
    return event


def _release(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    buf = stmt.args.buf
    if buf in rr.cta.chunks:
        return None
    ring = rr.ring(stmt, buf)
    keep = 0 if stmt.args.keep is None else rr.count(stmt, stmt.args.keep)
    holder = rr.held.setdefault(buf, [])
    ring.release(holder, keep, after=rr.last_mma if ring.consumer == "umma" else None)
    return None


def _arrive(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    name = stmt.args.bar
    if name in rr.cta.named:
        rr.cta.named[name].arrive(rr.warps)
        return None
    if name in rr.cta.events:
        ctx = rr.context(stmt)
        rr.cta.events[name].arrive((ctx.get("tile", 0),))
        return None
    raise InputError(f"{stmt.where}: '{name}' is not a named or event barrier")


def _sync(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    name = stmt.args.bar
    barrier = rr.cta.named.get(name)
    if barrier is None:
        raise InputError(f"{stmt.where}: '{name}' is not a named barrier")
    event = barrier.arrive(rr.warps)
    if event is not None:
        rr.blocked_on = (
            f"{stmt.where} (named barrier '{name}': {barrier.arrived} of {barrier.warps} warps arrived)"
        )
    return event


def _syncthreads(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    barrier = rr.cta.syncthreads
    assert barrier is not None
    event = barrier.arrive(rr.warps)
    if event is not None:
        rr.blocked_on = f"{stmt.where} (__syncthreads: {barrier.arrived} of {barrier.warps} warps arrived)"
    return event


def _wait_async(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    q = rr.queue(stmt.args.queue)
    pending = rr.count(stmt, stmt.args.pending)
    while q and q[0].processed:
        q.popleft()
    if len(q) <= pending:
        return None
    waits = [q.popleft() for _ in range(len(q) - pending)]
    rr.blocked_on = f"{stmt.where} (async queue '{stmt.args.queue}': {len(waits) + pending} in flight)"
    return waits[-1] if len(waits) == 1 else rr.env.all_of(waits)


def _tma_load(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    args = stmt.args
    buf = args.buf
    nbytes = rr.size(stmt, args.bytes)
    multicast = 1 if args.multicast is None else rr.count(stmt, args.multicast, minimum=1)
    operand = args.operand
    cta = rr.cta
    share = nbytes / multicast
    receivers = cta.peers.get(operand, [cta]) if multicast > 1 and operand else [cta]
    if buf in cta.chunks:
        ctx = rr.context(stmt)
        if args.chunks is not None:
            lo, hi = (rr.count(stmt, e) for e in args.chunks)
        else:
            lo = 0 if args.chunk is None else rr.count(stmt, args.chunk)
            hi = lo + 1
        per_chunk = share / max(1, hi - lo)
        if hi > lo:
            cta.chunks[buf].check_chunk(lo, stmt.where)
            cta.chunks[buf].check_chunk(hi - 1, stmt.where)
        for c in range(lo, hi):
            buffers = [r.chunks[buf] for r in receivers]
            rr.transfer(per_chunk, operand=operand, write=False, tma=True,
                        on_done=Land(buffers, ctx, c))  # fmt: skip
        for r in receivers:
            r.sm.smem_charge(share, "fill")
        return None
    cursor = rr.cursors.get(buf)
    if cursor is None or cursor.current is None:
        raise InputError(
            f"{stmt.where}: tma_load into '{buf}' before an acquire of it in role '{rr.role.name}'"
        )
    key = cursor.current.key
    if key is None:
        raise InputError(f"{stmt.where}: tma_load into '{buf}' after the stage its last acquire opened was "
                         "released again (a release of a stage still being filled)")  # fmt: skip
    rings = [r.rings[buf] for r in receivers]
    rr.transfer(share, operand=operand, write=False, tma=True,
                on_done=Credit(rings, key, share))  # fmt: skip
    for r in receivers:
        r.sm.smem_charge(share, "fill")
    return None


def _tma_store(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    rr.sm.smem_charge(nbytes, "tma_store read")
    rr.push("tma_store", rr.transfer(nbytes, operand=None, write=True))


def _cp_async(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    buf = stmt.args.buf
    ring = rr.cta.rings.get(buf) if buf else None
    on_done = None
    if ring is not None and ring.producer == "cp_async":
        cursor = rr.cursors.get(buf)  # type: ignore[arg-type]
        if cursor is None or cursor.current is None:
            raise InputError(f"{stmt.where}: cp_async into '{buf}' before an acquire of it")
        key = cursor.current.key
        if key is None:
            raise InputError(f"{stmt.where}: cp_async into '{buf}' after the stage its last acquire opened was "
                             "released again (a release of a stage still being filled)")  # fmt: skip
        on_done = Credit([ring], key, nbytes)
    rr.sm.smem_charge(nbytes, "fill")
    rr.push("cp_async", rr.transfer(nbytes, operand=stmt.args.operand, write=False, on_done=on_done))


def _ldg(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    rr.push("ldg", rr.transfer(nbytes, operand=stmt.args.operand, write=False))


def _stg(rr: RoleRunner, stmt: Stmt, *_: Any) -> None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    outstanding = rr.cta.outstanding
    if len(outstanding) >= _PRUNE_STORES and outstanding[0].processed:  # completed stores: nothing reads them
        done = 1
        while done < len(outstanding) and outstanding[done].processed:
            done += 1
        del outstanding[:done]
    outstanding.append(rr.transfer(nbytes, operand=None, write=True))


def _reduce(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event:
    nbytes = rr.size(stmt, stmt.args.bytes)
    return rr.transfer(nbytes, operand=None, write=True)


def _smem(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    if stmt.args.ways is not None:  # bank conflicts: each wavefront replayed
        nbytes *= rr.count(stmt, stmt.args.ways, minimum=1)
    event = rr.sm.smem_access(nbytes, label=stmt.op)
    if stmt.op == "lds" and stmt.args.async_ is not None and rr._eval(stmt.args.async_, stmt):
        rr.push("lds", event)  # software-pipelined fragment loads: complete via wait_async lds
        return None
    return event


def _mma(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    args = stmt.args
    unit = args.unit
    m, n, k = (rr.size(stmt, e) for e in args.mnk)
    if m < 1 or n < 1 or k < 1:  # a 0 would issue nothing while the problem's FLOPs still count
        raise InputError(f"{stmt.where}: mnk evaluates to [{m:g}, {n:g}, {k:g}]; each must be at least 1")
    dtype = rr.cta.sched.mma_dtype(args.dtype, rr.vars)
    cta_group = 1 if args.cta_group is None else rr.count(stmt, args.cta_group, minimum=1)
    label = stmt.label or f"{unit} {int(m)}x{int(n)}x{int(k)}"
    event, synchronous = rr.sm.mma(unit, dtype, (m, n, k), warps=rr.warps, cta_group=cta_group,
                                   pair=rr.cta.pair, label=label, where=stmt.where,
                                   owner=f"{rr.cta.first_warp}:{rr.name}", a_space=args.a,
                                   smsp_warps=rr.smsp_warps)  # fmt: skip
    if synchronous:
        return event
    if unit == "wgmma":
        rr.push("wgmma", event)
    rr.last_mma = event
    return None


def _tmem(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event | None:
    nbytes = rr.size(stmt, stmt.args.bytes)
    event = rr.sm.tmem_access(nbytes, label=stmt.op)
    if stmt.op == "tmem_load":
        rr.push("tmem_ld", event)
        return None
    return event


def _cuda(rr: RoleRunner, stmt: Stmt, *_: Any) -> simpy.Event:
    args = stmt.args
    elems = rr.size(stmt, args.elems)
    if args.mix is not None:
        mix = rr.cta.sched.mixes.get(args.mix)
        if mix is None:
            raise InputError(
                f"{stmt.where}: unknown mix '{args.mix}'; known: {', '.join(rr.cta.sched.mixes)}"
            )
    else:
        mix = args.ops
    label = stmt.label or (args.mix or "cuda")
    return rr.sm.cuda(
        elems, mix, smsp_warps=rr.smsp_warps, label=label, owner=f"{rr.cta.first_warp}:{rr.name}"
    )


_HANDLERS = {
    "acquire": _acquire,
    "commit": _commit,
    "wait": _wait,
    "release": _release,
    "arrive": _arrive,
    "sync": _sync,
    "syncthreads": _syncthreads,
    "wait_async": _wait_async,
    "tma_load": _tma_load,
    "tma_store": _tma_store,
    "cp_async": _cp_async,
    "ldg": _ldg,
    "stg": _stg,
    "lds": _smem,
    "sts": _smem,
    "mma": _mma,
    "tmem_load": _tmem,
    "tmem_store": _tmem,
    "cuda": _cuda,
    "reduce": _reduce,
}
