"""Synchronisation: staged buffers with protocols, named and event barriers, turnstiles.

A :class:`StageRing` is a ring of stages with derived full/empty barriers. Producers take stages in
ring order (``acquire``), tagged with their loop variables (``tile``, ``k``, ...); consumers ``wait``
for the stage whose tag matches theirs and ``release`` it. A stage is full when every producer has
arrived and (for TMA and cp.async) every expected byte has landed; it is empty again when every
consumer that takes that tile has released it. Rings of CTAs that receive each other's multicast
are *coupled*: a stage can be refilled only when it is empty in every CTA of the group.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import simpy

Tag = dict[str, Any]


def tag_key(tag: Tag) -> tuple[tuple[str, Any], ...]:
    """A hashable form of a tag."""
    return tuple(sorted(tag.items()))


def tag_matches(stage_tag: Tag, ctx: Tag) -> bool:
    """Whether a consumer context names the same iteration as a stage tag (on the tag's keys)."""
    return all(ctx.get(k, _MISSING) == v for k, v in stage_tag.items())


_MISSING = object()


@dataclass(slots=True, eq=False)
class Stage:
    """One slot of a ring and the state of its current occupant."""

    index: int
    freed: int = 0
    open_gen: int = -1
    tag: Tag | None = None
    key: tuple | None = None
    expected_bytes: float = 0.0
    arrivals: int = 0
    commits: int = 0
    full: bool = False
    releases: int = 0
    expected_releases: int = 1
    open_ns: float = 0.0
    full_ns: float = 0.0


@dataclass(slots=True, eq=False)
class Cursor:
    """A producer's position in a ring."""

    position: int = 0
    current: Stage | None = None


@dataclass(slots=True, eq=False)
class Waiter:
    """A consumer blocked in ``wait``."""

    ctx: Tag
    event: simpy.Event
    holder: list[Stage]
    owner: Any = None
    """Who waits (a role runner), for trace flow arrows."""


class CouplingGroup:
    """Rings whose stages must be empty everywhere before any of them is refilled (TMA multicast)."""

    def __init__(self) -> None:
        self.rings: list[StageRing] = []
        self.pending: list[tuple[StageRing, Cursor, Tag, float, simpy.Event]] = []

    def stage_free_everywhere(self, index: int, gen: int) -> bool:
        """Whether ring slot ``index`` has freed ``gen`` occupants in every ring of the group."""
        return all(r.stages[index].freed >= gen for r in self.rings)

    def retry(self) -> None:
        """Grant pending acquires that have become possible."""
        still = []
        for ring, cursor, tag, expect, event in self.pending:
            if not ring.try_open(cursor, tag, expect):
                still.append((ring, cursor, tag, expect, event))
            else:
                event.succeed()
        self.pending = still


class StageRing:
    """A staged buffer with a producer->consumer protocol, shared by the CTAs in ``scope``."""

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        stages: int,
        producer: str,
        consumer: str,
        expected_producers: int,
        expected_releases: Callable[[Tag], int],
    ) -> None:
        self.env = env
        self.name = name
        self.producer = producer
        self.consumer = consumer
        self.stages = [Stage(i) for i in range(stages)]
        self.expected_producers = max(1, expected_producers)
        self.expected_releases = expected_releases
        self.credits: dict[tuple, float] = {}
        self.waiters: list[Waiter] = []
        self.group = CouplingGroup()
        self.group.rings.append(self)
        self.in_use_samples: list[tuple[float, int]] | None = None
        # Recorded only when tracing: which SM and CTA the ring lives on, (full time, stage index,
        # woken waiter's owner) for flow arrows, and (stage index, open, full, freed) per occupancy.
        self.sm_index = -1
        self.cta_rank = 0
        self.flows: list[tuple[float, int, Any]] | None = None
        self.stage_log: list[tuple[int, float, float, float]] | None = None
        self.opened = 0
        """Stage occupancies opened so far (the ring's sequence counter)."""
        self.ff: Any = None
        """The fast-forward controller, which is told each tag-dependent release count."""

    # ---- producer side ----------------------------------------------------------------------------

    def acquire(self, cursor: Cursor, tag: Tag, expect_bytes: float) -> simpy.Event | None:
        """Take the next stage for ``tag``; returns an event to wait on, or None when granted at once."""
        if self.try_open(cursor, tag, expect_bytes):
            return None
        event = self.env.event()
        self.group.pending.append((self, cursor, tag, expect_bytes, event))
        return event

    def try_open(self, cursor: Cursor, tag: Tag, expect_bytes: float) -> bool:
        """Open (or join) the stage at the cursor if it is free in every coupled ring."""
        index, gen = cursor.position % len(self.stages), cursor.position // len(self.stages)
        if not self.group.stage_free_everywhere(index, gen):
            return False
        stage = self.stages[index]
        if stage.open_gen != gen:
            stage.open_gen = gen
            stage.tag = dict(tag)
            stage.key = tag_key(tag)
            stage.expected_bytes = 0.0
            stage.arrivals = stage.commits = stage.releases = 0
            stage.full = False
            stage.expected_releases = max(1, self.expected_releases(tag))
            if self.ff is not None:
                self.ff.observe_releases(self, stage.tag, stage.expected_releases)
            self.opened += 1
            stage.open_ns = self.env.now
            self._sample()
        stage.expected_bytes += expect_bytes
        stage.arrivals += 1
        cursor.position += 1
        cursor.current = stage
        if self.producer in ("tma", "cp_async"):
            self._check_full(stage)
        return True

    def commit(self, cursor: Cursor, after: simpy.Event | None = None) -> None:
        """Producer threads (or the MMAs issued before, when ``after`` is given) finish the stage."""
        stage = cursor.current
        if stage is None:
            return
        if after is not None and not after.processed:
            after.callbacks.append(StageCallback(self, stage, release=False))
        else:
            self._commit_stage(stage)

    def _commit_stage(self, stage: Stage) -> None:
        if stage.open_gen < 0:  # freed meanwhile (by a consumer that released it twice): nothing to fill
            return
        stage.commits += 1
        if stage.commits >= self.expected_producers:
            self._set_full(stage)

    def credit(self, key: tuple, amount: float) -> None:
        """Bytes of a TMA / cp.async transfer for the stage tagged ``key`` have landed."""
        self.credits[key] = self.credits.get(key, 0.0) + amount
        for stage in self.stages:
            if stage.key == key and stage.open_gen >= 0 and not stage.full:
                self._check_full(stage)

    def _check_full(self, stage: Stage) -> None:
        if stage.full or stage.arrivals < self.expected_producers:
            return
        if self.credits.get(stage.key, 0.0) + 1e-6 >= stage.expected_bytes:  # type: ignore[arg-type]
            self._set_full(stage)

    def _set_full(self, stage: Stage) -> None:
        stage.full = True
        stage.full_ns = self.env.now
        still = []
        for waiter in self.waiters:
            if stage.full and tag_matches(stage.tag, waiter.ctx):  # type: ignore[arg-type]
                waiter.holder.append(stage)
                waiter.event.succeed()
                if self.flows is not None:
                    self.flows.append((self.env.now, stage.index, waiter.owner))
            else:
                still.append(waiter)
        self.waiters = still

    # ---- consumer side ----------------------------------------------------------------------------

    def wait(self, ctx: Tag, holder: list[Stage], owner: Any = None) -> simpy.Event | None:
        """Wait for the full stage matching ``ctx``; it is appended to ``holder`` (the held list)."""
        for stage in self.stages:
            if stage.full and stage.open_gen >= 0 and tag_matches(stage.tag, ctx):  # type: ignore[arg-type]
                holder.append(stage)
                return None
        event = self.env.event()
        self.waiters.append(Waiter(dict(ctx), event, holder, owner))
        return event

    def release(self, holder: list[Stage], keep: int, after: simpy.Event | None = None) -> None:
        """Release the oldest held stages until ``keep`` remain (after ``after`` fires, if given)."""
        while len(holder) > keep:
            stage = holder.pop(0)
            if after is not None and not after.processed:
                after.callbacks.append(StageCallback(self, stage, release=True))
            else:
                self._release_stage(stage)

    def _release_stage(self, stage: Stage) -> None:
        if stage.open_gen < 0:  # already freed: a consumer that waited twice for it releases it twice
            return
        stage.releases += 1
        if stage.releases >= stage.expected_releases:
            if stage.key is not None:
                self.credits.pop(stage.key, None)
            stage.full = False
            stage.open_gen = -1
            stage.tag = stage.key = None
            stage.freed += 1
            if self.stage_log is not None:
                self.stage_log.append((stage.index, stage.open_ns, stage.full_ns, self.env.now))
            self._sample()
            self.group.retry()

    def in_use(self) -> int:
        """Stages currently acquired and not yet freed."""
        return sum(1 for s in self.stages if s.open_gen >= 0)

    def _sample(self) -> None:
        if self.in_use_samples is not None:
            self.in_use_samples.append((self.env.now, self.in_use()))

    def describe_blocked(self, ctx: Tag) -> str:
        """What a consumer with ``ctx`` is waiting for, for deadlock reports."""
        held = [s.tag for s in self.stages if s.open_gen >= 0]
        return f"stage {dict(ctx)} of '{self.name}' (stages in flight: {held or 'none'})"


