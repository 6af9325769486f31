"""Tile schedulers: which work units exist, in what order, and which CTA slot runs which.

A *slot* is one resident cluster position (SMs // cluster_size of them, times CTAs per SM). Slot ``s``
runs its list of cluster units in order; the ``w``-th unit of every slot runs at about the same time
(wave ``w``), which the L2 tile cache uses. Slots whose lists have the same work signature behave
identically and are simulated once, standing for all of them (their *weight*).

Plans are lazy: a slot's units are computed when read, from the cluster order (by arithmetic), the
scheduler's extras and the launch fields (gpusim/sim/unitfields.py), so a plan's memory does not grow
with the problem; grouping the slots reads only the unit names the programs read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from gpusim.arch import Arch
from gpusim.errors import GpusimError, InputError
from gpusim.mechanisms import mechanisms_of
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import names_read, walk
from gpusim.schedule.splitkv import splitkv_balanced_parts
from gpusim.sim.slotcolumns import NotColumnar, SlotColumns
from gpusim.sim.streamk import split_stream_k
from gpusim.sim.unitclasses import UnitClasses
from gpusim.sim.unitfields import Coords, UnitModel

Unit = dict[str, Any]
ClusterUnit = tuple[Unit, ...]
Spec = tuple[Coords, Mapping[str, Any]]
"""A cluster unit before its fields: its cluster coordinate and the scheduler's extras."""
Base = tuple[Coords, Mapping[str, Any], int]
"""A CTA unit before its fields: its coordinates, the scheduler's extras and its rank in the cluster."""


class ClusterOrder(Sequence[Coords]):
    """The cluster grid's coordinates in launch order (raster order and swizzle), computed by index."""

    def __init__(self, sched: Schedule, dims: list[int]) -> None:
        launch = sched.launch
        self.dims = dims
        self.raster = launch.raster
        if len(dims) > 1 and self.raster == "heuristic":
            self.raster = "along_n" if dims[1] > dims[0] else "along_m"
        self.swizzle = launch.swizzle
        self._pairs = dims[0] * dims[1] if len(dims) > 1 else dims[0]
        total = 1
        for d in dims:
            total *= d
        self._len = total

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Coords: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Coords]: ...
    def __getitem__(self, index: int | slice) -> Coords | Sequence[Coords]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        dims = self.dims
        if len(dims) == 1:
            return (index,)
        outer, q = divmod(index, self._pairs)
        d0, d1, s = dims[0], dims[1], self.swizzle
        if self.raster == "as_listed":
            j, i = divmod(q, d0)
        elif self.raster == "along_m":
            stripe, r = divmod(q, d0 * s)
            width = min(s, d1 - stripe * s)
            i, jj = divmod(r, width)
            j = stripe * s + jj
        else:
            stripe, r = divmod(q, d1 * s)
            width = min(s, d0 - stripe * s)
            j, ii = divmod(r, width)
            i = stripe * s + ii
        rest = []
        for extent in dims[2:]:  # the first of the other dimensions varies fastest
            outer, digit = divmod(outer, extent)
            rest.append(digit)
        return (i, j, *rest)

    def coords_array(self, index: np.ndarray) -> np.ndarray:
        """The coordinates at each of ``index`` (in range), one row each: ``self[i]`` over an array."""
        dims = self.dims
        if len(dims) == 1:
            return index.reshape(-1, 1).astype(np.int64)
        outer, q = np.divmod(index.astype(np.int64), self._pairs)
        d0, d1, s = dims[0], dims[1], self.swizzle
        if self.raster == "as_listed":
            j, i = np.divmod(q, d0)
        elif self.raster == "along_m":
            stripe, r = np.divmod(q, d0 * s)
            width = np.minimum(s, d1 - stripe * s)
            i, jj = np.divmod(r, width)
            j = stripe * s + jj
        else:
            stripe, r = np.divmod(q, d1 * s)
            width = np.minimum(s, d0 - stripe * s)
            j, ii = np.divmod(r, width)
            i = stripe * s + ii
        rest = []
        for extent in dims[2:]:
            outer, digit = np.divmod(outer, extent)
            rest.append(digit)
        return np.stack([i, j, *rest], axis=1)


