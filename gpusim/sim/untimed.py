"""An untimed replay of the synchronisation of each cluster over its work units: deadlocks named early.

Only the statements that synchronise (``acquire``, ``commit``, ``wait``, ``release``, ``arrive``,
``sync``, ``__syncthreads``, turnstiles) and those that fill stages (``tma_load``, ``cp_async``) are
replayed, with the simulator's own rules (gpusim/sim/sync.py): the stage rings, their multicast coupling
and pair scope, event and named barriers, turnstiles and chunked buffers of every CTA of one cluster,
over the real work units of one slot of the work plan (every slot whose units differ). Every other op
takes no time and every transfer lands at once: what remains is a token game whose outcome, where the
rules below hold, does not depend on the order in which the roles move, so one order decides it for
every timing, the simulator's included (Keller's theorem for persistent systems):

- an enabled step stays enabled until its role takes it, except a ``wait`` for a stage that another
  role frees first. The replay marks the run inexact when a wait matches a tag already freed, when two
  full stages match one wait, or when two producers open one stage with different tags;
- a named barrier (or ``__syncthreads``) groups arrivals into phases by order. It is exact when its
  users on the CTA only ``sync`` (no ``arrive``) and their warps make exactly one phase; any other named
  barrier that a run uses makes the run inexact.

A run that ends with roles blocked and was exact is a deadlock of the schedule for every timing: it is
reported, with each blocked role and what it waits for, before any event is simulated. An inexact run,
one the replay cannot follow (any error: the simulation reports it with its path) or one past the step
budget says nothing, and the simulation decides.

Persistent kernels are replayed unit by unit: the roles may run ahead into the next unit only when the
current one cannot finish without them. When every role has finished unit ``h - 1`` and waits at the
start of unit ``h`` (a *cut*), the state is summarised (turnstile tokens, barrier counts, the rings'
cursor offsets, loop variables; rings must be empty). A summary equal to that of an earlier cut ``h'``
(with ``h = h'`` modulo the tile filters' periods) whose units ``h' .. h`` repeat, by what the programs
read of them, in the units that follow, is a period: the state after any number of such periods is the
same up to a shift of ring positions and tile ordinals, so the replay jumps them. A deadlock at the end
of a kernel of any size is thus found after a few units per distinct slot. Inside a unit, periods of the
loops (k-tiles) are jumped the same way (gpusim/sim/replayloops.py).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from gpusim.arch import Arch
from gpusim.errors import DeadlockError
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import Stmt, statement_exprs, walk
from gpusim.sim.replayloops import LoopPeriods, visits
from gpusim.sim.scheduler import ClusterUnit, SlotUnits, WorkPlan
from gpusim.sim.unitclasses import UnitClasses

MAX_STEPS = 400_000
"""Statements the replay may execute over all its runs before it gives up and leaves it to the simulation."""

_SYNC = frozenset({"acquire", "commit", "wait", "release", "arrive", "sync", "syncthreads"})
_FILLS = frozenset({"tma_load", "cp_async"})
_MISSING = object()


class _GiveUp(Exception):
    """The replay cannot decide (budget, an inexact rule, anything it cannot follow)."""


def _tag_key(tag: dict[str, Any]) -> tuple:
    return tuple(sorted(tag.items()))


def _matches(stage_tag: dict[str, Any], ctx: dict[str, Any]) -> bool:
    return all(ctx.get(k, _MISSING) == v for k, v in stage_tag.items())


def replayed_statements(sched: Schedule) -> set[int]:
    """The ids of the statements the replay runs: those that synchronise or fill stages, turnstile turns,
    tile loops, and every statement holding one of them."""
    relevant: set[int] = set()

    def mark(stmts: tuple[Stmt, ...]) -> bool:
        found = False
        for stmt in stmts:
            inner = mark(stmt.body)
            if inner or stmt.op in _SYNC or stmt.op in _FILLS or stmt.op in ("turn", "tiles"):
                relevant.add(id(stmt))
                found = True
        return found

    for role in sched.roles.values():
        mark(role.program)
    return relevant


class _Game:
    """Shared across the runs of one check: the schedule, the step budget, the expression memo."""

    def __init__(self, sched: Schedule, arch: Arch, max_steps: int = MAX_STEPS) -> None:
        self.sched = sched
        self.arch = arch
        self.steps = 0
        self.max_steps = max_steps
        self.ats: dict[int, tuple[tuple[str, Any, bool], ...]] = {}
        self.fills: dict[tuple[int, int], tuple[Stmt, ...]] = {}
        self.memo: dict[tuple, Any] = {}
        self.names: dict[Any, tuple[tuple[str, ...], bool]] = {}
        self.relevant = replayed_statements(sched)
        self.loop_names = frozenset(s.args.var for role in sched.roles.values() for s, _ in walk(role.program)
                                    if s.op == "for")  # fmt: skip
        self.record: dict[tuple, tuple] | None = None
        """While a run looks for loop periods: every evaluation of an expression reading a loop variable,
        by memo key (checked again at the counters a jump skips to)."""
        self.loop_vars = {
            role.name: _stale_reads(role.program, self.relevant) for role in sched.roles.values()
        }
        """Per role, the loop variables a replayed statement reads outside every loop that binds them (the
        value a finished loop left behind): those are part of a cut's state; the others are rebound
        before they are read."""
        self.tile_window = _event_tile_window(sched, self.relevant)
        """How far back (in work units) an event barrier's ``at: {tile: tile - c}`` reads; None when the
        tile ordinal is read any other way."""
        self.jumps = self.tile_window is not None
        """Whole periods may be jumped only when the tile ordinal is read, if at all, as an offset of an
        event barrier's tile (the arrivals are then shifted with the jump); not by guards or rings."""
        self.turnstiles_used = {
            role.name: {s.args.name for s, _ in walk(role.program) if s.op == "turn"}
            for role in sched.roles.values()
        }

    def charge(self, evaluations: int) -> None:
        """Count work other than statements (a loop jump's checks, gpusim/sim/replayloops.py) against the
        step budget; past it, the replay gives up."""
        self.steps += evaluations
        if self.steps > self.max_steps:
            raise _GiveUp

    def at_of(self, stmt: Stmt) -> tuple[tuple[str, Any, bool], ...]:
        """A statement's ``at:`` entries: (name, expression, whether it is that name plus a constant, so
        that it moves with the name when a loop jump moves it)."""
        got = self.ats.get(id(stmt))
        if got is None:
            got = self.ats[id(stmt)] = tuple(
                (key, expr, _name_offset(expr.text, key) is not None)
                for key, expr in (getattr(stmt.args, "at", None) or {}).items()
            )
        return got

    def fills_after(self, stmts: tuple[Stmt, ...], i: int) -> tuple[Stmt, ...]:
        """The fills of the buffer that ``stmts[i]`` acquires, up to its next acquire in the block."""
        key = (id(stmts), i)
        got = self.fills.get(key)
        if got is None:
            buf = stmts[i].args.buf
            found = []
            for later in stmts[i + 1 :]:
                if later.op == "acquire" and later.args.buf == buf:
                    break
                if later.op in _FILLS and later.args.buf == buf:
                    found.append(later)
            got = self.fills[key] = tuple(found)
        return got

    def eval(self, expr: Any, vars_: dict[str, Any], stmt: Stmt, kind: Any = None) -> Any:
        cached = self.names.get(expr)
        if cached is None:
            names = tuple(sorted(expr.names))
            cached = self.names[expr] = (names, not self.loop_names.isdisjoint(names))
        names, reads_loop = cached
        get = vars_.get
        values = tuple([get(n) for n in names])
        key = (kind, expr, *values)
        value = self.memo.get(key, _MISSING)
        if value is _MISSING:
            value = self.evaluate(expr, vars_, stmt, kind)
            if len(self.memo) > 65_536:
                self.memo.clear()
            self.memo[key] = value
        if reads_loop and self.record is not None:
            self.record[key] = (expr, stmt, kind, names, values, value)
        return value

    @staticmethod
    def evaluate(expr: Any, vars_: dict[str, Any], stmt: Stmt, kind: Any = None) -> Any:
        """Evaluate ``expr`` as ``kind`` says (None: a value, ``size``: a size, (minimum, whole): a count)."""
        if kind is None:
            return expr(vars_, where=stmt.where)
        if kind == "size":
            return stmt.size(expr, vars_)
        return stmt.count(expr, vars_, minimum=kind[0], whole=kind[1])


