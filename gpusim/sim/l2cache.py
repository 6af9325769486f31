"""An L2 that caches tensor panels, keyed by operand and tile coordinates.

Units of one wave run together, so a panel that several of them read is fetched from HBM once (the
others hit). Between waves the L2 keeps panels in LRU order up to its capacity. An ``interleaved``
operand's panels are read together front to back by readers that are not in step (repeated-read
microbenchmarks), so a wave that overflows the L2 is a cyclic scan under LRU: it keeps none of them,
and every read of the wave misses. A ``resident`` operand (written by the previous kernel of the stream)
starts in the L2 when all of it fits. The result is, per
wave and operand, the fraction of the bytes the kernel reads that come from HBM: raster order,
swizzle and K/V sharing across heads change it the way they change HBM traffic on hardware.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from gpusim.errors import GpusimError
from gpusim.schedule.ir import Schedule
from gpusim.sim.scheduler import WorkPlan
from gpusim.sim.slotcolumns import NotColumnar, combined_codes


class WaveMisses:
    """Per wave, operand name -> miss fraction, computed wave by wave as the simulation first asks (the
    LRU state runs front to back, so wave ``w`` computes every wave before it once): a prediction that
    stops early (its work limit) never pays for the waves it did not reach. Indexed by wave, 0 to
    ``len - 1``."""

    def __init__(self, waves: Iterator[dict[str, float]], count: int) -> None:
        self._waves = waves
        self._count = count
        self._done: list[dict[str, float]] = []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, wave: int) -> dict[str, float]:
        if not 0 <= wave < self._count:
            raise IndexError(wave)
        while len(self._done) <= wave:
            self._done.append(next(self._waves))
        return self._done[wave]


def panel_misses(
    sched: Schedule, plan: WorkPlan, l2_bytes: float, multicast: dict[str, int] | None = None
) -> tuple[WaveMisses, float]:
    """For each wave, operand name -> fraction of its L2 reads that come from HBM (the rest hit).

    With TMA multicast over ``n`` CTAs each CTA reads ``1/n`` of a panel from L2, so the L2 reads of
    a wave are the panel uses divided by ``n``. The keys and sizes come from the slots' columns where
    the plan has them, else unit by unit through the plan's getters, one wave at a time. The second
    result is the bytes of the ``resident`` operands' panels the L2 starts with (0 when they do not fit).
    """
    multicast = multicast or {}
    cache: OrderedDict[tuple[Any, ...], float] = OrderedDict()
    used_bytes = 0.0
    env = dict(sched.env)
    model = plan.model
    read: frozenset[str] = frozenset()
    for operand in sched.operands.values():
        read = read.union(operand.bytes.names, *(k.names for k in operand.key))
    static = {n: env[n] for n in read if n in env}  # what the keys and sizes read, not the whole env
    known = static.keys() | model.keys
    unknown = [(name, expr) for name, operand in sched.operands.items() for expr in (*operand.key, operand.bytes)
               if not expr.names <= known]  # fmt: skip
    values = [
        (name, [model.derived(k, static, f"operands.{name}.key") for k in operand.key],
         model.derived(operand.bytes, static, f"operands.{name}.bytes"))
        for name, operand in sched.operands.items()
    ]  # fmt: skip
    if not values:  # no operands: nothing to cache
        return WaveMisses(iter([{}] * plan.num_waves), plan.num_waves), 0.0
    panels: Any = None if unknown else _panels_by_column(plan, values)
    if panels is None:
        getters = [(name, [k.getter() for k in keys], size.getter()) for name, keys, size in values]
        panels = _panels_by_unit(sched, plan, env, getters, unknown)
    resident = {name for name, operand in sched.operands.items() if operand.resident}
    if resident:
        panels = list(panels)
        used_bytes = _seed_resident(cache, panels, resident, l2_bytes)
    misses = WaveMisses(
        _wave_fractions(sched, panels, cache, used_bytes, l2_bytes, multicast), plan.num_waves
    )
    if len(misses):
        misses[0]  # the first wave now: an operand key naming an unknown value fails before simulating
    return misses, used_bytes


def _wave_fractions(sched: Schedule, panels: Iterable[Panels], cache: OrderedDict[tuple[Any, ...], float],
                    used_bytes: float, l2_bytes: float, multicast: dict[str, int]) -> Iterator[dict[str, float]]:  # fmt: skip
    """The miss fractions of each wave in turn, through an LRU ``cache`` holding ``used_bytes``."""
    for wave in panels:
        fractions: dict[str, float] = {}
        for name, keys, uses, sizes in wave:
            total = sum(u * z for u, z in zip(uses, sizes, strict=True)) / max(1, multicast.get(name, 1))
            missing = 0.0
            for key, size in zip(keys, sizes, strict=True):
                if key in cache:
                    cache.move_to_end(key)
                else:
                    missing += size
                    cache[key] = size
                    used_bytes += size
            if sched.operands[name].interleaved and used_bytes > l2_bytes:
                # A cyclic scan of interleaved panels under LRU: none survives, and readers of the same
                # panel, not in step, do not share it either: every read misses.
                missing = total
                for key in keys:
                    used_bytes -= cache.pop(key)
            while used_bytes > l2_bytes and cache:
                _, size = cache.popitem(last=False)
                used_bytes -= size
            fractions[name] = min(1.0, missing / total) if total > 0 else 1.0
        yield fractions


def _seed_resident(cache: OrderedDict[tuple[Any, ...], float], panels: list[Panels], resident: set[str],
                   l2_bytes: float) -> float:  # fmt: skip
    """Put the panels of the ``resident`` operands (left in L2 by the previous kernel) in ``cache``, in
    the order they are first read, when all of them fit in ``l2_bytes``; returns the bytes cached."""
    first: dict[tuple[Any, ...], float] = {}
    for wave in panels:
        for name, keys, _uses, sizes in wave:
            if name in resident:
                for key, size in zip(keys, sizes, strict=True):
                    first.setdefault(key, size)
    total = sum(first.values())
    if total > l2_bytes:
        return 0.0
    cache.update(first)
    return total


Panels = list[tuple[str, list[Any], list[int], list[float]]]
"""One wave's reads per operand: its panels in the order first read, how many units read each, and
each one's size (as its first reader gives it)."""