class ClusterShape:
    """The coordinates of each CTA of a cluster from the cluster's (clamped to the grid)."""

    def __init__(self, cluster: tuple[int, int, int], extents: list[int]) -> None:
        self.size = cluster[0] * cluster[1] * cluster[2]
        scale = [cluster[i] if i < 3 else 1 for i in range(len(extents))]
        self.trivial = all(x == 1 for x in scale)
        self._per_rank: list[Callable[[Coords], Coords]] = []
        self._tables: list[list[np.ndarray]] = []
        for rank in range(self.size):
            offs = (rank % cluster[0], (rank // cluster[0]) % cluster[1], rank // (cluster[0] * cluster[1]))
            tables = [
                [min(c * scale[i] + (offs[i] if i < 3 else 0), e - 1) for c in range(-(-e // scale[i]))]
                for i, e in enumerate(extents)
            ]
            self._per_rank.append(_lookup(tables))
            self._tables.append([np.asarray(t, dtype=np.int64) for t in tables])

    def coords(self, ccoord: Coords, rank: int) -> Coords:
        """CTA ``rank``'s grid coordinates in the cluster at ``ccoord``."""
        if self.trivial:
            return ccoord
        return self._per_rank[rank](ccoord)

    def coords_array(self, ccoords: np.ndarray, rank: int) -> np.ndarray:
        """CTA ``rank``'s grid coordinates for each row of cluster coordinates."""
        if self.trivial:
            return ccoords
        tables = self._tables[rank]
        return np.stack([t[ccoords[:, i]] for i, t in enumerate(tables)], axis=1)


def _lookup(tables: list[list[int]]) -> Callable[[Coords], Coords]:
    """Coordinates through one table per dimension."""
    if len(tables) == 2:
        t0, t1 = tables
        return lambda c: (t0[c[0]], t1[c[1]])
    if len(tables) == 3:
        t0, t1, t2 = tables
        return lambda c: (t0[c[0]], t1[c[1]], t2[c[2]])
    return lambda c: tuple([t[x] for t, x in zip(tables, c, strict=True)])


class SlotUnits(Sequence[ClusterUnit]):
    """One slot's cluster units in order, each computed when read (nothing is kept)."""

    def __init__(self, length: int, spec: Callable[[int], Spec], plan: _Maker,
                 extra_of: Callable[[int], Mapping[str, Any]] | None = None,
                 shared_extras: bool = False) -> None:  # fmt: skip
        self._len, self.spec, self._maker, self._extra_of = length, spec, plan, extra_of
        self.shared_extras = shared_extras
        """Whether the extras are objects the plan keeps (one per split or KV segment), not new per unit."""

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> ClusterUnit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ClusterUnit]: ...
    def __getitem__(self, index: int | slice) -> ClusterUnit | Sequence[ClusterUnit]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        return self._maker.cluster(*self.spec(index))

    def specs(self) -> Iterator[Spec]:
        """Each cluster unit's spec, in order."""
        spec = self.spec
        return (spec(i) for i in range(self._len))

    def columns(self) -> SlotColumns:
        """The slot's units as columns over arrays (gpusim/sim/slotcolumns.py); NotColumnar when its
        scheduler does not lay units out by arithmetic."""
        spec = self.spec
        if not isinstance(spec, _RoundRobin):
            raise NotColumnar("not a round-robin slot")
        maker = self._maker
        ccoords, extra_index = spec.arrays(self._len)
        return SlotColumns(
            ccoords, extra_index, spec.extras, maker.shape.coords_array, maker.model, maker.columns
        )

    def extras(self) -> Iterator[Mapping[str, Any]]:
        """Each cluster unit's scheduler extras, in order."""
        if self._extra_of is not None:
            return map(self._extra_of, range(self._len))
        spec = self.spec
        return (spec(i)[1] for i in range(self._len))


class _Maker:
    """Cluster units from specs."""

    def __init__(self, model: UnitModel, shape: ClusterShape) -> None:
        self.model, self.shape = model, shape
        self.columns: dict[Any, Any] = {}
        """What slots' columns share (gpusim/sim/slotcolumns.py)."""

    def cluster(self, ccoord: Coords, extra: Mapping[str, Any]) -> ClusterUnit:
        coords, unit = self.shape.coords, self.model.unit
        return tuple(unit(coords(ccoord, rank), extra, rank) for rank in range(self.shape.size))


@dataclass(frozen=True)
class SmGroup:
    """Identical groups of ``cluster_size`` SMs: one is simulated, standing for ``weight`` of them."""

    index: int
    weight: int
    slots: tuple[SlotUnits, ...]
    """Per CTA position on the SMs (ctas_per_sm of them): that slot's cluster units in order."""


@dataclass(frozen=True)
class WorkPlan:
    """Every slot's work (lazy), the waves for the L2 cache, and the groups to simulate."""

    slot_lists: tuple[SlotUnits, ...]
    groups: tuple[SmGroup, ...]
    num_units: int
    cluster_grid: tuple[int, ...]
    model: UnitModel
    shape: ClusterShape
    dynamic: bool = False
    """Units are handed out at run time (``dynamic_persistent``, or a non-persistent grid whose CTAs the
    hardware dispatches to the slots that free up, with units that differ): every SM group is
    simulated alone, and ``slot_lists`` (the static round-robin order) only give the launch order and the
    waves of the L2 model (the units of one wave are the next ``len(slot_lists)`` of the launch order)."""

    @property
    def num_waves(self) -> int:
        """The longest slot list."""
        return max((len(s) for s in self.slot_lists), default=0)

    @property
    def unit_keys(self) -> frozenset[str]:
        """The names every unit has (none without units)."""
        return self.model.keys if self.num_units else frozenset()

    def wave_bases(self, w: int) -> list[Base]:
        """Every CTA unit that runs as the ``w``-th unit of its slot, before its fields."""
        shape = self.shape
        out: list[Base] = []
        for slot in self.slot_lists:
            if len(slot) > w:
                ccoord, extra = slot.spec(w)
                out.extend((shape.coords(ccoord, rank), extra, rank) for rank in range(shape.size))
        return out

    def wave(self, w: int) -> list[Unit]:
        """Every CTA unit that runs as the ``w``-th unit of its slot."""
        unit = self.model.unit
        return [unit(*base) for base in self.wave_bases(w)]


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


class _RoundRobin:
    """Slot ``slot``'s ``i``-th unit: the ``(slot + i * num_slots)``-th of the launch order, repeated once
    per split-K split (the split's extras)."""

    def __init__(self, order: ClusterOrder, extras: list[dict[str, Any]], slot: int, num_slots: int) -> None:
        self.order, self.extras, self.slot, self.num_slots = order, extras, slot, num_slots

    def __call__(self, i: int) -> Spec:
        split, index = divmod(self.slot + i * self.num_slots, len(self.order))
        return self.order[index], self.extras[split]

    def extra(self, i: int) -> Mapping[str, Any]:
        """The ``i``-th unit's extras."""
        return self.extras[(self.slot + i * self.num_slots) // len(self.order)]

    def arrays(self, length: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``length`` units' cluster coordinates (one row each) and extras indices."""
        flat = self.slot + np.arange(length, dtype=np.int64) * self.num_slots
        split, index = np.divmod(flat, len(self.order))
        return self.order.coords_array(index), split


def plan_work(sched: Schedule, arch: Arch, *, group_identical: bool = True) -> WorkPlan:
    """Lay out units over slots (lazily) and group identical slots (each alone when not ``group_identical``)."""
    launch = sched.launch
    extents = [e for _, e in launch.grid]
    csize = launch.cluster_size
    cdims = [-(-e // (launch.cluster[i] if i < 3 else 1)) for i, e in enumerate(extents)]
    kt = sched.env.get("KT")
    num_groups = arch.sm_count // csize
    if num_groups < 1:
        raise InputError(
            f"{sched.name}: a cluster of {csize} CTAs needs more than the {arch.sm_count} SMs of {arch.id}"
        )
    num_slots = num_groups * launch.ctas_per_sm
    order = ClusterOrder(sched, cdims)
    shape = ClusterShape(launch.cluster, extents)
    if launch.scheduler == "splitkv_balanced":
        specs, extra_keys = _plan_splitkv(sched, order, num_slots)
        make_extra: Callable[[int], Callable[[int], Mapping[str, Any]]] | None = None
        lengths = [len(s) for s in specs]
        make_spec: Callable[[int], Callable[[int], Spec]] = lambda s: specs[s].__getitem__  # noqa: E731
    elif launch.scheduler == "stream_k":
        if kt is None:
            raise InputError(f"{sched.name}: stream_k needs a param KT (k-iterations per tile)")
        lengths, make_spec, extra_keys = _plan_stream_k(order, kt, num_slots, launch.decomposition)
        make_extra = None
    else:
        splits = launch.k_splits
        if splits > 1 and kt is None:
            raise InputError(f"{sched.name}: split_k needs a param KT (k-iterations per tile)")
        extras = [split_k_fields(split, splits, kt) for split in range(splits)]
        total = len(order) * splits
        lengths = [len(range(s, total, num_slots)) for s in range(num_slots)]
        extra_keys = tuple(extras[0])
        make_spec = lambda s: _RoundRobin(order, extras, s, num_slots)  # noqa: E731
        make_extra = lambda s: make_spec(s).extra  # noqa: E731
    model = UnitModel(sched, extra_keys)
    maker = _Maker(model, shape)
    slot_lists = tuple(
        SlotUnits(
            lengths[s],
            make_spec(s),
            maker,
            make_extra(s) if make_extra is not None else None,
            shared_extras=launch.scheduler != "stream_k",
        )
        for s in range(num_slots)
    )
    num_units = sum(lengths) * csize
    groups, alike = _group_slots(sched, model, shape, slot_lists, num_groups, num_units, group_identical)
    # Units that all behave alike run in the same order under a tile counter as under round robin (every
    # CTA ends its units at the same moments; ties go in launch order): the grouped static plan is exact.
    # A non-persistent grid's CTAs are dispatched by the hardware as slots free up, in launch order: the
    # same tile counter, taken when a slot's previous CTA has exited. Used where units differ in the trip
    # counts of their loops (causal attention: a CTA's work grows with its query block), where the static
    # round robin would pile long CTAs onto some slots; units that differ only in sizes (edge tiles) take
    # nearly the same time, and round robin gives them the same order (a 1760x7000x1760 V100 GEMM: 481.07
    # vs 481.09 us) at a third of the cost.
    dynamic = not alike and (
        launch.scheduler == "dynamic_persistent"
        or (
            not launch.persistent
            and "grid_dispatch" in mechanisms_of(arch)
            and _loop_counts_differ(sched, slot_lists)
        )
    )
    if dynamic and group_identical:
        groups, _ = _group_slots(sched, model, shape, slot_lists, num_groups, num_units, False)
    return WorkPlan(slot_lists=slot_lists, groups=groups, num_units=num_units, cluster_grid=tuple(cdims),
                    model=model, shape=shape, dynamic=dynamic)  # fmt: skip


def _loop_counts_differ(sched: Schedule, slot_lists: tuple[SlotUnits, ...]) -> bool:
    """Whether two units of the launch give some loop of the programs different bounds or guards."""
    loops = {id(stmt) for role in sched.roles.values() for stmt, _ in walk(role.program) if stmt.op == "for"}
    if not loops:
        return False
    classes = UnitClasses(sched, loops)
    first = None
    for slot in slot_lists:
        for cunit in slot:
            number = classes(cunit)
            if first is None:
                first = number
            elif number != first:
                return True
    return False


def _plan_stream_k(order: ClusterOrder, kt: int, num_slots: int, decomposition: str) -> tuple[list[int], Callable[[int], Callable[[int], Spec]], tuple[str, ...]]:  # fmt: skip
    """Stream-K (gpusim/sim/streamk.py): a slot runs the pieces of its stream-K unit, if it has one, then
    its share of the data-parallel tiles; every unit carries its k-range and the peers whose partials a
    tile-finishing piece reads."""
    split = split_stream_k(len(order), kt, num_slots, decomposition)
    whole = {"k_begin": 0, "k_end": kt, "k_iters": kt, "is_last_split": 1, "is_first_split": 1, "split": 0,
             "sk_peers": 0}  # fmt: skip
    lengths, pieces_of = [], []
    for s in range(num_slots):
        unit, dp_count = split.slot_units(s)
        pieces = split.unit_pieces(unit) if unit >= 0 else []
        pieces_of.append(pieces)
        lengths.append(len(pieces) + dp_count)

    def make_spec(s: int) -> Callable[[int], Spec]:
        pieces = pieces_of[s]
        n_sk = len(pieces)

        def spec(i: int) -> Spec:
            if i >= n_sk:
                return order[split.dp_tile(s, i - n_sk)], whole
            p = pieces[i]
            extra = {"k_begin": p.k_begin, "k_end": p.k_end, "k_iters": p.k_end - p.k_begin,
                     "is_last_split": int(p.k_end == kt), "is_first_split": int(p.k_begin == 0),
                     "split": int(p.k_begin > 0), "sk_peers": p.peers}  # fmt: skip
            return order[p.tile], extra

        return spec

    return lengths, make_spec, tuple(whole)


def _plan_splitkv(sched: Schedule, order: ClusterOrder, num_slots: int) -> tuple[list[list[Spec]], tuple[str, ...]]:  # fmt: skip
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
    specs: list[list[Spec]] = [[] for _ in range(num_slots)]
    cta = 0
    for part, segs in enumerate(per_part):
        extras = [{"part": part, "batch_idx": seg.request, "block_begin": seg.block_begin,
                   "block_end": seg.block_end, "blocks": seg.block_end - seg.block_begin,
                   "split": seg.split, "n_splits": seg.n_splits, "is_split": int(seg.n_splits > 1),
                   "is_first_split": int(seg.split == 0),
                   "is_last_split": int(seg.split == seg.n_splits - 1)} for seg in segs]  # fmt: skip
        for coord in order:
            specs[cta % num_slots].extend((coord, extra) for extra in extras)
            cta += 1
    keys = ("part", "batch_idx", "block_begin", "block_end", "blocks", "split", "n_splits", "is_split",
            "is_first_split", "is_last_split")  # fmt: skip
    return specs, keys


def _group_slots(sched: Schedule, model: UnitModel, shape: ClusterShape, slot_lists: tuple[SlotUnits, ...],
                 num_groups: int, num_units: int, group_identical: bool) -> tuple[tuple[SmGroup, ...], bool]:  # fmt: skip
    """SM groups whose slots run alike: their units, in order, take the same value of every expression
    the programs read (gpusim/sim/unitclasses.py), and their first clusters share operand panels alike
    (TMA multicast). Only what the programs read can make two slots behave differently; operand keys
    matter otherwise through the per-wave L2 miss fractions, which every slot of a wave shares."""
    launch = sched.launch
    sig_keys = (
        sorted(model.keys & names_read(role.program for role in sched.roles.values())) if num_units else []
    )
    getters = [model.name_getter(k) for k in sig_keys]
    checks = model.per_unit_fields() if num_units else []
    interned: dict[tuple, int] = {}
    per_extra: dict[int, int] = {}  # extras the plan keeps (by identity) -> their signature's id
    ranks = range(shape.size)
    coords_of = shape.coords

    checked = (
        [("field", j) for j, f in enumerate(model.fields) if f.kind in ("memo", "unit")] if checks else []
    )

    statements = {id(s) for role in sched.roles.values() for s, _ in walk(role.program)}
    classes = UnitClasses(sched, statements)
    key_getters = [
        [model.getter(k, sched.env, f"operands.{name}.key") for k in operand.key]
        for name, operand in sched.operands.items()
    ]

    def sharing(slot: SlotUnits) -> tuple:
        """Which CTAs of the slot's first cluster share each operand's panel (what multicast links)."""
        if shape.size == 1 or not slot:
            return ()
        ccoord, extra = slot.spec(0)
        out = []
        for getters_of_key in key_getters:
            keys = [tuple(g(coords_of(ccoord, rank), extra, rank) for g in getters_of_key) for rank in ranks]
            out.append(tuple(keys.index(k) for k in keys))
        return tuple(out)

    def columnar(slot: SlotUnits) -> tuple:
        cols = slot.columns()
        try:
            for rank in ranks:
                for source in checked:
                    cols.source(source, rank)
        except GpusimError as err:  # the unit-by-unit path raises it as the eager plan did
            raise NotColumnar(str(err)) from err
        return ("classes", tuple(classes.columnar(cols)), sharing(slot))

    def by_classes(slot: SlotUnits) -> tuple:
        if slot:
            try:
                return columnar(slot)
            except NotColumnar:
                pass
        # building each unit evaluates every field, raising a field's error as the eager plan did
        return ("classes", tuple(classes(cu) for cu in slot), sharing(slot))

    def signature(slot: SlotUnits) -> tuple:
        if not getters and not checks:
            return ("count", len(slot))
        if by_coords:
            return by_classes(slot)
        # no value differs with the coordinates: the extras decide (one signature per kept extras object)
        out = []
        by_extra = per_extra if slot.shared_extras else None
        for extra in slot.extras():
            if by_extra is not None:
                known = by_extra.get(id(extra))
                if known is not None:
                    out.append(known)
                    continue
            cluster = []
            for rank in ranks:
                try:
                    cluster.append(tuple([g((), extra, rank) for g in getters]))
                    for check in checks:
                        check((), extra, rank)
                except GpusimError:
                    model.raise_eager((), extra, rank)
                    raise
            key = tuple(cluster)
            ident = interned.setdefault(key, len(interned))
            if by_extra is not None:
                by_extra[id(extra)] = ident
            out.append(ident)
        return ("extras", tuple(out))

    if num_units:
        model.touch_fields()  # tabulated and constant fields: evaluated (and their errors raised) now
    # a signature of values that do not differ with the coordinates needs none computed
    by_coords = any(model.name_reads_coords(k) for k in sig_keys) or model.per_unit_reads_coords()
    groups: dict[tuple, list[int]] = {}
    unit_kinds: set[Any] = set()
    for g in range(num_groups):
        positions = [slot_lists[g + p * num_groups] for p in range(launch.ctas_per_sm)]
        if group_identical:
            key: tuple = tuple(signature(s) for s in positions)
            for sig in key:
                unit_kinds |= _unit_kinds(sig)
        else:
            key = (g,)
        groups.setdefault(key, []).append(g)
    sm_groups = []
    for idx, members in enumerate(groups.values()):
        rep = members[0]
        slots = tuple(slot_lists[rep + p * num_groups] for p in range(launch.ctas_per_sm))
        if any(len(s) for s in slots):
            sm_groups.append(SmGroup(index=idx, weight=len(members), slots=slots))
    alike = group_identical and len(unit_kinds) <= 1
    return tuple(sm_groups), alike


def _unit_kinds(signature: tuple) -> frozenset[Any]:
    """The distinct behaviours of the units of one slot's signature (``_group_slots``)."""
    if signature[0] == "count":  # no name the programs read differs between units
        return frozenset({"count"}) if signature[1] else frozenset()
    if signature[0] == "classes":
        return frozenset((unit, signature[2]) for unit in signature[1])
    return frozenset(signature[1])
