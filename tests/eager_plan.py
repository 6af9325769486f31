"""The eager work plan and L2 miss fractions as gpusim built them before plans became lazy: a copy of
gpusim/sim/scheduler.py and of gpusim/sim/l2cache.py's ``panel_miss_fractions`` at commit 626e2c9,
the reference that tests/test_lazy_plan.py compares the lazy plan with (every unit built in memory)."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import GpusimError, InputError
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import walk
from gpusim.schedule.splitkv import splitkv_balanced_parts

Unit = dict[str, Any]
ClusterUnit = tuple[Unit, ...]


class ExprMemo:
    """Values of expressions by the values of the names they read: a unit field or an operand key that
    reads only ``m_block`` is evaluated once per ``m_block``, not once per unit (expressions are pure)."""

    def __init__(self) -> None:
        self._names: dict[Any, tuple[str, ...]] = {}
        self._values: dict[tuple, Any] = {}

    def __call__(self, expr: Any, env: dict[str, Any], where: str) -> Any:
        """``expr(env, where=where)``, remembered."""
        names = self._names.get(expr)
        if names is None:
            names = self._names[expr] = tuple(sorted(expr.names))
        get = env.get
        key = (expr, *[get(n) for n in names])
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            value = expr(env, where=where)
            if len(self._values) >= _MEMO_ENTRIES:
                self._values.clear()
            self._values[key] = value
        return value


_MISSING = object()
_MEMO_ENTRIES = 65_536


@dataclass(frozen=True)
class SmGroup:
    """Identical groups of ``cluster_size`` SMs: one is simulated, standing for ``weight`` of them."""

    index: int
    weight: int
    slots: tuple[tuple[ClusterUnit, ...], ...]
    """Per CTA position on the SMs (ctas_per_sm of them): that slot's cluster units in order."""


@dataclass(frozen=True)
class WorkPlan:
    """Every slot's work, the waves for the L2 cache, and the groups to simulate."""

    slot_lists: tuple[tuple[ClusterUnit, ...], ...]
    groups: tuple[SmGroup, ...]
    num_units: int
    cluster_grid: tuple[int, ...]

    @property
    def num_waves(self) -> int:
        """The longest slot list."""
        return max((len(s) for s in self.slot_lists), default=0)

    def wave(self, w: int) -> list[Unit]:
        """Every CTA unit that runs as the ``w``-th unit of its slot."""
        return [u for s in self.slot_lists if len(s) > w for u in s[w]]


def _ordered_cluster_coords(sched: Schedule, dims: list[int]) -> list[tuple[int, ...]]:
    launch = sched.launch
    if len(dims) == 1:
        return [(i,) for i in range(dims[0])]
    d0, d1, rest = dims[0], dims[1], dims[2:]
    raster = launch.raster
    if raster == "heuristic":
        raster = "along_n" if d1 > d0 else "along_m"
    s = launch.swizzle
    if raster == "as_listed":
        pairs = [(i, j) for j in range(d1) for i in range(d0)]
    elif raster == "along_m":
        pairs = [
            (i, j)
            for stripe in range(0, d1, s)
            for i in range(d0)
            for j in range(stripe, min(stripe + s, d1))
        ]
    else:
        pairs = [
            (i, j)
            for stripe in range(0, d0, s)
            for j in range(d1)
            for i in range(stripe, min(stripe + s, d0))
        ]
    outer = list(itertools.product(*[range(r) for r in reversed(rest)]))
    return [(i, j, *reversed(o)) for o in outer for i, j in pairs]


def _program_names(sched: Schedule) -> set[str]:
    names: set[str] = set()
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.guard is not None:
                names |= stmt.guard.names
            for value in stmt.args.values():
                items = (
                    value
                    if isinstance(value, tuple)
                    else value.values()
                    if isinstance(value, dict)
                    else [value]
                )
                for item in items:
                    names |= getattr(item, "names", frozenset())
    return names