@dataclass(slots=True, eq=False)
class StageCallback:
    """Commit or release ``stage`` when an event (the MMAs issued before) fires."""

    ring: StageRing
    stage: Stage
    release: bool

    def __call__(self, _event: simpy.Event) -> None:
        if self.release:
            self.ring._release_stage(self.stage)
        else:
            self.ring._commit_stage(self.stage)


@dataclass(slots=True, eq=False)
class Credit:
    """Credit ``amount`` bytes to the stage tagged ``key`` in each of ``rings`` (a transfer landed)."""

    rings: list[StageRing]
    key: tuple
    amount: float

    def __call__(self) -> None:
        for ring in self.rings:
            ring.credit(self.key, self.amount)


@dataclass(slots=True, eq=False)
class Land:
    """Mark chunk ``chunk`` of the stage tagged ``tag`` landed in each of ``buffers``."""

    buffers: list[ChunkBuffer]
    tag: Tag
    chunk: int

    def __call__(self) -> None:
        for buffer in self.buffers:
            buffer.land(self.tag, self.chunk)


def couple(rings: list[StageRing]) -> None:
    """Make the rings share one coupling group (multicast receivers)."""
    if len(rings) < 2:
        return
    group = CouplingGroup()
    for ring in rings:
        ring.group = group
        group.rings.append(ring)