# ---- the simulator's synchronisation objects, without time ---------------------------------------------


class _Ring:
    """A stage ring (sync.StageRing) without time: fills land at once, deferred commits and releases act at once."""

    def __init__(self, name: str, stages: int, producer: str, producers: int, filters: list[tuple[int, int]]
                 ) -> None:  # fmt: skip
        self.name = name
        self.n = stages
        self.bytes_full = producer in ("tma", "cp_async")
        self.producers = max(1, producers)
        self.filters = filters
        self.freed = [0] * stages
        self.open_gen = [-1] * stages
        self.tag: list[dict[str, Any] | None] = [None] * stages
        self.key: list[tuple | None] = [None] * stages
        self.expected = [0.0] * stages
        self.arrivals = [0] * stages
        self.commits = [0] * stages
        self.full = [False] * stages
        self.releases = [0] * stages
        self.expected_releases = [1] * stages
        self.credits: dict[tuple, float] = {}
        self.group: list[_Ring] = [self]
        self.freed_keys: set[tuple] = set()
        self.freed_keysets: set[tuple[str, ...]] = set()
        self.cursors: list[list[Any]] = []
        """[position, current stage or None] of every producer replica."""
        self.loops: LoopPeriods | None = None

    def expected_of(self, tag: dict[str, Any]) -> int:
        tile = tag.get("tile", 0)
        return sum(1 for every, offset in self.filters if tile >= offset and (tile - offset) % every == 0)

    def try_open(self, cursor: list[Any], tag: dict[str, Any], expect: float, run: _Run) -> bool:
        index, gen = cursor[0] % self.n, cursor[0] // self.n
        if not all(r.freed[index] >= gen for r in self.group):
            return False
        key = _tag_key(tag)
        if self.open_gen[index] != gen:
            if any(self.open_gen[j] >= 0 and self.key[j] == key for j in range(self.n)):
                run.inexact = True  # two stages with one tag: which one a wait takes depends on timing
            self.open_gen[index] = gen
            self.tag[index] = dict(tag)
            self.key[index] = key
            self.expected[index] = 0.0
            self.arrivals[index] = self.commits[index] = self.releases[index] = 0
            self.full[index] = False
            self.expected_releases[index] = max(1, self.expected_of(tag))
        elif self.key[index] != key:
            run.inexact = True  # producers that open one stage with different tags: the first one's wins
        self.expected[index] += expect
        self.arrivals[index] += 1
        cursor[0] += 1
        cursor[1] = index
        if self.bytes_full:
            self._check_full(index)
        return True

    def commit(self, index: int) -> None:
        if self.open_gen[index] < 0:
            return
        self.commits[index] += 1
        if self.commits[index] >= self.producers:
            self.full[index] = True

    def credit(self, key: tuple, amount: float) -> None:
        self.credits[key] = self.credits.get(key, 0.0) + amount
        for index in range(self.n):
            if self.key[index] == key and self.open_gen[index] >= 0 and not self.full[index]:
                self._check_full(index)

    def _check_full(self, index: int) -> None:
        if self.full[index] or self.arrivals[index] < self.producers:
            return
        if self.credits.get(self.key[index], 0.0) + 1e-6 >= self.expected[index]:  # type: ignore[arg-type]
            self.full[index] = True

    def find(self, ctx: dict[str, Any], run: _Run) -> int | None:
        for keys in self.freed_keysets:
            if tuple((k, ctx.get(k, _MISSING)) for k in keys) in self.freed_keys:
                run.inexact = (
                    True  # a wait for a stage that was freed: had it come earlier, it would have held it
                )
                break
        hit = None
        for index in range(self.n):
            if self.full[index] and self.open_gen[index] >= 0 and _matches(self.tag[index], ctx):  # type: ignore[arg-type]
                if hit is not None:
                    run.inexact = True
                    break
                hit = index
        return hit

    def release(self, index: int) -> None:
        if self.open_gen[index] < 0:
            return
        self.releases[index] += 1
        if self.releases[index] >= self.expected_releases[index]:
            key = self.key[index]
            self.credits.pop(key, None)  # type: ignore[arg-type]
            self.freed_keys.add(key)  # type: ignore[arg-type]
            self.freed_keysets.add(tuple(k for k, _ in key))  # type: ignore[union-attr]
            if self.loops is not None:
                self.loops.freed_stage(self, key)  # type: ignore[arg-type]
            self.full[index] = False
            self.open_gen[index] = -1
            self.tag[index] = self.key[index] = None
            self.freed[index] += 1

    def describe(self, ctx: dict[str, Any]) -> str:
        held = [self.tag[i] for i in range(self.n) if self.open_gen[i] >= 0]
        return f"stage {dict(ctx)} of '{self.name}' (stages in flight: {held or 'none'})"