def _plan_splitkv(sched: Schedule, arch: Arch, order: list[tuple[int, ...]], cluster_members: Any,
                  slot_lists: list[list[ClusterUnit]]) -> None:  # fmt: skip
    """Each grid coordinate (e.g. m-block x kv-head) runs ``parts`` CTAs; CTA ``p`` walks part ``p``'s
    segments. Per-request KV block counts come from the param ``KV_BLOCKS`` (blocks per request) and
    the problem's ``batch``."""
    launch = sched.launch
    env = sched.env
    if launch.cluster_size != 1:
        raise InputError(f"{sched.name}: splitkv_balanced needs cluster [1, 1, 1]")
    if "KV_BLOCKS" not in env or "batch" not in env:
        raise InputError(f"{sched.name}: splitkv_balanced needs a problem 'batch' and a param 'KV_BLOCKS'")
    parts = launch.parts or 1
    per_part = splitkv_balanced_parts(
        [int(env["KV_BLOCKS"])] * int(env["batch"]), parts, launch.fixed_overhead_blocks
    )
    num_slots = len(slot_lists)
    cta = 0
    for part, segs in enumerate(per_part):
        for coord in order:
            for seg in segs:
                extra = {"part": part, "batch_idx": seg.request, "block_begin": seg.block_begin,
                         "block_end": seg.block_end, "blocks": seg.block_end - seg.block_begin,
                         "split": seg.split, "n_splits": seg.n_splits, "is_split": int(seg.n_splits > 1),
                         "is_first_split": int(seg.split == 0),
                         "is_last_split": int(seg.split == seg.n_splits - 1)}  # fmt: skip
                slot_lists[cta % num_slots].append(cluster_members(coord, extra))
            cta += 1


