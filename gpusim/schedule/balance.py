"""Producers against consumers, per work unit: deadlocks a schedule guarantees, found before simulating.

A consumer's ``wait`` takes the stage whose loop tag (``tile``, ``k``, ...) matches its own; a stage
is filled once, by the producers' ``acquire`` with that tag, and once every consumer of the tile has
released it, that tag is gone for good. So, for real work units (the corners, edges and middle of the
grid), replaying only the synchronisation statements of the role programs (loops, guards, ``acquire``,
``wait``, ``release``, ``arrive``, ``sync``) with the unit's fields, without simpy, shows what no
timing can satisfy:

- a wait for a stage of a ring that no role fills in the unit (a consumer that waits more times per
  tile than the producers fill, a producer loop one short, a ring fed only under a guard that is
  false for this problem);
- a wait for a stage that its only consumer has already released;
- a wait on an event barrier for its own tile when fewer arrivals come per tile than its count;
- a stage filled every tile that the consumers cannot release as often as the ring expects: its slot
  stays full for good, and a CTA that runs enough units brings its producer round to it (the units per
  CTA follow from the arch's SMs, as the tile scheduler deals them);
- a named barrier or ``__syncthreads`` whose warps over a CTA's whole kernel are not a multiple of the
  barrier's count (roles of one size that divides it): its last phase never completes (typically after
  the last tile).

The cost is one unit's loops, whatever the problem size. Whatever the replay cannot pin down it leaves
to the simulator, which reports every deadlock: statements whose loops, guards or stage tags read the
tile ordinal, ring or barrier statements outside the tiles loop of a persistent kernel, roles whose
replicas split the tiles other than evenly, per-CTA counts that depend on the unit (causal attention),
stream-K and split-KV work plans, chunked buffers, turnstiles, barriers with non-blocking arrivals,
deadlocks that depend on the order of events, and units whose loops exceed a step budget. Many of
those are then named, still before any event is simulated, by the untimed replay of each cluster's
work (gpusim/sim/untimed.py).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import DeadlockError, GpusimError
from gpusim.schedule.ir import Role, Schedule
from gpusim.schedule.program import Stmt, walk
from gpusim.sim.scheduler import split_k_fields
from gpusim.sim.untimed import unit_classifier

MAX_REPLAY_STEPS = 100_000
"""Statements the replay may execute over all sampled units before it gives up and says nothing."""
MAX_SAMPLED_UNITS = 256
"""Cluster units sampled from the grid (its corners, edges and middle along every dimension)."""
_SYNC_OPS = frozenset({"acquire", "commit", "wait", "release", "arrive", "sync", "syncthreads"})
SYNCTHREADS = "__syncthreads"
"""The name the CTA-wide barrier goes by in reports."""
_TILE = 0
"""The tile ordinal a unit is replayed at (no replayed expression may read it)."""


class _GiveUp(Exception):
    """The replay cannot be exact (a step budget, an unevaluable expression): say nothing."""


def _whole(value: Any) -> int:
    """``int(value)`` for a finite number (the simulation reports anything else with its path)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value != value
        or abs(value) == float("inf")
    ):
        raise _GiveUp
    return int(value)


@dataclass(frozen=True, slots=True)
class _Op:
    """One synchronisation statement executed by a replayed role replica."""

    op: str
    """acquire, wait, release, arrive, wait_event."""
    name: str
    stmt: Stmt
    tag: dict[str, Any] | None
    """The loop context (with ``at:`` applied); None when it cannot be known statically."""
    in_tiles: bool
    keep: int = 0


@dataclass
class _Replica:
    """What one role replica does in one unit."""

    role: str
    replica: int
    ops: list[_Op] = field(default_factory=list)
    _by_name: dict[str, list[_Op]] | None = None

    def on(self, name: str) -> list[_Op]:
        """The ops on ring or barrier ``name``, in order."""
        if self._by_name is None:
            self._by_name = {}
            for op in self.ops:
                self._by_name.setdefault(op.name, []).append(op)
        return self._by_name.get(name, [])