def _panels_by_unit(sched: Schedule, plan: WorkPlan, env: dict[str, Any], getters: list[Any],
                    unknown: list[tuple[str, Any]]) -> Iterator[Panels]:  # fmt: skip
    model = plan.model
    for w in range(plan.num_waves):
        bases = plan.wave_bases(w)
        if unknown and bases:  # a name neither has: the full env's error message
            first = model.unit(*bases[0])
            for name, expr in unknown:
                expr({**env, **first}, where=f"operands.{name}")
        wave: Panels = []
        for name, key_getters, size_getter in getters:
            uses: dict[tuple[Any, ...], int] = {}
            sizes: dict[tuple[Any, ...], float] = {}
            for coords, extra, rank in bases:
                key = (name, *[g(coords, extra, rank) for g in key_getters])
                count = uses.get(key)
                if count is None:
                    uses[key] = 1
                    sizes[key] = float(size_getter(coords, extra, rank))
                else:
                    uses[key] = count + 1
            wave.append((name, list(uses), list(uses.values()), list(sizes.values())))
        yield wave


def _panels_by_column(plan: WorkPlan, values: list[tuple[str, list[Any], Any]]) -> list[Panels] | None:
    """The same reads, from each slot's columns (gpusim/sim/slotcolumns.py); ``values`` holds each
    operand's key and size expressions (``UnitModel.derived``). None where a slot has no columns (or a
    value cannot be computed over them: the unit-by-unit path then reports its error)."""
    ranks = plan.shape.size
    waves = plan.num_waves
    slots = [s for s in plan.slot_lists if len(s)]
    rows = len(slots) * ranks
    per_operand = []
    try:
        slot_cols = [slot.columns() for slot in slots]
        for o, (name, keys, size) in enumerate(values):
            key_ids = np.full((rows, waves), -1, dtype=np.int64)
            sizes = np.zeros((rows, waves), dtype=np.float64)
            ids = _PanelIds(o)
            for s, (slot, cols) in enumerate(zip(slots, slot_cols, strict=True)):
                n = len(slot)
                for rank in range(ranks):
                    row = s * ranks + rank
                    key_ids[row, :n] = ids.of([cols.of(k, rank) for k in keys], cols)
                    size_col = cols.of(size, rank)
                    sizes[row, :n] = np.array([float(v) for v in size_col.values], dtype=np.float64)[
                        size_col.codes
                    ]
            per_operand.append((name, key_ids, sizes))
    except (NotColumnar, GpusimError, TypeError, ValueError, OverflowError):
        return None
    out: list[Panels] = [[] for _ in range(waves)]
    for name, key_ids, sizes in per_operand:
        for w, (keys, uses, first_sizes) in enumerate(_first_read_order(key_ids, sizes)):
            out[w].append((name, keys, uses, first_sizes))
    return out