def split_k_fields(split: int, splits: int, kt: int | None) -> dict[str, Any]:
    """The fields a split-K unit carries: its split index and flags, and (with ``kt`` k-iterations per
    tile) its share ``k_begin .. k_end`` of the k-loop."""
    extra: dict[str, Any] = {"split": split, "is_last_split": int(split == splits - 1),
                             "is_first_split": int(split == 0)}  # fmt: skip
    if kt is not None:
        per = -(-kt // splits)
        k0, k1 = split * per, min(kt, (split + 1) * per)
        extra.update(k_begin=k0, k_end=k1, k_iters=k1 - k0)
    return extra


def eager_plan_work(sched: Schedule, arch: Arch, *, group_identical: bool = True) -> WorkPlan:
    """Build units, assign them to slots and group identical slots (each alone when not ``group_identical``)."""
    launch = sched.launch
    cluster = launch.cluster
    dim_names = [d for d, _ in launch.grid]
    extents = [e for _, e in launch.grid]
    csize = launch.cluster_size
    cdims = [-(-e // (cluster[i] if i < 3 else 1)) for i, e in enumerate(extents)]
    env = dict(sched.env)
    kt = env.get("KT")
    memo = ExprMemo()
    field_where = {name: f"{sched.name}: launch.fields.{name}" for name in launch.fields}

    read = frozenset().union(*(expr.names for expr in launch.fields.values()))
    static = {n: env[n] for n in read if n in env}  # the env the fields read, not all of it per unit

    def make_unit(coords: tuple[int, ...], extra: dict[str, Any]) -> Unit:
        unit: Unit = dict(zip(dim_names, coords, strict=True))
        unit.update(extra)
        local = dict(static)
        local.update(unit)
        for name, expr in launch.fields.items():
            try:
                unit[name] = memo(expr, local, field_where[name])
            except GpusimError:
                expr({**env, **unit}, where=field_where[name])  # the error names every known symbol
                raise
            local[name] = unit[name]
        return unit

    def cluster_members(ccoord: tuple[int, ...], extra: dict[str, Any]) -> ClusterUnit:
        members = []
        for rank in range(csize):
            offs = (rank % cluster[0], (rank // cluster[0]) % cluster[1], rank // (cluster[0] * cluster[1]))
            coords = tuple(
                min(c * (cluster[i] if i < 3 else 1) + (offs[i] if i < 3 else 0), extents[i] - 1)
                for i, c in enumerate(ccoord)
            )
            members.append(make_unit(coords, {**extra, "cta_rank": rank}))
        return tuple(members)

    num_groups = arch.sm_count // csize
    if num_groups < 1:
        raise InputError(
            f"{sched.name}: a cluster of {csize} CTAs needs more than the {arch.sm_count} SMs of {arch.id}"
        )
    num_slots = num_groups * launch.ctas_per_sm
    order = _ordered_cluster_coords(sched, cdims)
    slot_lists: list[list[ClusterUnit]] = [[] for _ in range(num_slots)]

    if launch.scheduler == "splitkv_balanced":
        _plan_splitkv(sched, arch, order, cluster_members, slot_lists)
    elif launch.scheduler == "stream_k":
        if kt is None:
            raise InputError(f"{sched.name}: stream_k needs a param KT (k-iterations per tile)")
        _plan_stream_k(launch.decomposition, order, kt, num_slots, cluster_members, slot_lists)
    else:
        splits = launch.splits if launch.scheduler == "split_k" else 1
        if splits > 1 and kt is None:
            raise InputError(f"{sched.name}: split_k needs a param KT (k-iterations per tile)")
        units: list[ClusterUnit] = []
        for split in range(splits):
            extra = split_k_fields(split, splits, kt)
            units.extend(cluster_members(c, extra) for c in order)
        for i, cu in enumerate(units):
            slot_lists[i % num_slots].append(cu)

    used = _program_names(sched)
    # Only what the programs read can make two slots behave differently (operand keys matter through the
    # per-wave L2 miss fractions, which every slot of a wave shares).
    sig_keys = sorted({k for s in slot_lists for cu in s for u in cu for k in u} & used)

    def signature(slot: list[ClusterUnit]) -> tuple:
        return tuple(tuple(tuple(u.get(k) for k in sig_keys) for u in cu) for cu in slot)

    groups: dict[tuple, list[int]] = {}
    for g in range(num_groups):
        positions = [slot_lists[g + p * num_groups] for p in range(launch.ctas_per_sm)]
        key = tuple(signature(s) for s in positions) if group_identical else (g,)
        groups.setdefault(key, []).append(g)
    sm_groups = []
    for idx, members in enumerate(groups.values()):
        rep = members[0]
        slots = tuple(tuple(slot_lists[rep + p * num_groups]) for p in range(launch.ctas_per_sm))
        if any(slots):
            sm_groups.append(SmGroup(index=idx, weight=len(members), slots=slots))
    return WorkPlan(
        slot_lists=tuple(tuple(s) for s in slot_lists),
        groups=tuple(sm_groups),
        num_units=sum(len(s) * csize for s in slot_lists),
        cluster_grid=tuple(cdims),
    )


def eager_miss_fractions(
    sched: Schedule, plan: WorkPlan, l2_bytes: float, multicast: dict[str, int] | None = None
) -> list[dict[str, float]]:
    """For each wave, operand name -> fraction of its L2 reads that come from HBM (the rest hit).

    With TMA multicast over ``n`` CTAs each CTA reads ``1/n`` of a panel from L2, so the L2 reads of
    a wave are the panel uses divided by ``n``.
    """
    multicast = multicast or {}
    cache: OrderedDict[tuple[Any, ...], float] = OrderedDict()
    used_bytes = 0.0
    result: list[dict[str, float]] = []
    env = dict(sched.env)
    memo = ExprMemo()
    read: frozenset[str] = frozenset()
    for operand in sched.operands.values():
        read = read.union(operand.bytes.names, *(k.names for k in operand.key))
    static = {n: env[n] for n in read if n in env}  # what the keys and sizes read, not the whole env
    for w in range(plan.num_waves):
        units = plan.wave(w)
        fractions: dict[str, float] = {}
        locals_ = [{**static, **unit} for unit in units]
        for name, operand in sched.operands.items():  # a name neither has: the full env's error message
            for expr in (*operand.key, operand.bytes):
                if units and not expr.names <= locals_[0].keys():
                    expr({**env, **units[0]}, where=f"operands.{name}")
        for name, operand in sched.operands.items():
            uses: dict[tuple[Any, ...], int] = {}
            sizes: dict[tuple[Any, ...], float] = {}
            key_where, bytes_where = f"operands.{name}.key", f"operands.{name}.bytes"
            for local in locals_:
                key = (name, *(memo(k, local, key_where) for k in operand.key))
                uses[key] = uses.get(key, 0) + 1
                if key not in sizes:
                    sizes[key] = float(memo(operand.bytes, local, bytes_where))
            total = sum(uses[k] * sizes[k] for k in uses) / max(1, multicast.get(name, 1))
            missing = 0.0
            for key, size in sizes.items():
                if key in cache:
                    cache.move_to_end(key)
                else:
                    missing += size
                    cache[key] = size
                    used_bytes += size
            while used_bytes > l2_bytes and cache:
                _, size = cache.popitem(last=False)
                used_bytes -= size
            fractions[name] = min(1.0, missing / total) if total > 0 else 1.0
        result.append(fractions)
    return result


def _plan_stream_k(mode: str, order: list, kt: int, num_slots: int, cluster_members: Any,
                   slot_lists: list[list[ClusterUnit]]) -> None:  # fmt: skip
    """CUTLASS's stream-K decomposition written out eagerly: which tiles are stream-K, every unit's k
    share (boundaries snapped to tile edges within 8 k-tiles), its pieces walked backwards, then the
    data-parallel tiles by work-unit index."""
    tiles, min_iters = len(order), 8
    full, waves = tiles // num_slots, -(-tiles // num_slots)
    tail = tiles - full * num_slots
    quantized = full != waves and kt > min_iters and mode != "data_parallel"
    sk_tiles = tiles - max(full - 1, 0) * num_slots if quantized else 0
    if mode == "heuristic" and 2 * tail >= num_slots:
        sk_tiles = 0
    sk_units = min(num_slots, sk_tiles * kt // min_iters)
    if sk_units == 0:
        sk_tiles = 0
    owner = []  # k-space position -> the stream-K unit that computes it
    if sk_units:
        total = sk_tiles * kt
        starts = [u * (total // sk_units) + min(u, total % sk_units) for u in range(sk_units)] + [total]
        for u in range(1, sk_units):
            k = starts[u] % kt
            if 0 < k < min_iters:
                starts[u] -= k
            elif k > kt - min_iters:
                starts[u] += kt - k
        for u in range(sk_units):
            owner += [u] * (starts[u + 1] - starts[u])
    units = []  # work-unit index -> its cluster units, in the order the unit computes them
    for u in range(sk_units):
        mine = [pos for pos in range(len(owner)) if owner[pos] == u]
        pieces = []
        for tile in sorted({pos // kt for pos in mine}, reverse=True):
            ks = [pos - tile * kt for pos in mine if pos // kt == tile]
            k0, k1 = min(ks), max(ks) + 1
            peers = len({owner[tile * kt + k] for k in range(k0)}) if k1 == kt and k0 > 0 else 0
            extra = {"k_begin": k0, "k_end": k1, "k_iters": k1 - k0, "is_last_split": int(k1 == kt),
                     "is_first_split": int(k0 == 0), "split": int(k0 > 0), "sk_peers": peers}  # fmt: skip
            pieces.append(cluster_members(order[tile], extra))
        units.append(pieces)
    whole = {"k_begin": 0, "k_end": kt, "k_iters": kt, "is_last_split": 1, "is_first_split": 1, "split": 0,
             "sk_peers": 0}  # fmt: skip
    units += [[cluster_members(order[tile], whole)] for tile in range(sk_tiles, tiles)]
    for index, pieces in enumerate(units):
        slot_lists[index % num_slots].extend(pieces)
