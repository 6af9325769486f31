"""An L2 that caches tensor panels, keyed by operand and tile coordinates.

Units of one wave run together, so a panel that several of them read is fetched from HBM once (the
others hit). Between waves the L2 keeps panels in LRU order up to its capacity. An ``interleaved``
operand's panels are read together front to back by readers that are not in step (repeated-read
microbenchmarks), so a wave that overflows the L2 is a cyclic scan under LRU: it keeps none of them,
and every read of the wave misses. The result is, per
wave and operand, the fraction of the bytes the kernel reads that come from HBM: raster order,
swizzle and K/V sharing across heads change it the way they change HBM traffic on hardware.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from gpusim.schedule.ir import Schedule
from gpusim.sim.scheduler import WorkPlan


def panel_miss_fractions(
    sched: Schedule, plan: WorkPlan, l2_bytes: float, multicast: dict[str, int] | None = None
) -> list[dict[str, float]]:
    """For each wave, operand name -> fraction of its L2 reads that come from HBM (the rest hit).

    With TMA multicast over ``n`` CTAs each CTA reads ``1/n`` of a panel from L2, so the L2 reads of
    a wave are the panel uses divided by ``n``. Units are read wave by wave, one wave at a time
    (the keys and sizes through the plan's getters: nothing per unit is kept).
    """
    multicast = multicast or {}
    cache: OrderedDict[tuple[Any, ...], float] = OrderedDict()
    used_bytes = 0.0
    result: list[dict[str, float]] = []
    env = dict(sched.env)
    model = plan.model
    read: frozenset[str] = frozenset()
    for operand in sched.operands.values():
        read = read.union(operand.bytes.names, *(k.names for k in operand.key))
    static = {n: env[n] for n in read if n in env}  # what the keys and sizes read, not the whole env
    known = static.keys() | model.keys
    unknown = [(name, expr) for name, operand in sched.operands.items() for expr in (*operand.key, operand.bytes)
               if not expr.names <= known]  # fmt: skip
    getters = [
        (name, [model.getter(k, static, f"operands.{name}.key") for k in operand.key],
         model.getter(operand.bytes, static, f"operands.{name}.bytes"))
        for name, operand in sched.operands.items()
    ]  # fmt: skip
    if not getters:  # no operands: nothing to cache
        return [{} for _ in range(plan.num_waves)]
    for w in range(plan.num_waves):
        bases = plan.wave_bases(w)
        fractions: dict[str, float] = {}
        if unknown and bases:  # a name neither has: the full env's error message
            first = model.unit(*bases[0])
            for name, expr in unknown:
                expr({**env, **first}, where=f"operands.{name}")
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
            total = sum(uses[k] * sizes[k] for k in uses) / max(1, multicast.get(name, 1))
            missing = 0.0
            for key, size in sizes.items():
                if key in cache:
                    cache.move_to_end(key)
                else:
                    missing += size
                    cache[key] = size
                    used_bytes += size
            if operand.interleaved and used_bytes > l2_bytes:
                # A cyclic scan of interleaved panels under LRU: none survives, and readers of the same
                # panel, not in step, do not share it either: every read misses.
                missing = total
                for key in sizes:
                    used_bytes -= cache.pop(key)
            while used_bytes > l2_bytes and cache:
                _, size = cache.popitem(last=False)
                used_bytes -= size
            fractions[name] = min(1.0, missing / total) if total > 0 else 1.0
        result.append(fractions)
    return result