class _Named:
    """A named barrier (or ``__syncthreads``): phases of ``warps`` warps, in arrival order."""

    def __init__(self, name: str, warps: int, exact: bool) -> None:
        self.name = name
        self.warps = max(1, warps)
        self.arrived = 0
        self.phase = 0
        self.exact = exact
        self.used = False

    def arrive(self, warps: int) -> int:
        """Arrive; returns the phase arrived in (complete once ``self.phase`` is past it)."""
        self.used = True
        phase = self.phase
        self.arrived += warps
        if self.arrived >= self.warps:
            self.arrived -= self.warps
            self.phase += 1
        return phase


class _Turnstile:
    def __init__(self, name: str, members: int) -> None:
        self.name = name
        self.members = max(1, members)
        self.token = 0
        self.done: set[int] = set()

    def skip_done(self) -> None:
        for _ in range(self.members):
            if self.token in self.done and len(self.done) < self.members:
                self.token = (self.token + 1) % self.members


class _Chunks:
    def __init__(self) -> None:
        self.found: dict[tuple[int, tuple[str, ...]], set[tuple]] = {}

    def land(self, tag: dict[str, Any], chunk: int) -> None:
        self.found.setdefault((chunk, tuple(tag)), set()).add(tuple(tag.values()))

    def landed(self, ctx: dict[str, Any], chunk: int) -> bool:
        for (c, keys), values in self.found.items():
            if c == chunk and tuple(ctx.get(k, _MISSING) for k in keys) in values:
                return True
        return False


class _Cta:
    def __init__(self, rank: int, units: list[dict[str, Any]]) -> None:
        self.rank = rank
        self.units = units
        self.rings: dict[str, _Ring] = {}
        self.chunks: dict[str, _Chunks] = {}
        self.named: dict[str, _Named] = {}
        self.events: dict[str, tuple[int, dict[tuple, int]]] = {}
        self.turnstiles: dict[str, _Turnstile] = {}
        self.syncthreads: _Named | None = None
        self.peers: dict[str, list[_Cta]] = {}


# ---- one cluster's run --------------------------------------------------------------------------------------