class _PanelIds:
    """One operand's panel keys as integers, one per distinct key tuple (a range of its own per operand):
    by arithmetic over codes where every key column's values are kept for the whole plan, else interned."""

    def __init__(self, operand: int) -> None:
        self.base = operand << 48
        self.interned: dict[tuple[Any, ...], int] = {}

    def of(self, key_cols: list[Any], cols: Any) -> np.ndarray:
        if not key_cols:
            return np.full(cols.length, self.base, dtype=np.int64)
        if all(cols.is_kept(c) for c in key_cols):
            radix = 1
            for c in key_cols:
                radix *= max(1, len(c.values))
            if radix < 1 << 46:
                out = np.zeros(cols.length, dtype=np.int64)
                for c in key_cols:
                    out = out * max(1, len(c.values)) + c.codes
                return out + self.base
        first, combo = combined_codes(key_cols)
        table = np.array([self.interned.setdefault(tuple(c.at(i) for c in key_cols), len(self.interned))
                          for i in first.tolist()], dtype=np.int64)  # fmt: skip
        return table[combo] + self.base + (1 << 47)


def _first_read_order(
    key_ids: np.ndarray, sizes: np.ndarray
) -> Iterator[tuple[list[int], list[int], list[float]]]:
    """Per wave (a column of ``key_ids``; -1: no unit), its distinct keys in the order of first reading
    (row order), how many rows read each, and the size in the row that reads it first."""
    rows, waves = key_ids.shape
    flat_keys = key_ids.T.reshape(-1)  # wave-major, rows in order
    flat_sizes = sizes.T.reshape(-1)
    position = np.arange(flat_keys.size, dtype=np.int64)
    valid = flat_keys >= 0
    wave = position[valid] // max(1, rows)
    keys, position = flat_keys[valid], position[valid]
    order = np.lexsort((position, keys, wave))  # by wave, then key, then first reader
    wave, keys, position = wave[order], keys[order], position[order]
    starts = np.ones(keys.size, dtype=bool)
    starts[1:] = (wave[1:] != wave[:-1]) | (keys[1:] != keys[:-1])
    group_start = np.flatnonzero(starts)
    counts = np.diff(np.append(group_start, keys.size))
    g_wave, g_key, g_pos = wave[group_start], keys[group_start], position[group_start]
    by_read = np.lexsort((g_pos, g_wave))  # within a wave, in order of first reading
    g_wave, g_key, g_pos, counts = g_wave[by_read], g_key[by_read], g_pos[by_read], counts[by_read]
    bounds = np.searchsorted(g_wave, np.arange(waves + 1))
    all_keys, all_counts, all_sizes = g_key.tolist(), counts.tolist(), flat_sizes[g_pos].tolist()
    for w in range(waves):
        a, b = bounds[w], bounds[w + 1]
        yield all_keys[a:b], all_counts[a:b], all_sizes[a:b]