class ChunkBuffer:
    """A buffer with per-chunk full barriers and no empty barrier (protocol ``tma->manual``).

    A load tags its chunks with the issuing role's loop context (with ``at:`` applied); a wait names
    a chunk and matches a landed tag on the tag's own keys, so a wait nested in a deeper loop (e.g.
    ``for c`` over the chunks) still finds the load issued one loop level up."""

    def __init__(self, env: simpy.Environment, name: str, chunks: int | None = None) -> None:
        self.env = env
        self.name = name
        self.chunks = chunks
        """How many chunks the buffer has (None: unchecked)."""
        self.landed: dict[int, list[Tag]] = {}
        self.found: dict[int, dict[tuple[str, ...], dict[tuple[Any, ...], tuple[int, Tag]]]] = {}
        """An index of ``landed``: per chunk, per set of tag keys, the values of the first tag landed
        with them and its position, so a wait finds its tag without scanning every landing."""
        self.records: dict[int, dict[str, tuple[list[int], list[int]]]] = {}
        """Another index of ``landed``: per chunk and integer tag key, the values that set a new maximum
        in landing order and where they landed, so the tags whose value of a key reaches a bound are
        found without scanning the ones before them (:meth:`first_reaching`)."""
        self.positions: dict[int, dict[str, dict[Any, list[int]]]] = {}
        """A third index of ``landed``: per chunk, tag key and value, where the tags with that value
        landed, in landing order (:meth:`positions_with`)."""
        self.keyed: dict[int, dict[str, int]] = {}
        """Per chunk and tag key, how many landed tags have the key."""
        self.waiters: list[tuple[Tag, int, simpy.Event]] = []
        self.ff: Any = None
        """The fast-forward controller, told of every landing and every wait."""

    def check_chunk(self, chunk: int, where: str) -> int:
        """``chunk`` if it is one of the buffer's chunks, else a one-line InputError naming the statement."""
        if self.chunks is not None and not 0 <= chunk < self.chunks:
            from gpusim.errors import InputError

            raise InputError(
                f"{where}: chunk {chunk} of buffer '{self.name}', which has chunks 0..{self.chunks - 1}"
            )
        return chunk

    def add_landed(self, chunk: int, tag: Tag) -> None:
        """Record a landed tag (a copy) in ``landed`` and its indexes; nobody is woken."""
        tag = dict(tag)
        landed = self.landed.setdefault(chunk, [])
        keys = tuple(tag)
        values = tuple(tag.values())
        first = self.found.setdefault(chunk, {}).setdefault(keys, {})
        if values not in first:
            first[values] = (len(landed), tag)
        records = self.records.setdefault(chunk, {})
        positions = self.positions.setdefault(chunk, {})
        keyed = self.keyed.setdefault(chunk, {})
        for key, value in tag.items():
            positions.setdefault(key, {}).setdefault(value, []).append(len(landed))
            keyed[key] = keyed.get(key, 0) + 1
            if type(value) is int:
                record = records.get(key)
                if record is None:
                    records[key] = ([value], [len(landed)])
                elif value > record[0][-1]:
                    record[0].append(value)
                    record[1].append(len(landed))
        landed.append(tag)

    def first_reaching(self, chunk: int, bounds: dict[str, int]) -> int:
        """Where the first tag of ``chunk`` landed whose integer value of some key in ``bounds`` is at
        least that key's bound (``len(landed[chunk])`` when none is): every tag before it is below
        every bound."""
        records = self.records.get(chunk, {})
        first = len(self.landed.get(chunk, ()))
        for key, bound in bounds.items():
            record = records.get(key)
            if record is not None:
                i = bisect_left(record[0], bound)
                if i < len(record[0]):
                    first = min(first, record[1][i])
        return first

    def positions_with(self, chunk: int, key: str, values: set[Any], start: int) -> list[int] | None:
        """Where the tags of ``chunk`` landed, from position ``start`` on, whose value of ``key`` is one of
        ``values``, in landing order; None when some landed tag lacks ``key`` (the index cannot say)."""
        if self.keyed.get(chunk, {}).get(key, 0) != len(self.landed.get(chunk, ())):
            return None
        index = self.positions.get(chunk, {}).get(key, {})
        found: list[int] = []
        for value in values:
            where = index.get(value)
            if where:
                found.extend(where[bisect_left(where, start) :])
        if len(values) > 1:
            found.sort()
        return found

    def first_landed(self, chunk: int, ctx: Tag) -> Tag | None:
        """The first landed tag of ``chunk`` that ``ctx`` names (``tag_matches``), or None."""
        best: tuple[int, Tag] | None = None
        for keys, first in self.found.get(chunk, {}).items():
            hit = first.get(tuple(ctx.get(k, _MISSING) for k in keys))
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        return None if best is None else best[1]

    def land(self, tag: Tag, chunk: int) -> None:
        """Chunk ``chunk`` of the stage tagged ``tag`` has landed."""
        self.add_landed(chunk, tag)
        if self.ff is not None:
            self.ff.observe_land(self, chunk, tag)
        still = []
        for ctx, c, event in self.waiters:
            if c == chunk and tag_matches(tag, ctx):
                event.succeed()
            else:
                still.append((ctx, c, event))
        self.waiters = still

    def wait(self, ctx: Tag, chunk: int) -> simpy.Event | None:
        """Wait until chunk ``chunk`` of a stage whose tag ``ctx`` names has landed."""
        tag = self.first_landed(chunk, ctx)
        if tag is not None:
            if self.ff is not None:
                self.ff.observe_chunk_wait(self, chunk, ctx, tag)
            return None
        if self.ff is not None:
            self.ff.observe_chunk_wait(self, chunk, ctx, None)
        event = self.env.event()
        self.waiters.append((dict(ctx), chunk, event))
        return event