class _Run:
    """The CTAs of one cluster over one slot's units (persistent) or one unit (grid launch)."""

    def __init__(self, game: _Game, cunits: list[ClusterUnit], classes: list[Any]) -> None:
        from gpusim.sim.engine import _roles_touching, _runs_on, _tile_filter, _tma_multicasts

        self.game = game
        sched = game.sched
        self.classes = classes
        self.inexact = False
        self.horizon = 1
        pair = sched.launch.cta_pair
        csize = sched.launch.cluster_size
        self.ctas = [_Cta(rank, [cu[rank] for cu in cunits]) for rank in range(csize)]
        sync_warps = sum(r.warps * r.replicas for r in sched.roles.values()
                         if any(s.op == "syncthreads" for s, _ in walk(r.program)))  # fmt: skip
        roles_on = {
            cta.rank: [r for r in sched.roles.values() if _runs_on(r.cta, cta.rank, pair)]
            for cta in self.ctas
        }
        for cta in self.ctas:
            for name, b in sched.buffers.items():
                if not b.has_protocol:
                    continue
                if b.consumer == "manual":
                    cta.chunks[name] = _Chunks()
                    continue
                sharing = [cta]
                if b.scope == "pair" and pair:
                    leader = self.ctas[cta.rank - cta.rank % 2]
                    if leader is not cta and name in leader.rings:
                        cta.rings[name] = leader.rings[name]
                        continue
                    sharing = [leader, self.ctas[leader.rank + 1]]
                producers = _roles_touching(sched, name, ("acquire", "commit"))
                consumers = _roles_touching(sched, name, ("wait", "release"))
                n_producers = sum(sched.roles[r].replicas for c in sharing for r in producers
                                  if _runs_on(sched.roles[r].cta, c.rank, pair))  # fmt: skip
                filters = [_tile_filter(sched, r, rep) for c in sharing for r in consumers
                           if _runs_on(sched.roles[r].cta, c.rank, pair) for rep in range(sched.roles[r].replicas)]  # fmt: skip
                cta.rings[name] = _Ring(name, b.stages, b.producer or "threads", n_producers, filters)
            users = [r for r in roles_on[cta.rank] if any(s.op == "syncthreads" for s, _ in walk(r.program))]
            cta.syncthreads = _Named("__syncthreads", max(1, sync_warps),
                                     sum(r.warps * r.replicas for r in users) == max(1, sync_warps))  # fmt: skip
            for name, bar in sched.barriers.items():
                if bar.kind == "named":
                    uses = [(r, s.op) for r in roles_on[cta.rank] for s, _ in walk(r.program)
                            if s.op in ("sync", "arrive") and s.args.bar == name]  # fmt: skip
                    warps = sum(r.warps * r.replicas for r in {id(r): r for r, _ in uses}.values())
                    exact = all(op == "sync" for _, op in uses) and warps == bar.warps
                    cta.named[name] = _Named(name, bar.warps, exact)
                elif bar.kind == "event":
                    cta.events[name] = (max(1, bar.count), {})
                elif bar.kind == "turnstile":
                    cta.turnstiles[name] = _Turnstile(name, sched.roles[bar.members].replicas)  # type: ignore[index]
        self._link_multicast(_tma_multicasts(sched))
        self.runners: list[_Runner] = []
        for cta in self.ctas:
            for role in roles_on[cta.rank]:
                for replica in range(role.replicas):
                    self.runners.append(_Runner(self, cta, role, replica))
        self.rings = list({id(r): r for cta in self.ctas for r in cta.rings.values()}.values())
        for runner in self.runners:
            for buf, cursor in runner.cursors.items():
                runner.cta.rings[buf].cursors.append(cursor)
        self.every = 1
        for role in sched.roles.values():
            for replica in range(role.replicas):
                self.every = math.lcm(self.every, _tile_filter(sched, role.name, replica)[0])
        self.epoch = 0
        """Loop jumps so far: a role blocked across one recomputes its stage tag."""
        self.loops: LoopPeriods | None = None
        if game.loop_names and not any(cta.chunks for cta in self.ctas):
            self.loops = LoopPeriods(self)
            for ring in self.rings:
                ring.loops = self.loops

    def _link_multicast(self, multicast: dict[str, dict[str, int]]) -> None:
        sched = self.game.sched
        for buf, operands in multicast.items():
            parent = list(range(len(self.ctas)))

            def root(rank: int, parent: list[int] = parent) -> int:
                while parent[rank] != rank:
                    rank = parent[rank]
                return rank

            for operand, mc in operands.items():
                groups: dict[tuple, list[_Cta]] = {}
                for cta in self.ctas:
                    if not cta.units:
                        raise _GiveUp
                    local = {**sched.env, **cta.units[0]}
                    key = tuple(
                        k(local, where=f"operands.{operand}.key") for k in sched.operands[operand].key
                    )
                    groups.setdefault(key, []).append(cta)
                for members in groups.values():
                    if len(members) != mc:
                        raise _GiveUp  # the simulation refuses it with its reason
                    for cta in members:
                        cta.peers[operand] = members
                        parent[root(cta.rank)] = root(members[0].rank)
            by_root: dict[int, list[_Ring]] = {}
            for cta in self.ctas:
                ring = cta.rings.get(buf)
                if ring is not None and all(ring is not r for r in by_root.get(root(cta.rank), [])):
                    by_root.setdefault(root(cta.rank), []).append(ring)
            for rings in by_root.values():
                if len(rings) > 1:
                    for ring in rings:
                        ring.group = rings

    # ---- driving ----------------------------------------------------------------------------------------

    def play(self) -> list[_Runner]:
        """Run every role as far as it goes; the roles blocked for good (empty: the run completes)."""
        seen: dict[tuple, tuple[int, list[int]]] = {}
        units = len(self.ctas[0].units)
        for runner in self.runners:
            runner.start()
        loops = self.loops
        try:
            while True:
                moved = True
                while moved:
                    moved = False
                    for runner in self.runners:
                        if runner.gen is not None and runner.advance():
                            moved = True
                    if moved and loops is not None:
                        loops.after_sweep()
                live = [r for r in self.runners if r.gen is not None]
                if not live:
                    return []
                at_cut = [r for r in live if r.boundary == self.horizon]
                if not at_cut:
                    if self.inexact or any(n.used and not n.exact for c in self.ctas
                                           for n in [*c.named.values(), c.syncthreads] if n is not None):  # fmt: skip
                        raise _GiveUp
                    return live
                if len(at_cut) == len(live):
                    self._cut(seen, units)
                self.horizon += 1
                if loops is not None:
                    loops.reset()
        finally:
            self.game.record = None

    def _cut(self, seen: dict[tuple, tuple[int, list[int]]], units: int) -> None:
        """Every live role waits at the start of unit ``horizon``: remember the state, jump whole periods."""
        h = self.horizon
        sig = self._signature()
        if sig is None:
            return
        key = (sig, h % self.every)
        positions = [r.cursors[0][0] if r.cursors else 0 for r in self.rings]
        earlier = seen.get(key)
        seen[key] = (h, positions)
        if earlier is None or not self.game.jumps:
            return
        h0, before = earlier
        period = h - h0
        classes = self.classes
        n = 0
        while h + (n + 1) * period <= units and all(
            classes[h + n * period + i] == classes[h0 + i] for i in range(period)
        ):
            n += 1
        window = self.game.tile_window or 0
        if n == 0 or n * period <= 2 * window:
            return
        for cta in self.ctas:
            for _count, arrivals in cta.events.values():
                for (tile,), count in list(arrivals.items()):
                    if tile >= h - window:
                        arrivals[(tile + n * period,)] = count
        for ring, p0, p1 in zip(self.rings, before, positions, strict=True):
            shift = (p1 - p0) * n
            if not shift:
                continue
            new = p1 + shift
            for i in range(ring.n):
                ring.freed[i] += visits(new, i, ring.n) - visits(p1, i, ring.n)
            for cursor in ring.cursors:
                cursor[0] += shift
                if cursor[1] is not None:
                    cursor[1] = (cursor[0] - 1) % ring.n
        self.horizon = h + n * period
        for runner in self.runners:
            runner.jump = self.horizon
        seen.clear()
        seen[key] = (self.horizon, [r.cursors[0][0] if r.cursors else 0 for r in self.rings])

    def _signature(self) -> tuple | None:
        out: list[Any] = []
        for ring in self.rings:
            if any(g >= 0 for g in ring.open_gen) or ring.credits:
                return None
            if len({c[0] for c in ring.cursors}) > 1:
                return None
        for cta in self.ctas:
            offsets = []
            for name in sorted(cta.rings):
                ring = cta.rings[name]
                base = min((c[0] for r in ring.group for c in r.cursors), default=0)
                offsets.append(tuple(c[0] - base for c in ring.cursors))
            out.append(tuple(offsets))
            out.append(tuple((t.token, tuple(sorted(t.done))) for t in cta.turnstiles.values()))
            out.append(tuple(n.arrived for n in cta.named.values()))
            out.append(cta.syncthreads.arrived if cta.syncthreads is not None else 0)
            recent = self.horizon - (self.game.tile_window or 0)
            out.append(tuple(tuple(sorted((t - self.horizon, c) for (t,), c in arrivals.items() if t >= recent))
                             for _count, arrivals in cta.events.values()))  # fmt: skip
        for runner in self.runners:
            if any(runner.held.values()):
                return None
            out.append(
                (runner.gen is None, tuple(runner.vars.get(v) for v in self.game.loop_vars[runner.role.name]))
            )
        return tuple(out)


