"""Steady-state fast-forward: skip whole periods of a simulation whose state has been seen to repeat.

A kernel's simulation is periodic almost everywhere: a mainloop repeats its k-iteration, a persistent
CTA repeats its tile. Each time an *anchor* role starts a loop iteration, the controller takes a
snapshot of the whole simulation state, with every time relative to now and every loop counter, ring
sequence number and tag as a number that may shift:

- the event queue (relative times, what each event resumes), every role's position (statement and
  loop frames), its async queues, held stages and ring cursors;
- every ring's stages (relative to the ring's sequence counter), credits, waiters; barriers and
  turnstiles; every agent's backlog; every memory port's queue and every in-flight transfer's
  remaining bytes and rate.

When a snapshot equals an earlier one at the same loop statement except for a uniform time shift
``dt``, a uniform shift per loop variable and per ring counter, the simulation has gone through one
*period*: the model is deterministic, so the next period repeats it, as long as everything the roles
read that depends on the shifted counters stays the same. Every such read during the observed period
is recorded (expressions of loop variables and tile fields, L2 miss fractions per wave, consumer
counts per tile) and re-evaluated at the shifted counters; the jump covers only the periods where all
of them agree and every loop stays inside its range. The jump moves time, counters, ring sequence
numbers and tags by whole periods and adds the observed per-period increments to every accumulator
(busy time, bytes, FLOPs); detailed simulation then resumes where something changes (the last
iterations, an edge tile, a tail, a change in shared L2/HBM rates). Nothing is extrapolated from a
formula: the period is observed, and it is used only while the recorded reads say it still holds.

The snapshot reads the simulation objects field by field. A class with fields this module does not
know (a new mechanism) turns the fast-forward off for the run (the result is then the exact run's),
so a new piece of state must be added here to keep simulations fast; tests/test_fastforward.py checks
fast-forward against exact runs of every shipped schedule.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy
from simpy.events import Condition, Process

from gpusim.sim.hardware import SimSM
from gpusim.sim.interp import Cta, LoopFrame, RoleRunner, _span_label
from gpusim.sim.memory import FlowNetwork, NetTimer, Port, Transfer, TransferDone
from gpusim.sim.piecewise import periods_holding
from gpusim.sim.servers import CoreTimer, FifoServer, JobDone, SharedTensorCore, TensorJob
from gpusim.sim.sync import (
    ChunkBuffer,
    CouplingGroup,
    Credit,
    EventBarrier,
    Land,
    NamedBarrier,
    Stage,
    StageCallback,
    StageRing,
    Turnstile,
    tag_key,
)

_TOL_ABS = 1e-6
_TOL_REL = 1e-9
_MAX_SAME_KEY = 16
_MAX_IDLE_CHECKPOINTS = 64
"""After this many checkpoints in a row without a full snapshot (no cheap summary repeated: SM groups
doing different work), the kept snapshots are forgotten, so reads stop being recorded for a match that
has become unlikely (a later repeat is still found: it starts a new history)."""
_FRUITLESS_SNAPSHOTS = 32
"""After this many full snapshots in a row without a jump (SM groups that drift against each other: some
loop is always about to end, some read always changes), the controller sleeps: no snapshots, no reads
recorded, for a number of checkpoints that starts at ``_FIRST_SLEEP`` and doubles up to ``_MAX_SLEEP``
while the run stays fruitless (a jump resets it). Exact either way: sleeping only forgoes jumps."""
_FIRST_SLEEP = 32
_MAX_SLEEP = 1024
MAX_KEPT_READS = 100_000
"""Recorded reads (entries of the per-interval logs) kept for checks against older checkpoints. Past it the
oldest kept checkpoints are forgotten with the reads logged before them, so memory stays bounded when a
tile loop's history spans many long tiles (FA3 forward at 128k kept 360,000 reads, ~90 MB, for one
1-tile period). Exact either way: forgetting a checkpoint only forgoes a period that would start at it."""
MAX_JUMP_LANDINGS = 250_000
"""Chunk-buffer landings (gpusim/sim/sync.py ``ChunkBuffer``) the jumps of one simulation may add. A
buffer keeps every landed tag (a wait may name any of them) and a jump adds the skipped periods'
landings one by one, so without a bound a long-context FlashMLA decode grew by ~300 bytes per skipped
landing (22 GB at 16M tokens). Past it, jumps that land chunks are cut to the landings left or not taken:
exact (only forgoes jumps); the run goes on in detail and meets its work limit instead."""
_MAX_VERDICTS = 65_536
_MAX_LIMITING = 64
_NO_LOOP_MOVES = 2**62
"""``_loop_room`` when the shift moves no running loop (a period that advances nothing is not used)."""


class _Unsupported(Exception):
    """A piece of state the snapshot cannot describe; no checkpoint is taken."""


# Every field of a ring Stage and how a jump treats it: "slot" fields say where the stage sits in its
# ring (recomputed from the sequence number it lands on), "occupant" fields travel with the occupant
# to the stage its sequence number lands on. The one declaration both lists below derive from.
_STAGE_STATE: dict[str, str] = {
    "index": "slot",
    "freed": "slot",
    "open_gen": "slot",
    "tag": "occupant",
    "key": "occupant",
    "expected_bytes": "occupant",
    "arrivals": "occupant",
    "commits": "occupant",
    "full": "occupant",
    "releases": "occupant",
    "expected_releases": "occupant",
    "open_ns": "occupant",
    "full_ns": "occupant",
}
_STAGE_FIELDS = tuple(name for name, how in _STAGE_STATE.items() if how == "occupant")

# Fields of every simulation class the snapshot reads or knows to be irrelevant. If a class gains a
# field, the fast-forward cannot know whether it is state, so it stays off (exact run).
_KNOWN_FIELDS: dict[type, frozenset[str]] = {
    SimSM: frozenset(
        {
            "env",
            "index",
            "weight",
            "rates",
            "net",
            "record_spans",
            "span_labels",
            "_cuda_plans",
            "servers",
            "ingress",
            "egress",
            "tensor_flops",
        }
    ),
    FifoServer: frozenset({"env", "name", "rate_per_ns", "free_at_ns", "busy_ns", "work_done", "spans"}),
    SharedTensorCore: frozenset(
        {
            "env",
            "name",
            "rate_per_ns",
            "batches",
            "active",
            "sync_jobs",
            "sync_rate",
            "busy_ns",
            "work_done",
            "coupled_ns",
            "spans",
            "_last_update",
            "_version",
            "_busy_since",
            "_busy_label",
        }
    ),
    Port: frozenset(
        {
            "net",
            "name",
            "cap_bytes_per_ns",
            "weight",
            "queue",
            "busy_ns",
            "bytes_moved",
            "spans",
            "_head_since",
        }
    ),
    Transfer: frozenset(
        {
            "bytes",
            "l2_coef",
            "hbm_coef",
            "latency_ns",
            "weight",
            "on_done",
            "done",
            "remaining",
            "rate",
            "port",
            "is_write",
        }
    ),
    FlowNetwork: frozenset(
        {
            "env",
            "l2_capacity",
            "hbm_capacity",
            "active",
            "_last_update",
            "_version",
            "hbm_read_bytes",
            "hbm_write_bytes",
            "l2_read_bytes",
            "l2_write_bytes",
            "hbm_rate_samples",
            "l2_rate_samples",
            "read_rate_samples",
        }
    ),
    StageRing: frozenset(
        {
            "env",
            "name",
            "producer",
            "consumer",
            "stages",
            "expected_producers",
            "expected_releases",
            "credits",
            "waiters",
            "group",
            "in_use_samples",
            "sm_index",
            "cta_rank",
            "flows",
            "stage_log",
            "opened",
            "ff",
        }
    ),
    Stage: frozenset(_STAGE_STATE),
    RoleRunner: frozenset(
        {
            "cta",
            "role",
            "replica",
            "env",
            "sm",
            "rates",
            "vars",
            "loop",
            "queues",
            "held",
            "cursors",
            "last_mma",
            "blocked_on",
            "finished",
            "warps",
            "smsp_warps",
            "sm_fraction",
            "name",
            "_lookahead",
            "spans",
            "frames",
            "pc",
            "op_start_ns",
            "ff",
            "constants",
            "varying",
            "wake_ns",  # constant for the run (the arch's barrier wake-up times)
            "work",  # the work limit (gpusim.sim.limits): the same object before and after a period
        }
    ),
    Cta: frozenset(
        {
            "env",
            "sched",
            "sm",
            "rank",
            "units",
            "wave_offset",
            "wave_of",
            "first_warp",
            "miss",
            "rings",
            "chunks",
            "named",
            "events",
            "turnstiles",
            "syncthreads",
            "peers",
            "pair",
            "outstanding",
            "operand_multicast",
            "memo",
            "dynamic_names",
            "work",
        }
    ),
    NamedBarrier: frozenset({"env", "name", "warps", "arrived", "phase_event"}),
    EventBarrier: frozenset({"env", "name", "count", "arrivals", "waiters"}),
    Turnstile: frozenset({"env", "name", "members", "token", "done", "waiters"}),
    # chunks: the buffer's size (fixed); found, records, positions, keyed: indexes of ``landed``, which a
    # jump extends through add_landed like any landing
    ChunkBuffer: frozenset(
        {"env", "name", "chunks", "landed", "found", "records", "positions", "keyed", "waiters", "ff"}
    ),
    CouplingGroup: frozenset({"rings", "pending"}),
}


def _fields(obj: Any) -> frozenset[str]:
    slots = getattr(type(obj), "__slots__", None)
    if slots is not None and not hasattr(obj, "__dict__"):
        return frozenset(slots)
    return frozenset(vars(obj))


def unknown_state(objects: list[Any]) -> str | None:
    """The first simulation object whose class has fields the snapshot does not know (or None)."""
    for obj in objects:
        known = _KNOWN_FIELDS.get(type(obj))
        if known is None:
            return f"{type(obj).__name__} is not known to the fast-forward"
        extra = _fields(obj) - known
        if extra:
            return f"{type(obj).__name__} has state the fast-forward does not snapshot: {sorted(extra)}"
    return None


@dataclass
class Snapshot:
    """The state at one checkpoint, split into what must match exactly and what may shift."""

    now: float
    struct: tuple
    values: list[float]
    loops: list[tuple[str, int]]
    ring_counts: list[int]
    acc: list[float]
    handles: list[tuple[Any, str]] = field(default_factory=list)
    struct_hash: int = 0
    """``hash(struct)``, taken once: a checkpoint is compared with up to 16 earlier ones, most of which
    differ in structure."""

    def __post_init__(self) -> None:
        self.struct_hash = hash(self.struct)


@dataclass
class Period:
    """What one observed period shifts: time, each loop variable, each ring's sequence counter."""

    dt: float
    loop_delta: dict[str, int]
    ring_delta: list[int]
    acc_delta: list[float]
    room: int
    """How many periods fit before some running loop ends (``FastForward._loop_room``)."""
    token_delta: list[int] = field(default_factory=list)
    """Per loop token of the newer snapshot: how far it moved over the period."""
    limit: int | None = None
    """At most this many periods (a moving loop value would reach one that stays put)."""