class NamedBarrier:
    """A hardware named barrier: completes each phase when ``warps`` warps have arrived."""

    def __init__(self, env: simpy.Environment, name: str, warps: int) -> None:
        self.env = env
        self.name = name
        self.warps = warps
        self.arrived = 0
        self.phase_event = env.event()

    def arrive(self, warps: int) -> simpy.Event | None:
        """Arrive with ``warps``; returns the phase event (None if this arrival completed the phase)."""
        self.arrived += warps
        if self.arrived >= self.warps:
            self.arrived -= self.warps
            event, self.phase_event = self.phase_event, self.env.event()
            event.succeed()
            return None
        return self.phase_event


class EventBarrier:
    """An mbarrier used as a per-tile signal: ``count`` arrivals complete a tag."""

    def __init__(self, env: simpy.Environment, name: str, count: int) -> None:
        self.env = env
        self.name = name
        self.count = max(1, count)
        self.arrivals: dict[tuple, int] = {}
        self.waiters: dict[tuple, list[simpy.Event]] = {}

    def arrive(self, key: tuple) -> None:
        """One arrival for ``key``."""
        self.arrivals[key] = self.arrivals.get(key, 0) + 1
        if self.arrivals[key] >= self.count:
            for event in self.waiters.pop(key, []):
                event.succeed()

    def wait(self, key: tuple) -> simpy.Event | None:
        """Wait until ``key`` is complete."""
        if self.arrivals.get(key, 0) >= self.count:
            return None
        event = self.env.event()
        self.waiters.setdefault(key, []).append(event)
        return event


@dataclass(eq=False)
class Turnstile:
    """Round-robin order among the replicas of one role (CUTLASS OrderedSequenceBarrier, FA3 WG scheduler)."""

    env: simpy.Environment
    name: str
    members: int
    token: int = 0
    done: set[int] = field(default_factory=set)
    waiters: dict[int, simpy.Event] = field(default_factory=dict)

    def wait_turn(self, member: int) -> simpy.Event | None:
        """Wait until it is ``member``'s turn."""
        self._skip_done()
        if self.token == member:
            return None
        event = self.env.event()
        self.waiters[member] = event
        return event

    def pass_turn(self, member: int) -> None:
        """Hand the turn to the next replica."""
        self.token = (member + 1) % self.members
        self._skip_done()
        self._wake()

    def leave(self, member: int) -> None:
        """A replica finished its program: it takes no more turns."""
        self.done.add(member)
        self._skip_done()
        self._wake()

    def _skip_done(self) -> None:
        for _ in range(self.members):
            if self.token in self.done and len(self.done) < self.members:
                self.token = (self.token + 1) % self.members

    def _wake(self) -> None:
        event = self.waiters.pop(self.token, None)
        if event is not None:
            event.succeed()
