"""How fast mma.sync runs with the warps an SM holds (engine-fidelity G5).

A warp issues mma.sync from its own sub-partition (SMSP); one warp per SMSP cannot issue m16n8k16s fast
enough to keep its quarter of the tensor core busy, even with independent accumulator chains, and the
rate climbs with the warps per SMSP that issue (measured on H200: 48% of the peak with one, 81% with
two, 97% with four; data/measurements/micro_h200_20261204.csv). The arch's
``tensor_cores.mma_sync.rate_by_warps_per_smsp`` holds the measured fractions; the engine applies the
fraction for a static count of the warps the schedule keeps resident on an SM (every role that issues
mma.sync, times the CTAs resident together); with the ``mma_sync_issuing`` mechanism (and the shared
tensor core, ``SharedTensorCore.sync_rate``), per sub-partition for the warps whose mma.sync is in flight
at each moment (FA2's warps alternate between their GEMMs and the softmax, so the other CTA's warps often
issue alone).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from pydantic import BaseModel

from gpusim.arch import Arch
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import walk


def rate_fraction(table: Mapping[int, float], warps_per_smsp: float) -> float:
    """The fraction of the peak for ``warps_per_smsp`` issuing warps: linear between the measured counts,
    the fewest's value below them (a sub-partition with any warp holds at least one), the most's above."""
    counts = sorted(table)
    if warps_per_smsp <= counts[0]:
        return table[counts[0]]
    for low, high in itertools.pairwise(counts):
        if warps_per_smsp <= high:
            t = (warps_per_smsp - low) / (high - low)
            return table[low] + t * (table[high] - table[low])
    return table[counts[-1]]


class WarpRate:
    """``rate_fraction`` of one table, for the whole warp counts a sub-partition holds (memoised: the
    engine asks it at every change of the mma.sync jobs in flight)."""

    def __init__(self, table: Mapping[int, float]) -> None:
        self.table = dict(table)
        self._memo: dict[float, float] = {}

    def __call__(self, warps_per_smsp: float) -> float:
        value = self._memo.get(warps_per_smsp)
        if value is None:
            value = self._memo[warps_per_smsp] = rate_fraction(self.table, warps_per_smsp)
        return value


def mma_sync_warps_per_cta(sched: Schedule) -> int:
    """Warps of one CTA whose roles issue mma.sync."""
    return sum(
        role.warps * role.replicas
        for role in sched.roles.values()
        if any(stmt.op == "mma" and stmt.args.get("unit") == "mma_sync" for stmt, _ in walk(role.program))
    )


def resident_ctas_per_sm(sched: Schedule, arch: Arch) -> int:
    """CTAs an SM holds together: the launch's ``ctas_per_sm``, fewer when the grid does not fill every SM
    that many times."""
    units = sched.launch.num_units * sched.launch.k_splits
    return max(1, min(sched.launch.ctas_per_sm, math.ceil(units / arch.sm_count)))


def mma_sync_fraction(sched: Schedule, arch: Arch) -> float:
    """The fraction of the arch's mma.sync rate ``sched`` reaches on one SM (1 when the arch has no
    table or the schedule issues no mma.sync)."""
    table = arch.tensor_cores.mma_sync.rate_by_warps_per_smsp
    warps = mma_sync_warps_per_cta(sched)
    if not table or not warps:
        return 1.0
    per_smsp = warps * resident_ctas_per_sm(sched, arch) / arch.sm.warp_schedulers_per_sm
    return rate_fraction(table, max(1.0, per_smsp))


def schedule_issues_mma_sync(name_or_path: str) -> bool:
    """Whether the schedule file (its composed parts included) has an ``mma`` on ``mma_sync``; True when
    it cannot be read (the caller then assumes it might)."""
    from gpusim.errors import GpusimError
    from gpusim.schedule.load import read_spec

    try:
        spec = read_spec(name_or_path)
    except (GpusimError, OSError):
        return True
    return _has_mma_sync(spec)


def _has_mma_sync(node: object) -> bool:
    """Whether a parsed schedule part (pydantic models, lists, dicts) holds an ``mma`` on mma.sync."""
    if isinstance(node, BaseModel):
        if getattr(getattr(node, "mma", None), "unit", None) == "mma_sync":
            return True
        return any(_has_mma_sync(v) for v in node.__dict__.values())
    if isinstance(node, dict):
        return any(_has_mma_sync(v) for v in node.values())
    if isinstance(node, list | tuple):
        return any(_has_mma_sync(v) for v in node)
    return False