def check_balance(sched: Schedule, arch: Arch | None = None) -> frozenset[str]:
    """Raise DeadlockError for a wait that no timing can satisfy in some real work unit (and, given the
    arch, which sets how many units each CTA runs, for a named barrier whose last phase never fills);
    say nothing where the schedule is too dynamic to replay exactly. Returns the rings and barriers it
    could check (for tests and reports)."""
    units = _sample_cluster_units(sched)
    if not units:
        return frozenset()
    replay = _Replayer(sched)
    replay.classify = unit_classifier(sched)
    if arch is not None:
        replay.unit_counts = _units_per_cta(sched, arch)
    checked: set[str] | None = None
    try:
        for cunit in units:
            names = _check_cluster_unit(sched, replay, cunit)
            checked = names if checked is None else checked & names
        if arch is not None:
            checked = (checked or set()) | _check_barrier_phases(sched, arch, replay, units[0])
    except _GiveUp:
        return frozenset()
    except (LookupError, ArithmeticError, TypeError, ValueError, RecursionError):
        return frozenset()  # an early report only: whatever the replay cannot follow, the simulation reports
    return frozenset(checked or ())


# ---- work units ---------------------------------------------------------------------------------------


def _sample_points(extent: int) -> list[int]:
    return sorted({p for p in (0, 1, extent // 2, extent - 2, extent - 1) if 0 <= p < extent})


def _sample_cluster_units(sched: Schedule) -> list[tuple[dict[str, Any], ...]]:
    """Real cluster units of the work plan (as gpusim/sim/scheduler.py builds them) at the corners,
    edges and middle of the cluster grid, for every split kind; none for arch-dependent plans."""
    launch = sched.launch
    if launch.scheduler in ("stream_k", "splitkv_balanced"):
        return []
    names = [d for d, _ in launch.grid]
    extents = [e for _, e in launch.grid]
    cluster = launch.cluster
    cdims = [-(-e // (cluster[i] if i < 3 else 1)) for i, e in enumerate(extents)]
    env = dict(sched.env)
    kt = env.get("KT")
    splits = launch.k_splits
    if splits > 1 and kt is None:
        return []
    extras = []
    for split in _sample_points(splits):
        extras.append(split_k_fields(split, splits, kt))
    coords = itertools.islice(itertools.product(*(_sample_points(c) for c in cdims)), MAX_SAMPLED_UNITS)
    out = []
    for ccoord, extra in itertools.product(list(coords), extras):
        members = []
        for rank in range(launch.cluster_size):
            offs = (rank % cluster[0], (rank // cluster[0]) % cluster[1], rank // (cluster[0] * cluster[1]))
            unit: dict[str, Any] = {
                name: min(c * (cluster[i] if i < 3 else 1) + (offs[i] if i < 3 else 0), extents[i] - 1)
                for i, (name, c) in enumerate(zip(names, ccoord, strict=True))
            }
            unit.update(extra, cta_rank=rank)
            local = {**env, **unit}
            try:
                for fname, expr in launch.fields.items():
                    unit[fname] = local[fname] = expr(local)
            except GpusimError:
                return []  # the simulation reports the field's error with its path
            members.append(unit)
        out.append(tuple(members))
    return out


# ---- replay -----------------------------------------------------------------------------------------------


def _holds_sync(stmt: Stmt) -> bool:
    if stmt.op in _SYNC_OPS:
        return True
    return any(_holds_sync(s) for s in stmt.body)


class _Replayer:
    """Replays role programs' synchronisation statements for one unit (memoised by what they read)."""

    def __init__(self, sched: Schedule) -> None:
        self.sched = sched
        self.steps = 0
        self.memo: dict[tuple, _Replica] = {}
        self.plans: dict[int, _SyncPlan] = {}
        self.reads: dict[str, tuple[str, ...]] = {}
        self.relevant: dict[str, tuple[Stmt, ...]] = {}
        self.unit_counts: set[int] = set()
        """How many units the CTAs run (empty: unknown, without the arch)."""
        self.dependent = _unit_dependent_names(sched)
        self.classify: Callable[[tuple[dict[str, Any], ...]], int] | None = None
        """Numbers units by what the replayed statements make of them (gpusim/sim/unitclasses.py): units with
        one number replay alike, whatever else of them differs (a guard true in one unit only)."""
        self.seen: dict[tuple, set[str]] = {}
        """Names checked for each combination of replays already checked (units that replay alike)."""
        self.producers = {b: _roles_with(sched, b, ("acquire", "commit")) for b in sched.buffers}
        self.consumers = {b: _roles_with(sched, b, ("wait", "release")) for b in sched.buffers}
        self.holding = {
            id(s) for role in sched.roles.values() for s, _ in walk(role.program) if _holds_sync(s)
        }
        """The statements that are, or hold, synchronisation statements (the rest is never replayed)."""
        for role in sched.roles.values():
            self.relevant[role.name] = tuple(s for s in role.program if id(s) in self.holding)
            self.reads[role.name] = tuple(sorted(_names_read(self.relevant[role.name], self.holding)))

    def run(self, role: Role, replica: int, rank: int, unit: dict[str, Any] | None) -> _Replica:
        """What ``role``'s ``replica`` does on CTA ``rank`` when its tiles loop runs ``unit`` (None: runs
        no unit)."""
        local = {**self.sched.env, "r": replica, "cta_rank": rank, **(unit or {})}
        if unit is not None and self.classify is not None:
            key: tuple = (role.name, replica, rank, "class", self.classify((unit,)))
        else:
            key = (role.name, replica, unit is None, *(local.get(n) for n in self.reads[role.name]))
        done = self.memo.get(key)
        if done is not None:
            return done
        out = _Replica(role.name, replica)
        state = _State(vars={**self.sched.env, "r": replica, "cta_rank": rank}, unit=unit, out=out)
        self._block(self.relevant[role.name], state)
        self.memo[key] = out
        return out

    def _eval(self, expr: Any, state: _State) -> Any:
        if "tile" in expr.names:
            raise _GiveUp
        try:
            return expr(state.vars)
        except GpusimError:
            raise _GiveUp from None

    def _int(self, expr: Any, state: _State) -> int:
        """A loop bound or count, a whole number as the interpreter requires (anything else: give up, and
        the simulation reports it with its path)."""
        value = self._eval(expr, state)
        if isinstance(value, float) and value != value // 1:
            raise _GiveUp
        return _whole(value)

    def _block(self, stmts: tuple[Stmt, ...], state: _State) -> None:
        for stmt in stmts:
            if id(stmt) not in self.holding:
                continue
            self.steps += 1
            if self.steps > MAX_REPLAY_STEPS:
                raise _GiveUp
            if stmt.guard is not None and not self._eval(stmt.guard, state):
                continue
            op = stmt.op
            if op == "tiles":
                if state.unit is not None:
                    state.vars.update(state.unit)
                    state.vars["tile"] = _TILE
                    state.loop = {"tile": _TILE}
                    state.in_tiles += 1
                    self._block(stmt.body, state)
                    state.in_tiles -= 1
            elif op == "for":
                self._for(stmt, state)
            elif op == "turn":
                self._block(stmt.body, state)
            elif op in _SYNC_OPS:
                self._sync(stmt, state)

    def _for(self, stmt: Stmt, state: _State) -> None:
        args = stmt.args
        start, stop = self._int(args.start, state), self._int(args.stop, state)
        if stop - start > MAX_REPLAY_STEPS:
            raise _GiveUp
        for value in range(start, stop):
            state.vars[args.var] = state.loop[args.var] = value
            self._block(stmt.body, state)
        state.loop.pop(args.var, None)

    def _sync(self, stmt: Stmt, state: _State) -> None:
        plan = self.plans.get(id(stmt))
        if plan is None:
            plan = self.plans[id(stmt)] = _SyncPlan.of(stmt)
        tag: dict[str, Any] | None = None
        if not plan.names_tile:
            tag = dict(state.loop)
            for key, expr in plan.at:
                tag[key] = self._eval(expr, state)
        keep = 0
        if plan.keep is not None:
            keep = self._int(plan.keep, state)
            if keep < 0:
                raise _GiveUp  # the simulation refuses it with the statement's path
        state.out.ops.append(_Op(plan.op, plan.name, stmt, tag, state.in_tiles > 0, keep))


@dataclass(frozen=True, slots=True)
class _SyncPlan:
    """What replaying one synchronisation statement needs, read once from its typed arguments."""

    op: str
    name: str
    at: tuple[tuple[str, Any], ...]
    names_tile: bool
    """Its ``at:`` sets or reads the tile ordinal (the stage it names cannot be known statically)."""
    keep: Any

    @staticmethod
    def of(stmt: Stmt) -> _SyncPlan:
        args = stmt.args
        op = stmt.op
        at = tuple(args.at.items()) if op in ("wait", "arrive") else ()
        if op == "wait" and args.bar is not None:
            op, name = "wait_event", args.bar
        elif op in ("arrive", "sync"):
            name = args.bar
        elif op == "syncthreads":
            name = SYNCTHREADS
        else:
            name = args.buf
        names_tile = any(key == "tile" or "tile" in expr.names for key, expr in at)
        keep = args.keep if op == "release" else None
        return _SyncPlan(op, name, at, names_tile, keep)


@dataclass
class _State:
    vars: dict[str, Any]
    unit: dict[str, Any] | None
    out: _Replica
    loop: dict[str, Any] = field(default_factory=dict)
    in_tiles: int = 0


def _names_read(stmts: tuple[Stmt, ...], holding: set[int]) -> set[str]:
    names: set[str] = set()
    for stmt in stmts:
        if id(stmt) not in holding:
            continue
        if stmt.guard is not None:
            names |= stmt.guard.names
        args = stmt.args
        if stmt.op == "for":
            names |= args.start.names | args.stop.names
        if stmt.op == "tiles":
            names |= {n for e in (args.every, args.offset) if e is not None for n in e.names}
        for expr in getattr(args, "at", {}).values():
            names |= expr.names
        if stmt.op == "release" and args.keep is not None:
            names |= args.keep.names
        names |= _names_read(stmt.body, holding)
    return names


# ---- which replicas run a unit ------------------------------------------------------------------------------


def _tile_filters(sched: Schedule, role: Role, rank: int) -> list[tuple[int, int]] | None:
    """(every, offset) of each replica's tiles loop (as the engine reads it); None if not evaluable."""
    loops = [s for s, _ in walk(role.program) if s.op == "tiles"]
    if len(loops) > 1:
        return None
    tiles = loops[0] if loops else None
    filters = []
    for replica in range(role.replicas):
        env = {**sched.env, "r": replica, "cta_rank": rank}
        if tiles is None:
            filters.append((1, 0))
            continue
        try:
            every = 1 if tiles.args.every is None else _whole(tiles.args.every(env))
            offset = 0 if tiles.args.offset is None else _whole(tiles.args.offset(env))
        except (GpusimError, _GiveUp):
            return None
        if every < 1 or offset < 0:
            return None
        filters.append((every, offset))
    return filters


def _runners(sched: Schedule, role: Role, rank: int) -> tuple[list[tuple[int, bool]], bool] | None:
    """(each replica replayed and whether its tiles loop runs the unit, whether exactly one of them runs
    it); None when the replicas' tile filters do not split the units evenly (the check then says nothing
    about the role)."""
    filters = _tile_filters(sched, role, rank)
    if filters is None:
        return None
    if not sched.launch.persistent:  # one unit per CTA, at ordinal 0
        return [(r, offset == 0) for r, (_, offset) in enumerate(filters)], False
    if all(f == (1, 0) for f in filters):
        return [(r, True) for r in range(role.replicas)], False
    every = filters[0][0]
    if all(e == every for e, _ in filters) and sorted(o for _, o in filters) == list(range(every)):
        return [(r, True) for r in range(role.replicas)], True
    return None


def _runs_on(role: Role, rank: int, pair: bool) -> bool:
    return role.cta == "all" or not pair or rank % 2 == 0


# ---- the checks -------------------------------------------------------------------------------------------


@dataclass
class _RoleRun:
    """A role on the CTAs that share a ring or barrier: what each candidate replica does in the unit."""

    role: Role
    runs: list[_Replica]
    exactly_one: bool
    """Exactly one of ``runs`` runs the unit (replicas taking turns); else each of them does."""
    takes: list[bool]
    """Whether each of ``runs`` runs the unit in its tiles loop."""


def _check_cluster_unit(sched: Schedule, replay: _Replayer, cunit: tuple[dict[str, Any], ...]) -> set[str]:
    pair = sched.launch.cta_pair
    per_rank: list[list[_RoleRun] | None] = []
    for rank, unit in enumerate(cunit):
        runs: list[_RoleRun] | None = []
        for role in sched.roles.values():
            if not _runs_on(role, rank, pair):
                continue
            runners = _runners(sched, role, rank)
            if runners is None:
                runs = None
                break
            replicas, exactly_one = runners
            replayed = [replay.run(role, r, rank, unit if takes else None) for r, takes in replicas]
            runs.append(_RoleRun(role, replayed, exactly_one, [takes for _, takes in replicas]))
        per_rank.append(runs)
    alike = tuple(None if runs is None else tuple(id(r) for rr in runs for r in rr.runs) for runs in per_rank)
    if alike in replay.seen:
        return replay.seen[alike]
    where = ", ".join(f"{k}={v}" for k, v in cunit[0].items() if k in dict(sched.launch.grid))
    checked: set[str] = set()
    for name, buf in sched.buffers.items():
        if not buf.has_protocol or buf.consumer == "manual":
            continue
        shared = buf.scope == "pair" and pair
        exact = True
        for rank in range(0, len(cunit), 2 if shared else 1):
            ranks = [rank, rank + 1] if shared and rank + 1 < len(cunit) else [rank]
            groups = [per_rank[k] for k in ranks]
            if any(g is None for g in groups):
                exact = False
                continue
            runs = [rr for g in groups for rr in g]  # type: ignore[union-attr]
            exact = _check_ring(sched, replay, name, buf.consumer == "umma", runs, where) and exact
            _check_leak(sched, replay, name, runs)
        if exact:
            checked.add(name)
    for name, bar in sched.barriers.items():
        if bar.kind != "event":
            continue
        exact = all(runs is not None for runs in per_rank)
        for runs in per_rank:
            if runs is not None:
                exact = _check_event(sched, name, max(1, bar.count), runs, where) and exact
        if exact:
            checked.add(name)
    replay.seen[alike] = checked
    return checked


def _ops(run: _Replica, names: tuple[str, ...], name: str) -> list[_Op]:
    return [o for o in run.on(name) if o.op in names]


def _dynamic(ops: list[_Op], persistent: bool) -> bool:
    return any(o.tag is None or (persistent and not o.in_tiles) for o in ops)


def _check_ring(sched: Schedule, replay: _Replayer, name: str, deferred_release: bool, runs: list[_RoleRun],
                where: str) -> bool:  # fmt: skip
    """Refuse a wait on ring ``name`` that no producer fill can satisfy in this unit; False when the
    ring's statements are too dynamic to tell."""
    persistent = sched.launch.persistent
    touching = [rr for rr in runs if any(_ops(r, ("acquire", "wait", "release"), name) for r in rr.runs)]
    if any(_dynamic(_ops(r, ("acquire", "wait", "release"), name), persistent) for rr in touching
           for r in rr.runs):  # fmt: skip
        return False
    producers = [rr for rr in runs if rr.role.name in replay.producers[name]]
    consumers = [rr for rr in runs if rr.role.name in replay.consumers[name]]
    if any(_commits_first(r, name) for rr in producers for r in rr.runs):
        return False  # the simulation refuses a commit without an acquire, a clearer report than a deadlock
    filled: dict[tuple, set[tuple]] = {}
    fills: dict[str, int] = {}
    once = True
    for rr in producers:
        for r in rr.runs:
            tags = [_key(o.tag) for o in _ops(r, ("acquire",), name)]  # type: ignore[arg-type]
            once = once and len(set(tags)) == len(tags)
            for tag in tags:
                filled.setdefault(tuple(k for k, _ in tag), set()).add(tag)
            fills[rr.role.name] = max(fills.get(rr.role.name, 0), len(tags))
    releasers = sum(1 if rr.exactly_one else len(rr.runs) for rr in consumers)
    track_frees = releasers == 1 and once and not deferred_release
    for rr in consumers:
        failures = [_first_unsatisfied(r, name, filled, track_frees) for r in rr.runs]
        hit = [f for f in failures if f is not None]
        if not hit or (rr.exactly_one and len(hit) < len(failures)):
            continue
        run, op, why = hit[0]
        waits = len(_ops(run, ("wait",), name))
        filling = (
            ", ".join(f"role {p} fills it {n} times per tile" for p, n in fills.items()) or "no role fills it"
        )
        stage = {k: v for k, v in op.tag.items() if k != "tile"}  # type: ignore[union-attr]
        raise DeadlockError(
            f"{sched.name}: deadlock found before simulating: ring '{name}': role {rr.role.name} waits "
            f"{waits} times per tile, {filling}; at {op.stmt.where} it waits for stage {stage} of the tile, "
            f"which {why}, so role {rr.role.name} blocks there forever (unit {where})"
        )
    return True


def _check_leak(sched: Schedule, replay: _Replayer, name: str, runs: list[_RoleRun]) -> None:
    """Refuse ring ``name`` if every unit leaves a stage that its consumers cannot release as often as the
    ring expects (a producer that fills more than the consumers take): that ring slot is never free again,
    and a CTA with enough units brings its producer round to it, where it blocks forever."""
    producers = [rr for rr in runs if rr.role.name in replay.producers[name]]
    consumers = [rr for rr in runs if rr.role.name in replay.consumers[name]]
    if not replay.unit_counts or not producers or any(rr.exactly_one for rr in producers):
        return
    if any(replay.dependent & set(replay.reads[rr.role.name]) for rr in producers + consumers):
        return  # what a unit does may differ between the units of a CTA
    sequences = [[_key(o.tag) for o in _ops(r, ("acquire",), name)] for rr in producers for r in rr.runs]  # type: ignore[arg-type]
    fills = sequences[0]
    if not fills or any(s != fills for s in sequences):
        return
    expected = max(1, sum(1 if rr.exactly_one else sum(rr.takes) for rr in consumers))
    keysets = {tuple(k for k, _ in tag) for tag in fills}
    taking = [(rr.exactly_one, [_wait_counts(r, name, keysets) for r in rr.runs]) for rr in consumers]
    copies = Counter(fills)
    leaked = []
    for tag, n in copies.items():
        releases = 0  # at most one per wait that can take a stage with this tag
        for exactly_one, counts in taking:
            waits = [c[tag] for c in counts]
            releases += max(waits) if exactly_one else sum(waits)
        if releases < n * expected:
            leaked.append(tag)
    stages = sched.buffers[name].stages
    units = max(replay.unit_counts)
    if not leaked or (units - 1) * len(fills) < stages:
        return
    producer = producers[0].role.name
    takers = ", ".join(sorted({rr.role.name for rr in consumers})) or "no role"
    stage = {k: v for k, v in leaked[0] if k != "tile"}
    raise DeadlockError(
        f"{sched.name}: deadlock found before simulating: ring '{name}': role {producer} fills it {len(fills)} "
        f"times per tile, but {len(leaked)} of those stages (the first {stage}) are never released by {takers}; "
        f"each stays full for good, so a CTA that runs {units} work units runs out of the ring's {stages} "
        f"stages and role {producer} blocks forever in acquire"
    )


def _commits_first(run: _Replica, name: str) -> bool:
    """Whether ``run`` commits ring ``name`` before it has acquired any stage of it."""
    first = next((o.op for o in _ops(run, ("acquire", "commit"), name)), None)
    return first == "commit"


def _wait_counts(run: _Replica, name: str, keysets: set[tuple]) -> Counter[tuple]:
    """How many of ``run``'s waits on ring ``name`` can take a stage with each tag (projected on the keys
    the stages are tagged with)."""
    counts: Counter[tuple] = Counter()
    for op in _ops(run, ("wait",), name):
        for keys in keysets:
            counts[tuple((k, op.tag.get(k, _MISSING)) for k in keys)] += 1  # type: ignore[union-attr]
    return counts


def _first_unsatisfied(run: _Replica, name: str, filled: dict[tuple, set[tuple]], track_frees: bool
                       ) -> tuple | None:  # fmt: skip
    """The first wait of ``run`` on ring ``name`` that no filled stage (tags by their keys) satisfies."""
    held: list[tuple] = []
    freed: set[tuple] = set()
    for op in run.on(name):
        if op.op == "wait":
            matches = []
            for keys, tags in filled.items():
                tag = tuple((k, op.tag.get(k, _MISSING)) for k in keys)  # type: ignore[union-attr]
                if tag in tags:
                    matches.append(tag)
            if not matches:
                return run, op, "no role fills"
            if track_frees and len(matches) == 1 and matches[0] in freed:
                return run, op, "it already released (a freed stage is never filled again)"
            held.append(matches[0] if len(matches) == 1 else ())
        elif op.op == "release":
            while len(held) > op.keep:
                freed.add(held.pop(0))
    return None


_MISSING = object()


def _key(tag: dict[str, Any]) -> tuple:
    return tuple(sorted(tag.items()))


def _roles_with(sched: Schedule, buf: str, ops: tuple[str, ...]) -> set[str]:
    return {
        r.name
        for r in sched.roles.values()
        if any(s.op in ops and getattr(s.args, "buf", None) == buf for s, _ in walk(r.program))
    }


def _check_event(sched: Schedule, name: str, count: int, runs: list[_RoleRun], where: str) -> bool:
    """Refuse a wait on event barrier ``name`` for its own tile when fewer than ``count`` arrivals come per
    tile; False when the arrivals are too dynamic to count."""
    persistent = sched.launch.persistent
    arrivals = 0
    for rr in runs:
        per_run = []
        for r in rr.runs:
            ops = _ops(r, ("arrive",), name)
            if _dynamic(ops, persistent):
                return False
            per_run.append(len(ops))
        arrivals += max(per_run, default=0) if rr.exactly_one else sum(per_run)
    if arrivals >= count:
        return True
    for rr in runs:
        failures = []
        for r in rr.runs:
            waits = [o for o in _ops(r, ("wait_event",), name) if o.tag is not None]
            waits = [o for o in waits if o.in_tiles or not persistent]
            failures.append(waits[0] if waits else None)
        hit = [f for f in failures if f is not None]
        if not hit or (rr.exactly_one and len(hit) < len(failures)):
            continue
        raise DeadlockError(
            f"{sched.name}: deadlock found before simulating: event barrier '{name}' completes a tile after "
            f"{count} arrivals, but the roles arrive {arrivals} times per tile; role {rr.role.name} waits for "
            f"it at {hit[0].stmt.where} and blocks there forever (unit {where})"
        )
    return True


# ---- named barriers: phases per CTA -------------------------------------------------------------------------


def _units_per_cta(sched: Schedule, arch: Arch) -> set[int]:
    """How many work units the CTAs of the work plan run (gpusim/sim/scheduler.py deals the cluster units
    round-robin over the resident cluster slots; a grid launch runs one unit per CTA)."""
    launch = sched.launch
    if not launch.persistent:
        return {1}
    total = launch.k_splits
    for i, (_, extent) in enumerate(launch.grid):
        total *= -(-extent // (launch.cluster[i] if i < 3 else 1))
    slots = arch.sm_count // launch.cluster_size * launch.ctas_per_sm
    if slots < 1:
        return set()
    fewer, more = divmod(total, slots)
    return ({fewer + 1} if more else set()) | ({fewer} if fewer else set())


def _unit_dependent_names(sched: Schedule) -> set[str]:
    """Names whose values may differ between the units of one CTA: the grid coordinates, the split, and
    the fields that read them (a field of problem sizes alone is the same in every unit)."""
    launch = sched.launch
    names = {d for d, _ in launch.grid} | {"tile"}
    if launch.k_splits > 1:
        names |= {"split", "is_last_split", "is_first_split", "k_begin", "k_end", "k_iters"}
    for name, expr in launch.fields.items():
        if expr.names & names:
            names.add(name)
    return names


def _check_barrier_phases(sched: Schedule, arch: Arch, replay: _Replayer, cunit: tuple[dict[str, Any], ...]
                          ) -> set[str]:  # fmt: skip
    """A named barrier (or ``__syncthreads``) completes a phase each ``warps`` warps; when roles of equal
    warp counts that divide it bring, over a CTA's whole kernel, a number of warps that is not a multiple
    of it, the last phase never completes and the syncs in it block forever (typically after the last
    tile). Roles of different sizes can overshoot a phase, so their totals say nothing."""
    counts = replay.unit_counts
    dependent = replay.dependent
    barriers = {name: bar.warps for name, bar in sched.barriers.items() if bar.kind == "named"}
    users = [r for r in sched.roles.values() if any(s.op == "syncthreads" for s, _ in walk(r.program))]
    if users:
        barriers[SYNCTHREADS] = max(1, sum(r.warps * r.replicas for r in users))
    checked = set()
    for name, warps in barriers.items():
        if all(_phase_balance(sched, replay, name, warps, rank, unit, counts, dependent)
               for rank, unit in enumerate(cunit)):  # fmt: skip
            checked.add(name)
    return checked


def _phase_balance(sched: Schedule, replay: _Replayer, name: str, warps: int, rank: int, unit: dict[str, Any],
                   counts: set[int], dependent: set[str]) -> bool:  # fmt: skip
    """Refuse barrier ``name`` on CTA ``rank`` if its arrivals leave a phase unfinished; False when they
    depend on the unit or include non-blocking arrivals (nothing can be said)."""
    brought = []  # (role, replica, warps, syncs outside the tiles loop, syncs per unit, every, offset)
    for role in sched.roles.values():
        if not _runs_on(role, rank, sched.launch.cta_pair):
            continue
        uses = any(_names_barrier(s, name) for s, _ in walk(role.program))
        if not uses:
            continue
        filters = _tile_filters(sched, role, rank)
        if filters is None or dependent & set(replay.reads[role.name]):
            return False
        for replica, (every, offset) in enumerate(filters):
            ops = [o for o in replay.run(role, replica, rank, unit).on(name) if o.op != "wait_event"]
            if any(o.op == "arrive" for o in ops):
                return False
            per_unit = sum(1 for o in ops if o.in_tiles)
            brought.append((role.name, replica, role.warps, len(ops) - per_unit, per_unit, every, offset))
    sizes = {w for _, _, w, _, _, _, _ in brought}
    if len(sizes) != 1 or warps % next(iter(sizes)):
        return False  # an arrival that overshoots a phase carries warps no sync waits for: only totals of
        # equal arrivals that divide the barrier's count tell whether the last phase has a waiter
    for n in sorted(counts):
        syncs = [(role, rep, w, once + per_unit * len(range(offset, n, every)))
                 for role, rep, w, once, per_unit, every, offset in brought]  # fmt: skip
        total = sum(w * k for _, _, w, k in syncs)
        if total % warps:
            who = ", ".join(f"{role}{f'[{rep}]' if sched.roles[role].replicas > 1 else ''} syncs {k} times "
                            f"with {w} warps" for role, rep, w, k in syncs)  # fmt: skip
            kind = "__syncthreads" if name == SYNCTHREADS else f"named barrier '{name}'"
            raise DeadlockError(
                f"{sched.name}: deadlock found before simulating: {kind} completes a phase every {warps} warps, "
                f"but a CTA that runs {n} work units brings it {total} warps ({who}), not a multiple of "
                f"{warps}: its last phase never completes, so the roles that sync in it block forever"
            )
    return True


def _names_barrier(stmt: Stmt, name: str) -> bool:
    if stmt.op == "syncthreads":
        return name == SYNCTHREADS
    return stmt.op in ("sync", "arrive") and stmt.args.bar == name