def _stale_reads(program: tuple[Stmt, ...], relevant: set[int]) -> tuple[str, ...]:
    """The loop variables of ``program`` that some replayed statement reads where no enclosing loop binds
    them (a ``for``'s own bounds are read outside it)."""
    loop_vars = {s.args.var for s, _ in walk(program) if s.op == "for"}
    stale: set[str] = set()

    def visit(stmts: tuple[Stmt, ...], bound: frozenset[str]) -> None:
        for stmt in stmts:
            if id(stmt) in relevant:
                for expr in statement_exprs(stmt):
                    stale.update((expr.names & loop_vars) - bound)
            inner = bound | {stmt.args.var} if stmt.op == "for" else bound
            visit(stmt.body, inner)

    visit(program, frozenset())
    return tuple(sorted(stale))


def _event_tile_window(sched: Schedule, relevant: set[int]) -> int | None:
    """The largest ``c`` of the ``tile - c`` (or ``tile + c``) that the replayed statements read, all of
    them in an ``at:`` of an event barrier's wait or arrive (0: the tile ordinal is not read); None when
    some statement reads it otherwise."""
    window = 0
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if id(stmt) not in relevant:
                continue
            for expr in statement_exprs(stmt):
                if "tile" not in expr.names:
                    continue
                offset = _name_offset(expr.text, "tile")
                on_event = stmt.op in ("wait", "arrive") and getattr(stmt.args, "bar", None) is not None
                if offset is None or expr is stmt.guard or not on_event:
                    return None
                window = max(window, abs(offset))
    return window


def _name_offset(text: str, name: str) -> int | None:
    """``c`` when ``text`` is ``name``, ``name + c``, ``name - c`` or ``c + name`` for an integer ``c``."""
    import ast

    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None

    def is_name(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    def constant(node: ast.AST) -> int | None:
        ok = isinstance(node, ast.Constant) and type(node.value) is int
        return node.value if ok else None  # type: ignore[union-attr]

    if is_name(tree):
        return 0
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, (ast.Add, ast.Sub)):
        if is_name(tree.left) and (c := constant(tree.right)) is not None:
            return c if isinstance(tree.op, ast.Add) else -c
        if isinstance(tree.op, ast.Add) and is_name(tree.right) and (c := constant(tree.left)) is not None:
            return c
    return None


