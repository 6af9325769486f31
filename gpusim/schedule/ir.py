"""The resolved, immutable form of a schedule for one arch and one problem."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusim.schedule.expr import Expr
from gpusim.schedule.program import Stmt


@dataclass(frozen=True, slots=True)
class Buffer:
    """A storage buffer, with its protocol split into producer and consumer kinds."""

    name: str
    space: str
    stages: int
    bytes: int
    cols: int
    chunks: int
    producer: str | None
    consumer: str | None
    scope: str
    per: str
    alias: str | None
    role: str | None
    max_stages: int | None = None
    """Cap on ``stages: fit``."""

    @property
    def has_protocol(self) -> bool:
        """Whether stages have full/empty barriers."""
        return self.producer is not None


@dataclass(frozen=True, slots=True)
class Barrier:
    """A named, event, turnstile or cluster barrier."""

    name: str
    kind: str
    warps: int
    count: int
    members: str | None


@dataclass(frozen=True, slots=True)
class Role:
    """A role: warps per replica, registers per thread, replicas and program."""

    name: str
    warps: int
    regs: int | None
    replicas: int
    cta: str
    program: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Operand:
    """A tensor panel family for the L2 tile cache."""

    name: str
    key: tuple[Expr, ...]
    bytes: Expr
    interleaved: bool = False
    resident: bool = False
    """Left in L2 by the previous kernel of the stream (schema ``OperandSpec.resident``)."""
    """Panels read together front to back: a wave that overflows the L2 misses on every read (l2cache.py)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """Resolved launch configuration."""

    grid: tuple[tuple[str, int], ...]
    fields: Mapping[str, Expr]
    cluster: tuple[int, int, int]
    cta_pair: bool
    ctas_per_sm: int
    ctas_pinned: bool
    """Whether the schedule pinned ctas_per_sm (else it was computed from the budgets)."""
    persistent: bool
    scheduler: str
    raster: str
    swizzle: int
    splits: int
    parts: int | None
    fixed_overhead_blocks: int
    decomposition: str = "heuristic"
    """stream_k: heuristic, stream_k or data_parallel (gpusim/sim/streamk.py)."""

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        x, y, z = self.cluster
        return x * y * z

    @property
    def k_splits(self) -> int:
        """Parts the K loop of every unit is split into: ``splits`` for the split_k and dynamic_persistent
        schedulers, 1 for the others."""
        return self.splits if self.scheduler in ("split_k", "dynamic_persistent") else 1

    @property
    def num_units(self) -> int:
        """Work units in the grid (before split-K)."""
        total = 1
        for _, extent in self.grid:
            total *= extent
        return total


@dataclass(frozen=True, slots=True)
class Schedule:
    """A schedule resolved against a problem: every size evaluated, programs compiled."""

    name: str
    description: str
    reference_arch: str
    source: Path | None
    env: Mapping[str, Any]
    dtype: str
    mixes: Mapping[str, Mapping[str, float]]
    flops: float
    compulsory_bytes: float
    metrics_dtype: str
    launch: Launch
    operands: Mapping[str, Operand]
    buffers: Mapping[str, Buffer]
    barriers: Mapping[str, Barrier]
    roles: Mapping[str, Role]
    overrides: Mapping[str, Any]
    symbols: tuple[str, ...] = ()
    """Problem and param names, in file order (what --set may override and reports show)."""
    problem_symbols: tuple[str, ...] = ()
    """The problem's names (the rest of ``symbols`` are schedule parameters)."""
    workspace_bytes: float = 0.0
    """HBM bytes beyond the compulsory ones that the design itself moves (split-K partials), at the least."""

    def mma_dtype(self, arg: str | None, env: Mapping[str, Any]) -> str:
        """The dtype an ``mma`` uses: its ``dtype`` argument (a dtype name, or a symbol holding one such
        as ``acc_dtype``), else the problem dtype."""
        name = arg or self.dtype
        value = env.get(name)
        return value if isinstance(value, str) else name

    @property
    def threads_per_cta(self) -> int:
        """Threads of one CTA (all roles, all replicas)."""
        return 32 * sum(r.warps * r.replicas for r in self.roles.values())