@dataclass
class Jump:
    """One fast-forward: ``periods`` whole periods skipped from ``start_ns`` to ``end_ns``."""

    start_ns: float
    end_ns: float
    periods: int
    label: str


@dataclass
class _Checkpoint:
    key: tuple
    snap: Snapshot
    seq: int
    events: int


@dataclass
class FastForward:
    """The controller: told of loop iterations and state-dependent reads, it checkpoints and jumps."""

    env: simpy.Environment
    net: FlowNetwork
    sms: list[SimSM]
    rings: list[StageRing]
    runners: list[RoleRunner] = field(default_factory=list)
    dynamic_names: frozenset[str] = frozenset()
    unit_fields: frozenset[str] = frozenset()
    tiles_fixed: bool = False
    """Units come from a tile counter at run time (gpusim/sim/tilequeue.py): a period in which any role
    moves to another unit is not used (the jump would not take units from the counter); periods inside
    units are."""
    jumps: list[Jump] = field(default_factory=list)
    skipped_events: int = 0
    jump_landings: int = 0
    """Chunk-buffer landings added by jumps so far (at most :data:`MAX_JUMP_LANDINGS`)."""
    disabled: str | None = None
    pending: list[tuple] | None = None
    """Loop keys whose iteration the anchor started in the current step (outermost first)."""
    anchor: RoleRunner | None = None
    _proc_index: dict[int, int] = field(default_factory=dict)
    _runner_index: dict[int, int] = field(default_factory=dict)
    _history: dict[tuple, list[_Checkpoint]] = field(default_factory=dict)
    """Recent checkpoints per loop key (a period may span several iterations: L2 waves, ping-pong)."""
    _logs: list[tuple[int, dict[tuple, Any]]] = field(default_factory=list)
    _seq: int = 0
    _frames: dict[tuple, LoopFrame] = field(default_factory=dict)
    _cheap: dict[tuple, list[tuple]] = field(default_factory=dict)
    _frame_bound: int = 0
    _log: dict[tuple, Any] = field(default_factory=dict)
    _dyn_cache: dict[int, tuple[tuple[str, ...], bool]] = field(default_factory=dict)
    _checked: bool = False
    _idle: int = 0
    """Checkpoints since the last full snapshot."""
    _verdicts: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    _fruitless: int = 0
    """Full snapshots since the last jump (or the last sleep)."""
    _asleep: int = 0
    """Checkpoints left to skip (see ``_FRUITLESS_SNAPSHOTS``)."""
    _sleep: int = 0
    """How long the next sleep lasts (0: ``_FIRST_SLEEP``)."""
    _limiting: set[int] = field(default_factory=set)
    """The expressions (ids) whose reads last cut a period's jump short."""
    _acc_handles: tuple[int, list[tuple[Any, str]]] | None = None
    """The accumulator handles (``_accumulators``) for the SM count they were built for."""
    """Checks of recorded reads over skipped periods: key -> (periods checked, periods that held)."""
    live_rings: list[StageRing] = field(default_factory=list)
    """The rings of CTAs with a role still running (``rings`` keeps every ring the run built)."""
    _stale: bool = True
    """Runners registered since the live lists were last rebuilt."""
    logging: bool = False
    """Whether reads are recorded: only while a snapshot is kept that a later one may match (the reads
    logged before a snapshot are never checked against it, so without one they are not needed)."""

    # ---- registration -----------------------------------------------------------------------------

    def add_runner(self, runner: RoleRunner, process: simpy.Process) -> None:
        """A role replica and its process (new CTAs register as they launch)."""
        self._runner_index[id(runner)] = len(self._runner_index)
        self.runners.append(runner)
        self._stale = True
        # Every snapshot records how many roles were ever registered: none kept so far can match a later
        # one, so they are forgotten and reads stop being recorded until the next kept snapshot.
        self._history.clear()
        self.logging = False
        self.add_process(process)
        runner.ff = self
        for ring in runner.cta.rings.values():
            ring.ff = self
        for chunks in runner.cta.chunks.values():
            chunks.ff = self
        self._checked = False

    def add_process(self, process: simpy.Process) -> None:
        """A process whose resumption may sit in the event queue (role or launcher)."""
        self._proc_index[id(process)] = len(self._proc_index)

    # ---- hooks called by the interpreter ----------------------------------------------------------

    def iteration(self, runner: RoleRunner, frame: LoopFrame) -> None:
        """``runner`` starts an iteration of ``frame``: checkpoint after this step if it is the anchor."""
        if self.anchor is None or self.anchor.finished:
            self.anchor = runner
        if runner is self.anchor and not frame.settled:
            remaining = (frame.stop - 1 - frame.value) // max(1, frame.every)
            if remaining < 2:
                return
            key = (self._runner_index[id(runner)], id(frame.stmt))
            self._frames[key] = frame
            if self.pending is None:
                self.pending = [key]
            else:
                self.pending.append(key)

    def observe(self, runner: RoleRunner, expr: Any, value: Any, tag_name: str | None = None) -> None:
        """An expression was evaluated; remember it if it reads a loop variable or a tile field.

        ``tag_name``: the value names an iteration of that loop variable (an ``at:`` override), so
        over the skipped periods it must move with that variable instead of staying equal."""
        if not self.logging:
            return
        cached = self._dyn_cache.get(id(expr))
        if cached is None:
            names = tuple(sorted(expr.names & self.dynamic_names))
            uses_unit = any(n in self.unit_fields for n in names)
            if uses_unit and "tile" not in names:
                names = (*names, "tile")
            cached = self._dyn_cache[id(expr)] = (names, uses_unit)
        names = cached[0]
        if not names:
            return
        vars_ = runner.vars
        values = tuple(vars_.get(n) for n in names)
        self._log[("e", id(runner), id(expr), values, tag_name)] = (runner, expr, value, names, values, cached[1],
                                                                    tag_name)  # fmt: skip

    def observe_miss(self, runner: RoleRunner, operand: str | None, tile: int, miss: float) -> None:
        """A read's L2 miss fraction for the wave of ``tile``."""
        if not self.logging:
            return
        self._log[("m", id(runner.cta), operand, tile)] = (runner.cta, operand, tile, miss)

    def observe_land(self, buffer: ChunkBuffer, chunk: int, tag: dict[str, Any]) -> None:
        """A chunk landed (the jump lands the skipped periods' chunks too)."""
        if not self.logging:
            return
        self._log[("l", id(buffer), chunk, tag_key(tag))] = (buffer, chunk, dict(tag))

    def observe_chunk_wait(self, buffer: ChunkBuffer, chunk: int, ctx: dict[str, Any],
                           matched: dict[str, Any] | None) -> None:  # fmt: skip
        """A wait on a chunk buffer, and the landed tag it matched at once (None: it blocked)."""
        if not self.logging:
            return
        self._log[("w", id(buffer), chunk, tag_key(ctx), tag_key(matched) if matched else None)] = (
            buffer, chunk, dict(ctx), dict(matched) if matched else None)  # fmt: skip

    def observe_releases(self, ring: StageRing, tag: dict[str, Any], count: int) -> None:
        """A stage tagged ``tag`` expects ``count`` consumer releases."""
        if not self.logging:
            return
        # the engine's release counts read only the tag's tile (consumers filtered by tile), so one
        # entry per tile is enough to check them over the skipped periods
        self._log[("r", id(ring), tag.get("tile"))] = (ring, dict(tag), count)

    # ---- checkpoints ------------------------------------------------------------------------------

    def checkpoint(self, events: int) -> int:
        """Take a snapshot; on a repeat, jump. Returns the number of events the jump stands for."""
        skipped = self._checkpoint(events)
        self.logging = any(self._history.values())
        return skipped

    def _checkpoint(self, events: int) -> int:
        keys, self.pending = self.pending or [], None
        if self.disabled is not None:
            return 0
        if self._asleep:
            self._asleep -= 1
            return 0
        self._drop_finished()
        if not self._checked:
            self.disabled = unknown_state(self._objects())
            self._checked = True
            if self.disabled is not None:
                return 0
        # A full snapshot is only worth taking where a cheap summary of the state has been seen before.
        cheap = self._cheap_key()
        worth = False
        for key in keys:
            seen = self._cheap.setdefault(key, [])
            worth = worth or cheap in seen
            seen.append(cheap)
            del seen[:-_MAX_SAME_KEY]
        if not worth:
            self._idle += 1
            if self._idle >= _MAX_IDLE_CHECKPOINTS:
                self._history.clear()
            self._seq += 1
            self._logs.append((self._seq, self._log))
            self._log = {}
            self._trim_logs()
            return 0
        try:
            snap = _Capture(self).snapshot()
        except _Unsupported:
            self._history.clear()
            self._cheap.clear()
            self._logs.clear()
            self._log = {}
            return 0
        self._idle = 0
        log, self._log = self._log, {}
        self._seq += 1
        self._logs.append((self._seq, log))
        for key in keys:
            history = self._history.get(key, [])
            for old in reversed(history):
                period = _match(old.snap, snap, self._loop_room)
                if period is None or (self.tiles_fixed and period.loop_delta.get("tile")):
                    continue
                logs = [lg for seq, lg in self._logs if seq > old.seq]
                periods = self._periods(period, logs)
                if periods >= self._frame_bound:
                    self._frames[key].settled = True  # the loops end before another period fits
                if periods >= 1:
                    self._fruitless = 0
                    self._sleep = 0
                    self._jump(period, periods, snap, logs)
                    skipped = periods * (events - old.events)
                    self.skipped_events += skipped
                    tile_reads = _tile_dependent_reads(logs, period.loop_delta, self.unit_fields)
                    if tile_reads is not None:
                        # Outer loops (the tile loop) keep their checkpoints: a later tile-level period
                        # is checked by the reads logged since its first checkpoint. The skipped
                        # iterations read what the observed ones read, up to the reads of the tile's
                        # own fields: those are logged as summaries, each checked in every tile a
                        # later jump skips, over the same iterations. Only this loop's history is stale.
                        for k in keys:
                            self._history.pop(k, None)
                            self._cheap.pop(k, None)
                        self._seq += 1
                        summaries = {
                            ("s", self._seq, i): (entry, dict(period.loop_delta), periods)
                            for i, entry in enumerate(tile_reads)
                        }
                        self._logs.append((self._seq, summaries))
                    else:
                        self._history.clear()
                        self._cheap.clear()
                        self._logs.clear()
                    return skipped
        self._fruitless += 1
        if self._fruitless >= _FRUITLESS_SNAPSHOTS:
            self._fall_asleep()
            return 0
        for key in keys:
            history = self._history.setdefault(key, [])
            history.append(_Checkpoint(key, snap, self._seq, events))
            del history[:-_MAX_SAME_KEY]
        self._trim_logs()
        return 0

    def _fall_asleep(self) -> None:
        """Forget every snapshot and recorded read, and skip the next checkpoints (``_FRUITLESS_SNAPSHOTS``)."""
        self._asleep = self._sleep or _FIRST_SLEEP
        self._sleep = min(2 * self._asleep, _MAX_SLEEP)
        self._fruitless = 0
        self._history.clear()
        self._cheap.clear()
        self._logs.clear()
        self._log = {}

    def _drop_finished(self) -> None:
        """Forget finished roles and the rings of CTAs whose roles have all finished: their state no
        longer changes, and a grid launch would otherwise make every checkpoint cost O(CTAs launched).
        The snapshot records how many roles were ever registered, so a period never spans a launch."""
        if not self._stale and all(not r.finished for r in self.runners):
            return
        self.runners = [r for r in self.runners if not r.finished]
        seen: set[int] = set()
        live: list[StageRing] = []
        for runner in self.runners:
            for ring in runner.cta.rings.values():
                if id(ring) not in seen:
                    seen.add(id(ring))
                    live.append(ring)
        self.live_rings = live
        self._stale = False

    def _trim_logs(self) -> None:
        """Forget the reads of intervals older than every checkpoint still in the history, and the oldest
        checkpoints while the reads kept for them exceed ``MAX_KEPT_READS``."""
        while True:
            kept = [h for h in self._history.values() if h]
            if not kept:
                self._logs.clear()
                return
            oldest = min(h[0].seq for h in kept)
            while self._logs and self._logs[0][0] <= oldest:
                self._logs.pop(0)
            if sum(len(log) for _, log in self._logs) <= MAX_KEPT_READS:
                return
            min(kept, key=lambda h: h[0].seq).pop(0)

    def _cheap_key(self) -> tuple:
        """Where every role is and how full every ring and port is: equal in any two repeating states."""
        runners = tuple((id(r.pc), r.finished, len(r.frames)) for r in self.runners)
        runners += (len(self._runner_index),)
        rings = tuple(
            (sum(1 for st in ring.stages if st.open_gen >= 0), sum(st.full for st in ring.stages))
            for ring in self.live_rings
        )
        ports = tuple(len(sm.ingress.queue) + 7 * len(sm.egress.queue) for sm in self.sms)  # type: ignore[union-attr]
        live = len(_live_queue(self.env._queue))  # type: ignore[attr-defined]
        return (runners, rings, ports, live, len(self.net.active))

    def _objects(self) -> list[Any]:
        objs: list[Any] = [self.net, *self.sms, *self.live_rings, *self.runners]
        for sm in self.sms:
            objs += [*sm.servers.values(), sm.ingress, sm.egress]
        ctas = {id(r.cta): r.cta for r in self.runners}
        for cta in ctas.values():
            objs.append(cta)
            objs += list(cta.named.values()) + list(cta.events.values()) + list(cta.turnstiles.values())
            objs += list(cta.chunks.values())
            if cta.syncthreads is not None:
                objs.append(cta.syncthreads)
        for ring in self.live_rings:
            objs += ring.stages
            objs.append(ring.group)
        return objs

    # ---- how far to jump --------------------------------------------------------------------------

    def _loop_room(self, d: dict[str, int]) -> int:
        """How many periods shifting the loop variables by ``d`` fit before some running loop ends (0:
        none, or a shift no loop can take; a huge number when no loop moves)."""
        bound = math.inf
        for runner in self.runners:
            for frame in runner.frames:
                step = d.get(frame.var, 0)
                if step == 0:
                    continue
                if step < 0 or step % frame.every:
                    return 0
                bound = min(bound, (frame.stop - 1 - frame.value) // step)
        return _NO_LOOP_MOVES if bound == math.inf else int(bound)

    def _periods(self, period: Period, logs: list[dict[tuple, Any]]) -> int:
        d = period.loop_delta
        self._frame_bound = 0
        room = period.room
        if room == _NO_LOOP_MOVES:
            return 0
        periods = room if period.limit is None else min(room, period.limit)
        self._frame_bound = periods
        if periods < 1:
            return 0
        for dop in period.ring_delta:
            if dop < 0:
                return 0
        merged: dict[tuple, Any] = {}
        for log in logs:
            merged.update(log)
        entries: Iterable[tuple[tuple, Any]] = merged.items()
        limiting = self._limiting
        if limiting:  # the reads that cut recent periods short are checked first (the answer is the same)
            first = [(k, e) for k, e in merged.items() if k[0] == "e" and k[2] in limiting]
            entries = itertools.chain(first, entries)
        for key, entry in entries:
            if periods < 1:
                break
            kind = key[0]
            if kind in ("l", "w"):
                continue
            if kind == "e":
                good = _holds_expr(entry, d, periods)
                if good < periods:
                    if len(limiting) >= _MAX_LIMITING:
                        limiting.clear()
                    limiting.add(key[2])
            elif kind == "s":
                good = _holds_summary(entry, d, periods)
            elif kind == "m":
                good = _holds_miss(entry, d, periods)
            else:
                good = _holds_releases(entry, d, periods)
            if good < periods:
                periods = good
        lands = sum(1 for log in logs for key in log if key[0] == "l")
        if lands:  # each skipped period lands them again (MAX_JUMP_LANDINGS)
            periods = min(periods, (MAX_JUMP_LANDINGS - self.jump_landings) // lands)
        # the chunk-buffer check walks landed tags (the costliest check): only for a jump the others allow
        if periods >= 1 and not _chunk_waits_hold(merged, d):
            return 0
        return periods

    # ---- the jump ---------------------------------------------------------------------------------

    def _jump(self, period: Period, periods: int, snap: Snapshot, logs: list[dict[tuple, Any]]) -> None:
        shift = periods * period.dt
        d = {k: v * periods for k, v in period.loop_delta.items() if v}
        env = self.env
        start = env.now
        env._now = start + shift  # type: ignore[attr-defined]
        queue = env._queue  # type: ignore[attr-defined]
        queue[:] = [(t + shift, prio, eid, ev) for t, prio, eid, ev in _live_queue(queue)]
        heapq.heapify(queue)
        _move_tokens(snap.handles, period.token_delta, periods)
        opens: dict[int, int] = {}
        moved: dict[int, Stage] = {}
        for ring, dop in zip(self.live_rings, period.ring_delta, strict=True):
            opens[id(ring)] = dop * periods
            moved.update(_shift_ring(ring, shift, dop * periods))
        for runner in self.runners:
            _shift_runner(runner, shift, opens, moved)
        pending = [ev for _t, _p, _e, ev in queue]
        for sm in self.sms:  # MMA groups in flight on a shared tensor core complete through their own events
            core = sm.servers.get("tensor")
            if type(core) is SharedTensorCore:
                pending += [job.done for b in core.batches for q in b.queues.values() for job in q]
                pending += [job.done for job in core.sync_jobs]
        _move_stage_callbacks(pending, moved)
        for log in logs:  # the chunks the skipped periods landed
            for key, entry in log.items():
                if key[0] == "l":
                    self.jump_landings += periods
                    buffer, chunk, tag = entry
                    for m in range(1, periods + 1):
                        buffer.add_landed(chunk, {k: v + m * period.loop_delta.get(k, 0) if type(v) is int else v
                                                  for k, v in tag.items()})  # fmt: skip
        ctas = {id(r.cta): r.cta for r in self.runners}
        for cta in ctas.values():
            for barrier in cta.events.values():
                _shift_event_barrier(barrier, d.get("tile", 0), periods)
        for sm in self.sms:
            for server in sm.servers.values():
                if type(server) is SharedTensorCore:
                    _shift_shared_core(server, start, shift)
                else:
                    server.free_at_ns += shift
                    _split_spans(server, start, shift)
            for port in (sm.ingress, sm.egress):
                port._head_since += shift  # type: ignore[union-attr]
        self.net._last_update += shift
        for (obj, attr), delta in zip(_accumulators(self), period.acc_delta, strict=True):
            setattr(obj, attr, getattr(obj, attr) + periods * delta)
        label = self.anchor.name if self.anchor is not None else ""
        self.jumps.append(Jump(start, env.now, periods, label))


# ---- the snapshot -----------------------------------------------------------------------------------


def _accumulators(ff: FastForward) -> list[tuple[Any, str]]:
    """Every counter that only accumulates (never read by the dynamics), in a fixed order (built once per
    set of SMs: the SMs and their servers never change during a simulation)."""
    cached = ff._acc_handles
    if cached is not None and cached[0] == len(ff.sms):
        return cached[1]
    out: list[tuple[Any, str]] = []
    for sm in ff.sms:
        out.append((sm, "tensor_flops"))
        for name in sorted(sm.servers):
            server = sm.servers[name]
            out += [(server, "busy_ns"), (server, "work_done")]
            if type(server) is SharedTensorCore:
                out.append((server, "coupled_ns"))
        for port in (sm.ingress, sm.egress):
            out += [(port, "busy_ns"), (port, "bytes_moved")]
    net = ff.net
    out += [
        (net, "hbm_read_bytes"),
        (net, "hbm_write_bytes"),
        (net, "l2_read_bytes"),
        (net, "l2_write_bytes"),
    ]
    ff._acc_handles = (len(ff.sms), out)
    return out


def stale_timer(ev: simpy.Event) -> bool:
    """A queued timer of the flow network or a shared tensor core whose rates changed since it was set:
    it does nothing when it fires, so it is not state (and a jump may drop it)."""
    cbs = ev.callbacks
    if not cbs:
        return False
    for cb in cbs:
        kind = type(cb)
        if kind is NetTimer:
            if cb.version == cb.net._version:
                return False
        elif kind is CoreTimer:
            if cb.version == cb.core._version:
                return False
        else:
            return False
    return True


def _live_queue(
    queue: list[tuple[float, int, int, simpy.Event]],
) -> list[tuple[float, int, int, simpy.Event]]:
    return [entry for entry in queue if not stale_timer(entry[3])]


class _Capture:
    def __init__(self, ff: FastForward) -> None:
        self.ff = ff
        self.now = ff.env.now
        self.struct: list[Any] = []
        self.values: list[float] = []
        self.loops: list[tuple[str, int]] = []
        self.handles: list[tuple[Any, str]] = []
        """Parallel to ``loops``: where each loop token lives, to move it in a jump."""
        self.ring_index = {id(r): i for i, r in enumerate(ff.live_rings)}
        self.holders: dict[int, tuple[int, str]] = {}
        self.cursors: dict[int, tuple[int, str]] = {}
        for i, runner in enumerate(ff.runners):
            for buf, held in runner.held.items():
                self.holders[id(held)] = (i, buf)
            for buf, cursor in runner.cursors.items():
                self.cursors[id(cursor)] = (i, buf)

    def snapshot(self) -> Snapshot:
        ff = self.ff
        s = self.struct
        queue = sorted(_live_queue(ff.env._queue), key=lambda e: (e[0], e[1], e[2]))  # type: ignore[attr-defined]
        s.append((len(ff._runner_index), len(ff.runners), len(ff.live_rings)))
        s.append(len(queue))
        for t, prio, _eid, ev in queue:
            self.values.append(t - self.now)
            s.append((prio, self.event(ev)))
        for runner in ff.runners:
            self.runner(runner)
        ctas = {id(r.cta): r.cta for r in ff.runners}
        for cta in ctas.values():
            self.cta(cta)
        for ring in ff.live_rings:
            self.ring(ring)
        for sm in ff.sms:
            for name in sorted(sm.servers):
                server = sm.servers[name]
                if type(server) is SharedTensorCore:
                    self.shared_core(server)
                else:
                    self.values.append(max(server.free_at_ns - self.now, 0.0))
            for port in (sm.ingress, sm.egress):
                s.append(len(port.queue))  # type: ignore[union-attr]
                if port.queue:  # type: ignore[union-attr]
                    self.values.append(port._head_since - self.now)  # type: ignore[union-attr]
                    for t in port.queue:  # type: ignore[union-attr]
                        self.transfer(t)
        net = ff.net
        s.append(tuple(t.port.name for t in net.active))  # type: ignore[union-attr]
        # an idle network's (or core's) last update is not state: the next activation only resets it
        self.values.append(self.now - net._last_update if net.active else 0.0)
        acc = [getattr(o, a) for o, a in _accumulators(ff)]
        return Snapshot(self.now, tuple(s), self.values, self.loops,
                        [r.opened for r in ff.live_rings], acc, self.handles)  # fmt: skip

    # -- pieces --

    def tag(self, tag: dict[str, Any] | None, handle: Any = None) -> None:
        """A tag's values are loop tokens; ``handle`` says where to move them (default: the dict)."""
        if tag is None:
            self.struct.append(None)
            return
        keys = sorted(tag)
        self.struct.append(tuple(keys))
        for k in keys:
            v = tag[k]
            if type(v) is int:
                self.loops.append((k, v))
                self.handles.append((handle or ("dict", tag), k))
            else:
                self.struct.append(v)

    def event(self, ev: simpy.Event | None) -> Any:
        if ev is None:
            return None
        cbs = ev.callbacks
        if cbs is None:
            return ("done",)
        return (ev.triggered, tuple(self.callback(cb) for cb in cbs))

    def callback(self, cb: Any) -> Any:
        owner = getattr(cb, "__self__", None)
        func = getattr(cb, "__func__", None)
        if owner is not None:
            if isinstance(owner, Process) and func is Process._resume:
                index = self.ff._proc_index.get(id(owner))
                if index is None:
                    raise _Unsupported
                return ("P", index)
            if isinstance(owner, Condition):
                if func is Condition._check:
                    return ("C", self.event(owner))
                if func is Condition._build_value:
                    return ("B",)
            raise _Unsupported
        kind = type(cb)
        if kind is StageCallback:
            if id(cb.ring) not in self.ring_index:
                raise _Unsupported
            return ("S", cb.release, self.ring_index[id(cb.ring)], _stage_rel(cb.ring, cb.stage))
        if kind is NetTimer:
            return ("N", cb.version == cb.net._version)
        if kind is CoreTimer:
            return ("T", cb.version == cb.core._version)
        if kind is JobDone:
            self.tensor_job(cb.job)
            return ("J",)
        if kind is TransferDone:
            self.transfer(cb.transfer)
            return ("D",)
        raise _Unsupported

    def shared_core(self, core: SharedTensorCore) -> None:
        """Who has MMA groups in flight, in which order they share the core, and how far along each is."""
        s = self.struct
        s.append(len(core.batches))
        for batch in core.batches:
            self.values.append(self.now - batch.issued_ns)
            s.append(tuple((owner, len(batch.queues[owner])) for owner in sorted(batch.queues)))
            for owner in sorted(batch.queues):
                for job in batch.queues[owner]:
                    self.tensor_job(job)
        s.append(len(core.sync_jobs))
        for job in core.sync_jobs:
            self.tensor_job(job)
        s.append(tuple(job.owner for job in core.active))
        self.values.append(self.now - core._last_update if core.active else 0.0)  # (_busy_since: spans only)

    def tensor_job(self, job: TensorJob) -> None:
        self.values += [job.work_ns, job.remaining_ns, job.rate, job.cap, job.latency_ns]
        self.struct.append((job.owner, job.label, job.smsp_warps, self.event(job.done)))

    def transfer(self, t: Transfer) -> None:
        self.values += [t.bytes, t.l2_coef, t.hbm_coef, t.latency_ns, t.remaining, t.rate]
        self.struct.append((t.weight, t.is_write, t.port.name if t.port else None, self.event(t.done)))
        cb = t.on_done
        if cb is None:
            self.struct.append(None)
        elif type(cb) is Credit:
            if any(id(r) not in self.ring_index for r in cb.rings):
                raise _Unsupported  # a credit for a ring of a finished CTA
            self.struct.append(("credit", tuple(self.ring_index[id(r)] for r in cb.rings)))
            self.tag(dict(cb.key), ("key", cb, cb.key))
            self.values.append(cb.amount)
        elif type(cb) is Land:
            self.struct.append(("land", tuple(b.name for b in cb.buffers), cb.chunk))
            self.tag(cb.tag)
        else:
            raise _Unsupported

    def runner(self, r: RoleRunner) -> None:
        s = self.struct
        s.append((r.finished, id(r.pc) if r.pc is not None else None,
                  tuple((id(f.stmt), f.stop, f.every, f.offset) for f in r.frames)))  # fmt: skip
        for f in r.frames:
            self.loops.append((f.var, f.value))
            self.handles.append((("frame", f), f.var))
        active = {f.var for f in r.frames}
        # a loop variable left over from a finished loop does not move with the period: it must match
        s.append(tuple(sorted((n, v) for n, v in r.vars.items()
                              if n in self.ff.dynamic_names and n not in self.ff.unit_fields and n not in active)))  # fmt: skip
        self.tag(r.loop)
        for name in sorted(r.queues):
            s.append((name, tuple(self.event(e) for e in r.queues[name])))
        s.append(self.event(r.last_mma))
        for buf in sorted(r.held):
            ring = r.cta.rings.get(buf)
            s.append((buf, tuple(_stage_rel(ring, st) for st in r.held[buf]) if ring else len(r.held[buf])))
        for buf in sorted(r.cursors):
            cursor = r.cursors[buf]
            ring = r.cta.rings[buf]
            cur = _stage_rel(ring, cursor.current) if cursor.current is not None else None
            s.append((buf, cursor.position - ring.opened, cur))

    def cta(self, cta: Cta) -> None:
        s = self.struct
        for name in sorted(cta.chunks):  # landed tags are checked through the logged waits instead
            buffer = cta.chunks[name]
            s.append(len(buffer.waiters))
            for ctx, chunk, event in buffer.waiters:
                s.append((chunk, self.event(event)))
                self.tag(ctx)
        for name in sorted(cta.named):
            b = cta.named[name]
            s.append((b.arrived, self.event(b.phase_event)))
        if cta.syncthreads is not None:
            s.append((cta.syncthreads.arrived, self.event(cta.syncthreads.phase_event)))
        for name in sorted(cta.turnstiles):
            t = cta.turnstiles[name]
            s.append(
                (
                    t.token,
                    tuple(sorted(t.done)),
                    tuple((m, self.event(e)) for m, e in sorted(t.waiters.items())),
                )
            )
        for name in sorted(cta.events):
            b = cta.events[name]
            live = sorted(k for k, c in b.arrivals.items() if c < b.count)
            waited = sorted(b.waiters)
            s.append((len(live), len(waited)))
            for k in live:
                self._barrier_key(k)
                s.append(b.arrivals[k])
            for k in waited:
                self._barrier_key(k)
                s.append(tuple(self.event(e) for e in b.waiters[k]))
        s.append(tuple(self.event(e) for e in cta.outstanding if not e.processed))

    def _barrier_key(self, key: tuple) -> None:
        if len(key) == 1 and type(key[0]) is int:
            self.loops.append(("tile", key[0]))
            self.handles.append((("barrier",), "tile"))
        else:
            self.struct.append(key)

    def ring(self, ring: StageRing) -> None:
        s = self.struct
        n = len(ring.stages)
        s.append(n)
        for stage in sorted(ring.stages, key=lambda st: _stage_rel(ring, st)):
            is_open = stage.open_gen >= 0
            s.append((_stage_rel(ring, stage), is_open, stage.full, stage.arrivals, stage.commits, stage.releases,
                      stage.expected_releases))  # fmt: skip
            if is_open:  # open_ns / full_ns only feed the trace's stage log: not state
                self.values.append(stage.expected_bytes)
                self.tag(stage.tag)
        s.append(len(ring.credits))
        for key in sorted(ring.credits):
            self.tag(dict(key), ("key", ring, key))
            self.values.append(ring.credits[key])
        s.append(len(ring.waiters))
        for w in ring.waiters:
            self.tag(w.ctx)
            s.append((self.holders.get(id(w.holder)), self.event(w.event)))
        mine = [p for p in ring.group.pending if p[0] is ring]
        s.append(len(mine))
        for _ring, cursor, tag, expect, event in mine:
            s.append((self.cursors.get(id(cursor)), self.event(event)))
            self.tag(tag)
            self.values.append(expect)


def _stage_rel(ring: StageRing, stage: Stage) -> int:
    n = len(ring.stages)
    seq = stage.index + n * (stage.open_gen if stage.open_gen >= 0 else stage.freed)
    return seq - ring.opened


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL_ABS + _TOL_REL * max(abs(a), abs(b))


def _match(old: Snapshot, new: Snapshot, room_for: Callable[[dict[str, int]], int]) -> Period | None:
    """The period from ``old`` to ``new`` if ``new`` is ``old`` shifted, else None (also when ``room_for``,
    given the loop shifts, says not one more period fits: the values are then not compared)."""
    dt = new.now - old.now
    if (
        dt <= 0
        or old.struct_hash != new.struct_hash
        or old.struct != new.struct
        or len(old.values) != len(new.values)
    ):
        return None
    if len(old.loops) != len(new.loops):
        return None
    delta: dict[str, int] = {}
    fixed: dict[str, set[int]] = {}
    moving: dict[str, list[int]] = {}
    for (name_a, a), (name_b, b) in zip(old.loops, new.loops, strict=True):
        if name_a != name_b:
            return None
        step = b - a
        if step == 0:
            fixed.setdefault(name_a, set()).add(b)
            continue
        if delta.setdefault(name_a, step) != step:
            return None
        moving.setdefault(name_a, []).append(b)
    room = room_for(delta)
    if room < 1:
        return None
    a, b = np.asarray(old.values), np.asarray(new.values)
    if not np.all(np.abs(a - b) <= _TOL_ABS + _TOL_REL * np.maximum(np.abs(a), np.abs(b))):
        return None
    # A value that stays put (an ``at: {n: NB}`` wait) while others of its name move: the jump must end
    # before any moving value reaches it (then whatever compares them behaves as in the observed period).
    limits = []
    for name, values in fixed.items():
        step = delta.get(name, 0)
        for c in values:
            below = [v for v in values_of(moving, name) if (v <= c if step > 0 else v >= c)]
            if below:
                nearest = max(below) if step > 0 else min(below)
                limits.append((c - nearest) // step - 1)
    ring_delta = [b - a for a, b in zip(old.ring_counts, new.ring_counts, strict=True)]
    acc_delta = [b - a for a, b in zip(old.acc, new.acc, strict=True)]
    token_delta = [b - a for (_, a), (_, b) in zip(old.loops, new.loops, strict=True)]
    return Period(dt, delta, ring_delta, acc_delta, room, token_delta, min(limits, default=None))


def values_of(moving: dict[str, list[int]], name: str) -> list[int]:
    """The moving values of loop variable ``name`` (empty if none move)."""
    return moving.get(name, [])


# ---- checks that the recorded reads hold over the skipped periods -------------------------------------


def _tile_dependent_reads(logs: list[dict[tuple, Any]], d: dict[str, int], unit_fields: frozenset[str]
                          ) -> list[tuple] | None:  # fmt: skip
    """The reads of a jump's observed period that move with the jumped loops and read the tile (its
    ordinal or its unit's fields): what a later tile-level jump must check again in every tile it skips.
    None when the jump moves the tile itself or a chunk buffer took part (not summarised)."""
    if d.get("tile"):
        return None
    out = []
    for log in logs:
        for key, entry in log.items():
            kind = key[0]
            if kind in ("l", "w"):
                return None
            if kind == "e":
                names, uses_unit = entry[3], entry[5]
                tile_read = uses_unit or "tile" in names or any(n in unit_fields for n in names)
                if tile_read and any(d.get(n) for n in names):
                    out.append(entry)
            elif kind == "s":  # an inner loop's summary inside this period: not summarised again
                return None
    return out


_MAX_SUMMARY_EVALS = 200_000
"""The most point evaluations a summary's check may spend on reads that move with their loop's value
(``at:`` tags) before it refuses the tile-level jump."""


def _holds_summary(summary: tuple, d: dict[str, int], periods: int) -> int:
    """How many of ``periods`` tile-level periods keep a read that an inner jump skipped: in each skipped
    tile (its unit's fields), the read keeps its value over the same inner iterations."""
    entry, inner_d, inner_periods = summary
    runner, expr, value, names, values, _, tag_name = entry
    d_tile = d.get("tile", 0)
    if not d_tile:
        return periods
    if "tile" not in names:
        return 0
    unit_fields = runner.ff.unit_fields
    moving = [(n, v, inner_d.get(n, 0)) for n, v in zip(names, values, strict=True)
              if inner_d.get(n, 0) and n not in unit_fields]  # fmt: skip
    moves_by = inner_d.get(tag_name, 0) if tag_name is not None else 0
    if moves_by and periods * inner_periods > _MAX_SUMMARY_EVALS:
        return 0
    env = dict(runner.vars)
    env.update(zip(names, values, strict=True))
    units = runner.cta.units
    tile = values[names.index("tile")]
    reads_unit = sorted((expr.names & unit_fields) | ({"tile"} & expr.names))
    verdicts: dict[tuple, bool] = {}
    for m in range(1, periods + 1):
        t = tile + m * d_tile
        if not 0 <= t < len(units):
            return m - 1
        env.update(units[t])
        env["tile"] = t
        key = tuple(env.get(n) for n in reads_unit)
        held = verdicts.get(key)
        if held is None:
            held = verdicts[key] = _holds_over(expr, env, moving, value, moves_by, inner_periods)
        if not held:
            return m - 1
    return periods


def _holds_over(expr: Any, env: dict[str, Any], moving: list[tuple[str, Any, int]], value: Any, moves_by: int,
                periods: int) -> bool:  # fmt: skip
    """Whether ``expr`` reads ``value`` (moving by ``moves_by`` per period) for every one of ``periods``
    periods of its moving names."""
    try:
        if not moves_by:
            return periods_holding(expr, env, moving, value, 1, periods) >= periods
        point = dict(env)
        for j in range(1, periods + 1):
            for n, v, step in moving:
                point[n] = v + j * step
            if expr(point) != value + j * moves_by:
                return False
    except Exception:
        return False
    return True


def _holds_expr(entry: tuple, d: dict[str, int], periods: int) -> int:
    runner, expr, value, names, values, uses_unit, tag_name = entry
    d_tile = d.get("tile", 0)
    moves_by = d.get(tag_name, 0) if tag_name is not None else 0
    moving = [(n, v, d.get(n, 0)) for n, v in zip(names, values, strict=True)
              if d.get(n, 0) and n not in runner.ff.unit_fields]  # fmt: skip
    if not moving and not (uses_unit and d_tile):
        return periods
    env = dict(runner.vars)
    env.update(zip(names, values, strict=True))  # every name as it was when read, not as it is now
    units = runner.cta.units
    tile = values[names.index("tile")] if uses_unit else None
    # Without a moving tile the answer depends only on the expression, the values it was read with
    # and the shifts (the other names are the schedule's constants, or the replica's): later jumps
    # (the next tile's mainloop) ask the same question, so the verdict is kept.
    verdicts = runner.ff._verdicts
    key = None
    first = 1
    if not (uses_unit and d_tile):
        key = (expr, values, tuple(moving), value, moves_by, env.get("r"), env.get("cta_rank"))
        known = verdicts.get(key)
        if known is not None:
            checked, good = known
            if good < checked or periods <= checked:
                return min(good, periods)
            first = checked + 1
    if not (uses_unit and d_tile) and not moves_by and periods - first >= _BISECT_PERIODS:
        good = periods_holding(expr, env, moving, value, first, periods)
        if key is not None:
            if len(verdicts) >= _MAX_VERDICTS:
                verdicts.clear()
            verdicts[key] = (periods, good)
        return good
    good = periods
    for m in range(first, periods + 1):
        if uses_unit and d_tile:
            t = tile + m * d_tile  # type: ignore[operator]
            if not 0 <= t < len(units):
                good = m - 1
                break
            env.update(units[t])
        for n, v, step in moving:
            env[n] = v + m * step
        try:
            if expr(env) != value + m * moves_by:
                good = m - 1
                break
        except Exception:
            good = m - 1
            break
    if key is not None:
        if len(verdicts) >= _MAX_VERDICTS:
            verdicts.clear()
        verdicts[key] = (periods, good)
    return good


_BISECT_PERIODS = 64
"""Past this many periods to check, a read of moving loop variables is checked by interval bisection
(gpusim/sim/piecewise.py) instead of one evaluation per period: a loop of 10**12 iterations is checked in
a few dozen evaluations."""


def _chunk_waits_hold(merged: dict[tuple, Any], d: dict[str, int]) -> bool:
    """Waits on chunk buffers behave alike in every skipped period. A tag landed before the period
    that has moving values must be an earlier period's copy of a landing in the period (so the
    skipped periods see the same lattice of landed tags) or lie below every wait's moving values."""
    lands = {(id(e[0]), e[1], tag_key(e[2])) for k, e in merged.items() if k[0] == "l"}

    def earlier_copy(bid: int, chunk: int, tag: dict[str, Any]) -> bool:
        return any(
            (bid, chunk, tag_key({k: v + j * d.get(k, 0) if type(v) is int else v for k, v in tag.items()}))
            in lands
            for j in (1, 2, 3)
        )

    lowest: dict[tuple[int, int], dict[str, int]] = {}
    fixed: dict[tuple[int, int], dict[str, set[Any]]] = {}
    buffers: dict[int, ChunkBuffer] = {}
    for buffer, chunk, ctx, matched in (e for k, e in merged.items() if k[0] == "w"):
        bid = id(buffer)
        buffers[bid] = buffer
        if (
            matched is not None
            and (bid, chunk, tag_key(matched)) not in lands
            and any(d.get(k) for k in matched)
            and not earlier_copy(bid, chunk, matched)
        ):
            return False
        low = lowest.setdefault((bid, chunk), {})
        same = fixed.setdefault((bid, chunk), {})
        for k, v in ctx.items():
            if d.get(k) and type(v) is int:
                low[k] = min(low.get(k, v), v)
            elif not d.get(k):
                same.setdefault(k, set()).add(v)
    for (bid, chunk), low in lowest.items():
        same = fixed[(bid, chunk)]
        buffer = buffers[bid]
        landed = buffer.landed.get(chunk, [])
        # Only a tag with a moving value at or above the period's lowest can make a skipped wait differ;
        # the tags landed before the first such one (most of a long run's) are not looked at. Of the rest,
        # only those whose non-moving values the period's waits name (the unit in progress, not every
        # earlier one) can: the loop below skips the others, and an index finds the few it keeps.
        start = buffer.first_reaching(chunk, low)
        kept: list[int] | None = None
        for key, values in same.items():
            where = buffer.positions_with(chunk, key, values, start)
            if where is not None and (kept is None or len(where) < len(kept)):
                kept = where
        for tag in landed[start:] if kept is None else (landed[i] for i in kept):
            if not any(k in low and type(v) is int and v >= low[k] for k, v in tag.items()):
                continue
            if any(not d.get(k) and v not in same.get(k, ()) for k, v in tag.items()):
                continue  # a value no wait in the period names (another tile): no shifted wait matches it
            if (bid, chunk, tag_key(tag)) in lands or earlier_copy(bid, chunk, tag):
                continue
            return False
    return True


def _holds_miss(entry: tuple, d: dict[str, int], periods: int) -> int:
    cta, operand, tile, miss = entry
    step = d.get("tile", 0)
    if not step:
        return periods
    for m in range(1, periods + 1):
        if cta.miss_fraction(operand, tile + m * step) != miss:
            return m - 1
    return periods


def _holds_releases(entry: tuple, d: dict[str, int], periods: int) -> int:
    ring, tag, count = entry
    moving = {k: d[k] for k in tag if d.get(k)}
    if "tile" not in moving:
        return periods  # the engine's release counts read only the tag's tile (see observe_releases)
    for m in range(1, periods + 1):
        shifted = {k: v + m * moving.get(k, 0) for k, v in tag.items()}
        if max(1, ring.expected_releases(shifted)) != count:
            return m - 1
    return periods


# ---- shifting the state by whole periods --------------------------------------------------------------


def _split_spans(server: FifoServer, start: float, shift: float) -> None:
    """A recorded busy span that crosses the jump continues after it (its end moves with time)."""
    if server.spans is not None:
        server.spans.continue_after(start, shift)


def _move_stage_callbacks(events: list[simpy.Event], moved: dict[int, Stage]) -> None:
    """Stage callbacks waiting on these events (and on the conditions they feed) follow their stages."""
    seen: set[int] = set()
    while events:
        ev = events.pop()
        if id(ev) in seen:
            continue
        seen.add(id(ev))
        for cb in ev.callbacks or ():
            if type(cb) is StageCallback:
                cb.stage = moved.get(id(cb.stage), cb.stage)
            elif type(cb) is JobDone:  # an MMA group's result still in its latency
                events.append(cb.job.done)
            elif isinstance(getattr(cb, "__self__", None), Condition):
                events.append(cb.__self__)


def _shift_shared_core(core: SharedTensorCore, start: float, shift: float) -> None:
    """The core's clock moves with the jump; a busy interval open across it is drawn up to the jump and
    continues after it (the skipped periods are drawn as fast-forwarded)."""
    core._last_update += shift
    for batch in core.batches:
        batch.issued_ns += shift
    if core.active:
        if core.spans is not None and start > core._busy_since:
            core.spans.append(core._busy_since, start, core._busy_label)
        core._busy_since = start + shift


def _shift_runner(r: RoleRunner, shift: float, opens: dict[int, int], moved: dict[int, Stage]) -> None:
    """After the loop frames moved: the variables, tile fields, ring cursors and held stages follow."""
    now = r.env.now - shift
    if r.spans is not None and not r.finished and r.pc is not None and r.op_start_ns < now:
        r.spans.append(r.op_start_ns, now, _span_label(r.pc))  # the op in progress, up to the jump
        r.op_start_ns = now
    r.op_start_ns += shift
    for f in r.frames:
        if f.var == "tile" and r.vars.get("tile") != f.value and 0 <= f.value < len(r.cta.units):
            r.vars.update(r.cta.units[f.value])
    for f in r.frames:
        r.vars[f.var] = f.value
    for buf, cursor in r.cursors.items():
        ring = r.cta.rings.get(buf)
        if ring is not None:
            cursor.position += opens[id(ring)]
            if cursor.current is not None:
                cursor.current = moved.get(id(cursor.current), cursor.current)
    for held in r.held.values():
        held[:] = [moved.get(id(st), st) for st in held]


def _move_tokens(handles: list[tuple[Any, str]], deltas: list[int], periods: int) -> None:
    """Move every loop token by its per-period delta times ``periods``."""
    keys: dict[tuple[int, tuple], tuple[Any, tuple, dict[str, int]]] = {}
    done: set[tuple[int, str]] = set()  # a dict seen twice (one context for several chunks) moves once
    for (handle, name), delta in zip(handles, deltas, strict=True):
        if not delta:
            continue
        kind = handle[0]
        if kind == "dict":
            if (id(handle[1]), name) in done:
                continue
            done.add((id(handle[1]), name))
            handle[1][name] += delta * periods
        elif kind == "frame":
            handle[1].value += delta * periods
        elif kind == "key":
            owner, key = handle[1], handle[2]
            keys.setdefault((id(owner), key), (owner, key, {}))[2][name] = delta * periods
    # A ring's credit keys move all at once: renaming them one by one would let a key land on another
    # that has not moved yet (credits for k and k + 2 in flight, a jump of 2 periods) and overwrite it.
    renamed: dict[int, tuple[StageRing, dict[tuple, float]]] = {}
    for owner, key, moves in keys.values():
        tag = dict(key)
        for name, x in moves.items():
            tag[name] += x
        if isinstance(owner, StageRing):
            renamed.setdefault(id(owner), (owner, {}))[1][tag_key(tag)] = owner.credits.pop(key)
        else:
            owner.key = tag_key(tag)
    for ring, credits in renamed.values():
        ring.credits.update(credits)


def _shift_ring(ring: StageRing, shift: float, opens: int) -> dict[int, Stage]:
    """Advance ``ring`` by ``opens`` stage occupancies: each occupant moves to the stage its sequence
    number lands on. Returns old stage (by id) -> the stage object now holding its occupant."""
    n = len(ring.stages)
    ring.opened += opens
    old = [(st, st.open_gen >= 0, st.index + n * (st.open_gen if st.open_gen >= 0 else st.freed),
            tuple(getattr(st, f) for f in _STAGE_FIELDS)) for st in ring.stages]  # fmt: skip
    moved: dict[int, Stage] = {}
    for st, is_open, seq, values in old:
        new_seq = seq + opens
        target = ring.stages[new_seq % n]
        for f, v in zip(_STAGE_FIELDS, values, strict=True):
            setattr(target, f, v)
        target.freed = new_seq // n
        target.open_gen = new_seq // n if is_open else -1
        if is_open:
            target.open_ns += shift
            target.full_ns += shift
            if target.tag is not None:
                target.key = tag_key(target.tag)
        moved[id(st)] = target
    return moved


def _shift_event_barrier(b: EventBarrier, d_tile: int, periods: int) -> None:
    if not d_tile:
        return
    step = d_tile // periods
    total = d_tile
    keys = [k for k in b.arrivals if len(k) == 1 and type(k[0]) is int]
    top = max((k[0] for k in keys), default=None)
    new: dict[tuple, int] = {}
    for k, c in b.arrivals.items():
        if k in keys and c < b.count:
            new[(k[0] + total,)] = c
        else:
            new[k] = c
    if top is not None:
        for k in keys:
            c = b.arrivals[k]
            if c >= b.count and k[0] > top - step:
                for m in range(1, periods + 1):
                    new.setdefault((k[0] + m * step,), c)
    b.arrivals = new
    b.waiters = {
        ((k[0] + total,) if len(k) == 1 and type(k[0]) is int else k): v for k, v in b.waiters.items()
    }