class _Runner:
    """One role replica on one CTA: its sync statements as a generator that yields while it is blocked."""

    def __init__(self, run: _Run, cta: _Cta, role: Any, replica: int) -> None:
        self.run = run
        self.game = run.game
        self.cta = cta
        self.role = role
        self.replica = replica
        self.vars: dict[str, Any] = {**run.game.sched.env, "r": replica, "cta_rank": cta.rank}
        self.loop: dict[str, Any] = {}
        self.frames: list[list[Any]] = []
        """[statement, variable, value, stop] of each ``for`` it is in (a loop jump moves the value)."""
        self.site: Any = None
        self.awaiting: tuple[_Named, int] | None = None
        """The named barrier it waits at and the phase it waits to complete (a loop jump moves both)."""
        """Where it stands: the statement it runs, or (the tile loop, unit) at a unit's start."""
        self.held: dict[str, list[int]] = {}
        self.cursors: dict[str, list[Any]] = {}
        for stmt, _ in walk(role.program):
            if stmt.op == "acquire" and stmt.args.buf in cta.rings and stmt.args.buf not in self.cursors:
                self.cursors[stmt.args.buf] = [0, None]
        self.name = f"{role.name}[{replica}]" if role.replicas > 1 else role.name
        self.blocked_on = "starting"
        self.boundary = -1
        self.jump = 0
        self.gen: Generator[None, None, None] | None = None
        self.moves = 0
        self._dispatch: dict[str, Any] = {}

    def start(self) -> None:
        self.gen = self._program()

    def advance(self) -> bool:
        """Resume until blocked; whether it moved."""
        before = self.game.steps
        try:
            next(self.gen)  # type: ignore[arg-type]
        except StopIteration:
            self.gen = None
            return True
        return self.game.steps != before

    def _program(self) -> Generator[None, None, None]:
        yield from self._block(self.role.program)
        for name in self.game.turnstiles_used[self.role.name]:
            t = self.cta.turnstiles.get(name)
            if t is not None:
                t.done.add(self.replica)
                t.skip_done()
        self.blocked_on = "finished"

    def _eval(self, expr: Any, stmt: Stmt) -> Any:
        return self.game.eval(expr, self.vars, stmt)

    def _count(self, expr: Any, stmt: Stmt, minimum: float = 0, whole: bool = True) -> int:
        return self.game.eval(expr, self.vars, stmt, (minimum, whole))

    def _size(self, expr: Any, stmt: Stmt) -> float:
        return self.game.eval(expr, self.vars, stmt, "size")

    def _block(self, stmts: tuple[Stmt, ...]) -> Generator[None, None, None]:
        game = self.game
        relevant = game.relevant
        dispatch = self._dispatch
        for i, stmt in enumerate(stmts):
            if id(stmt) not in relevant:
                continue
            game.steps += 1
            if game.steps > game.max_steps:
                raise _GiveUp
            if stmt.guard is not None and not game.eval(stmt.guard, self.vars, stmt):
                continue
            op = stmt.op
            self.site = id(stmt)
            if op == "for":
                yield from self._for(stmt)
            elif op == "tiles":
                yield from self._tiles(stmt)
            elif op == "turn":
                yield from self._turn(stmt)
            else:
                self.blocked_on = stmt.where
                run_op = dispatch.get(op)
                if run_op is None:
                    run_op = dispatch[op] = getattr(self, "_" + op)
                yield from run_op(stmt, stmts, i)

    def _for(self, stmt: Stmt) -> Generator[None, None, None]:
        args = stmt.args
        start = self._count(args.start, stmt, -math.inf, True)
        stop = self._count(args.stop, stmt, -math.inf, True)
        frame = [id(stmt), args.var, start, stop]
        self.frames.append(frame)
        while frame[2] < stop:
            self.vars[args.var] = frame[2]
            self.loop[args.var] = frame[2]
            yield from self._block(stmt.body)
            frame[2] += 1
        self.frames.pop()
        self.loop.pop(args.var, None)

    def _tiles(self, stmt: Stmt) -> Generator[None, None, None]:
        args = stmt.args
        every = 1 if args.every is None else self._count(args.every, stmt, 1)
        offset = 0 if args.offset is None else self._count(args.offset, stmt)
        ordinal = 0
        units = self.cta.units
        while ordinal < len(units):
            if ordinal >= self.run.horizon:
                self.boundary = ordinal
                self.blocked_on = f"{stmt.where} (the start of work unit {ordinal})"
                self.site = (id(stmt), ordinal)
                while ordinal >= self.run.horizon:
                    yield
                self.game.steps += 1
                self.boundary = -1
                ordinal = max(ordinal, self.jump)
                if ordinal >= len(units):
                    break
            if ordinal >= offset and (ordinal - offset) % every == 0:
                self.vars.update(units[ordinal])
                self.vars["tile"] = ordinal
                self.loop = {"tile": ordinal}
                yield from self._block(stmt.body)
            ordinal += 1

    def _turn(self, stmt: Stmt) -> Generator[None, None, None]:
        t = self.cta.turnstiles.get(stmt.args.name)
        if t is None:
            raise _GiveUp
        t.skip_done()
        while t.token != self.replica:
            self.blocked_on = f"{stmt.where} (waiting for its turn on '{t.name}', held by replica {t.token})"
            yield
            t.skip_done()
        self.game.steps += 1
        yield from self._block(stmt.body)
        t.token = (self.replica + 1) % t.members
        t.skip_done()

    def _context(self, stmt: Stmt) -> dict[str, Any]:
        ctx = dict(self.loop)
        game = self.game
        for key, expr, moves in game.at_of(stmt):
            if moves:
                ctx[key] = expr(self.vars, where=stmt.where)
            else:  # a loop jump must keep its value, and may not move ``key``
                ctx[key] = game.eval(expr, self.vars, stmt)
                if game.record is not None:
                    game.record[("at", key)] = ()
        return ctx

    # ---- ops -----------------------------------------------------------------------------------------------

    def _acquire(self, stmt: Stmt, stmts: tuple[Stmt, ...], i: int) -> Generator[None, None, None]:
        buf = stmt.args.buf
        ring = self.cta.rings.get(buf)
        if ring is None:
            raise _GiveUp
        cursor = self.cursors[buf]
        expect = 0.0
        if ring.bytes_full:
            for later in self.game.fills_after(stmts, i):
                if later.guard is None or self._eval(later.guard, later):
                    expect += self._size(later.args.bytes, later)
        ctx = self._context(stmt)
        epoch = self.run.epoch
        while not ring.try_open(cursor, ctx, expect, self.run):
            self.blocked_on = f"{stmt.where} (acquire '{buf}': waiting for an empty stage)"
            yield
            if epoch != self.run.epoch:  # a loop jump moved the counters this stage is tagged with
                ctx, epoch = self._context(stmt), self.run.epoch
        self.game.steps += 1

    def _commit(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        ring = self.cta.rings.get(stmt.args.buf)
        cursor = self.cursors.get(stmt.args.buf)
        if ring is None or cursor is None:
            raise _GiveUp  # a commit without an acquire: the simulation refuses it
        if cursor[1] is not None:
            ring.commit(cursor[1])
        return
        yield

    def _wait(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        ctx = self._context(stmt)
        args = stmt.args
        if args.bar is not None:
            event = self.cta.events.get(args.bar)
            if event is None:
                raise _GiveUp
            count, arrivals = event
            tile = ctx.get("tile", 0)
            if tile < 0:
                return
            while arrivals.get((tile,), 0) < count:
                self.blocked_on = f"{stmt.where} (event '{args.bar}' for tile {tile})"
                yield
            self.game.steps += 1
            return
        buf = args.buf
        chunks = self.cta.chunks.get(buf)
        if chunks is not None:
            chunk = 0 if args.chunk is None else self._count(args.chunk, stmt)
            while not chunks.landed(ctx, chunk):
                self.blocked_on = f"{stmt.where} (chunk {chunk} of '{buf}' for {ctx})"
                yield
            self.game.steps += 1
            return
        ring = self.cta.rings.get(buf)
        if ring is None:
            raise _GiveUp
        epoch = self.run.epoch
        while True:
            index = ring.find(ctx, self.run)
            if index is not None:
                self.held.setdefault(buf, []).append(index)
                self.game.steps += 1
                return
            self.blocked_on = f"{stmt.where} (waiting for {ring.describe(ctx)})"
            yield
            if epoch != self.run.epoch:
                ctx, epoch = self._context(stmt), self.run.epoch

    def _release(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        buf = stmt.args.buf
        if buf in self.cta.chunks:
            return
        ring = self.cta.rings.get(buf)
        if ring is None:
            raise _GiveUp
        keep = 0 if stmt.args.keep is None else self._count(stmt.args.keep, stmt)
        held = self.held.setdefault(buf, [])
        while len(held) > keep:
            ring.release(held.pop(0))
        return
        yield

    def _arrive(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        name = stmt.args.bar
        if name in self.cta.named:
            self.cta.named[name].arrive(self.role.warps)
            return
        event = self.cta.events.get(name)
        if event is None:
            raise _GiveUp
        key = (self._context(stmt).get("tile", 0),)
        event[1][key] = event[1].get(key, 0) + 1
        return
        yield

    def _sync(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        barrier = self.cta.named.get(stmt.args.bar)
        if barrier is None:
            raise _GiveUp
        yield from self._phase(barrier, stmt, f"named barrier '{barrier.name}'")

    def _syncthreads(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        assert self.cta.syncthreads is not None
        yield from self._phase(self.cta.syncthreads, stmt, "__syncthreads")

    def _phase(self, barrier: _Named, stmt: Stmt, what: str) -> Generator[None, None, None]:
        self.awaiting = (barrier, barrier.arrive(self.role.warps))
        while barrier.phase <= self.awaiting[1]:
            self.blocked_on = f"{stmt.where} ({what}: {barrier.arrived} of {barrier.warps} warps arrived)"
            yield
        self.awaiting = None
        self.game.steps += 1

    def _tma_load(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        args = stmt.args
        nbytes = self._size(args.bytes, stmt)
        multicast = 1 if args.multicast is None else self._count(args.multicast, stmt, 1)
        operand = args.operand
        receivers = self.cta.peers.get(operand, [self.cta]) if multicast > 1 and operand else [self.cta]
        share = nbytes / multicast
        if args.buf in self.cta.chunks:
            ctx = self._context(stmt)
            if args.chunks is not None:
                lo, hi = (self._count(e, stmt) for e in args.chunks)
            else:
                lo = 0 if args.chunk is None else self._count(args.chunk, stmt)
                hi = lo + 1
            for c in range(lo, hi):
                for r in receivers:
                    r.chunks[args.buf].land(ctx, c)
            return
        self._credit(args.buf, [r.rings[args.buf] for r in receivers], share)
        return
        yield

    def _cp_async(self, stmt: Stmt, *_: Any) -> Generator[None, None, None]:
        buf = stmt.args.buf
        ring = self.cta.rings.get(buf) if buf else None
        if ring is not None and ring.bytes_full:
            self._credit(buf, [ring], self._size(stmt.args.bytes, stmt))  # type: ignore[arg-type]
        return
        yield

    def _credit(self, buf: str, rings: list[_Ring], amount: float) -> None:
        cursor = self.cursors.get(buf)
        if cursor is None or cursor[1] is None:
            raise _GiveUp  # a load before any acquire: the simulation refuses it
        key = self.cta.rings[buf].key[cursor[1]]
        if key is None:
            raise _GiveUp
        for ring in rings:
            ring.credit(key, amount)


# ---- the check --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """What the untimed replay found: the deadlock report (None: none for every timing, or undecided),
    whether it decided, and the statements it executed (a cost that does not depend on the machine)."""

    deadlock: str | None
    decided: bool
    steps: int
    runs: int
    runs_total: int = 0
    """The distinct cluster runs of the plan (0: not known, the replay stopped before counting them)."""
    stopped: Literal["complete", "deadlock", "run_cap", "step_budget", "cannot_follow"] = "complete"
    """Why it ended: ``complete``, ``deadlock``, ``run_cap`` (at ``max_runs``, every run played complete
    and exact: a later replay may resume after them), ``step_budget`` (out of statements in a run) or
    ``cannot_follow`` (an inexact rule or anything it cannot follow: a replay of the same plan stops
    there again)."""

    def worth_repeating(self, max_steps: int) -> bool:
        """Whether a later replay with a total budget of ``max_steps`` statements could decide what this
        one did not: after the run cap, when the statements per run so far times the runs left fit in
        the budget left; after running out of statements, when the budget is larger."""
        if self.decided or self.stopped == "cannot_follow":
            return False
        if self.stopped == "step_budget":
            return max_steps > self.steps
        if not self.runs:
            return True
        left = self.runs_total - self.runs
        return self.steps + self.steps / self.runs * left <= max_steps


def replay(sched: Schedule, arch: Arch, plan: WorkPlan, max_steps: int = MAX_STEPS,
           max_runs: int | None = None, resume: Replay | None = None) -> Replay:  # fmt: skip
    """Replay every distinct cluster run of ``plan`` untimed (see the module docstring), executing at
    most ``max_steps`` statements and ``max_runs`` runs (past either: undecided); never raises.
    ``resume``: an earlier replay of the same plan that stopped at its run cap: its runs are not played
    again and its statements count against ``max_steps``."""
    game = _Game(sched, arch, max_steps)
    start = 0
    if resume is not None and resume.stopped == "run_cap":
        game.steps = resume.steps
        start = resume.runs
    runs = start
    total = 0
    try:
        distinct = list(_distinct_runs(sched, plan))
        total = len(distinct)
        for cunits, classes in distinct[start:]:
            if max_runs is not None and runs >= max_runs:
                return Replay(None, False, game.steps, runs, total, "run_cap")
            run = _Run(game, cunits, classes)
            runs += 1
            blocked = run.play()
            if blocked:
                return Replay(
                    _report(sched, arch, blocked, cunits), True, game.steps, runs, total, "deadlock"
                )
    except Exception:  # an early report only: whatever it cannot follow, the simulation reports
        out_of_steps = game.steps > game.max_steps
        return Replay(
            None, False, game.steps, runs, total, "step_budget" if out_of_steps else "cannot_follow"
        )
    return Replay(None, True, game.steps, runs, total)


def check_untimed(sched: Schedule, arch: Arch, plan: WorkPlan, after_events: int = 0,
                  max_steps: int = MAX_STEPS, max_runs: int | None = None,
                  resume: Replay | None = None) -> Replay:  # fmt: skip
    """Raise DeadlockError when the untimed replay of some cluster's work ends with roles blocked (a
    deadlock for every timing); otherwise return what it found (``decided``: completed, no deadlock for
    any timing). ``after_events``: how many events the simulation ran before calling it (0: before
    simulating), said in the message; ``max_steps`` and ``max_runs``: the replay's budget; ``resume``:
    an earlier replay to continue (:func:`replay`)."""
    found = replay(sched, arch, plan, max_steps, max_runs, resume)
    if found.deadlock is not None:
        message = found.deadlock
        if after_events:
            message = message.replace(
                "found before simulating", f"found after {after_events:,} simulated events", 1
            )
        raise DeadlockError(message)
    return found


def _distinct_runs(sched: Schedule, plan: WorkPlan) -> Iterator[tuple[list[ClusterUnit], list[Any]]]:
    """The cluster runs to replay: each slot list of a persistent kernel (each grid unit of a grid launch)
    whose units differ, by what the replayed statements make of them, from every run before it. The
    runs holding the rarest units come first (a deadlock confined to a few units, such as the grid's
    last, is met in the first runs)."""
    classify = unit_classifier(sched)
    found: dict[tuple, tuple[SlotUnits, int, list[int]]] = {}
    slots_with: dict[int, int] = {}
    for group in plan.groups:
        for slot in group.slots:
            if not slot:
                continue
            classes = classify.of_slot(slot)
            if sched.launch.persistent:
                key = _runs_of(classes)
                if key not in found:
                    found[key] = (slot, -1, classes)
                for c in set(classes):
                    slots_with[c] = slots_with.get(c, 0) + 1
            else:
                for i, c in enumerate(classes):
                    slots_with[c] = slots_with.get(c, 0) + 1
                    if (c,) not in found:
                        found[(c,)] = (slot, i, [c])
    runs = sorted(found.values(), key=lambda run: min(slots_with[c] for c in run[2]))  # stable: plan order
    for slot, index, classes in runs:
        yield (list(slot) if index < 0 else [slot[index]]), classes


def unit_classifier(sched: Schedule) -> UnitClasses:
    """Numbers cluster units (a CTA's unit alone as a 1-tuple) by what the replayed synchronisation
    statements (and the loops, guards and fills around them) make of them: units with one number replay
    alike in every role."""
    return UnitClasses(sched, replayed_statements(sched))


def _runs_of(classes: list[int]) -> tuple:
    out: list[list[int]] = []
    for c in classes:
        if out and out[-1][0] == c:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return tuple(tuple(r) for r in out)


def _report(sched: Schedule, arch: Arch, blocked: list[_Runner], cunits: list[ClusterUnit]) -> str:
    sites: dict[tuple[str, str], list[_Runner]] = {}
    for r in blocked:
        sites.setdefault((r.name, r.blocked_on), []).append(r)
    lines = "; ".join(
        f"{name} (cta {rs[0].cta.rank}"
        + (f", and {len(rs) - 1} more like it" if len(rs) > 1 else "")
        + f") at {site}"
        for (name, site), rs in list(sites.items())[:4]
    )
    more = f" and {len(sites) - 4} more" if len(sites) > 4 else ""
    grid = dict(sched.launch.grid)
    unit = next((r.vars for r in blocked), {})
    where = ", ".join(f"{k}={unit[k]}" for k in grid if k in unit)
    return (
        f"{sched.name} on {arch.id}: deadlock found before simulating (an untimed replay of the synchronisation "
        f"of a cluster's {len(cunits)} work unit(s), blocked in the unit at {where or 'its start'}"
        f"); blocked roles: {lines}{more}"
    )
