"""The YAML form of a schedule: pydantic models with unknown keys refused.

Numeric fields may be numbers or expressions (see :mod:`gpusim.schedule.expr`); programs are lists
of statements validated by :mod:`gpusim.schedule.program`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from gpusim.errors import quote
from gpusim.schedule.fields import ExprLike, RawCount, RawSize, StrictModel
from gpusim.schedule.program import InstrClass, OpsPerElement, Program

_Model = StrictModel
SCHEDULE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
"""What a schedule's ``schedule:`` name may be."""


class SchedulerSpec(_Model):
    """How work units are ordered and handed to CTAs."""

    kind: (
        Literal["grid", "static_persistent", "dynamic_persistent", "split_k", "stream_k", "splitkv_balanced"]
        | StrictStr
    ) = "grid"
    """grid: one CTA per unit; static_persistent: slot s takes units s, s+S, ...; dynamic_persistent:
    a persistent CTA takes the next unit of the launch order when it reaches the end of its current one
    (an atomic tile counter: FlashAttention-3's DynamicPersistentTileScheduler; Blackwell's cluster
    launch control); split_k: K split in ``splits`` parts (a grid dimension ``split`` is added);
    stream_k: the tiles of the last waves cut into equal shares of k-iterations, one per persistent
    CTA, the rest data-parallel (``decomposition``); splitkv_balanced: FlashMLA-style KV split across
    ``parts``. Or an expression giving one of these words."""
    raster: Literal["along_m", "along_n", "heuristic", "as_listed"] | StrictStr = "as_listed"
    """Order of the first two grid dimensions: along_m sweeps M in bands of ``swizzle`` n-clusters
    (inside a band the clusters of one m come together), along_n the transpose; or an expression
    giving one of the four words (DeepGEMM bands along N or M by the operand it multicasts)."""
    swizzle: RawCount = 1
    """Tiles per swizzle group along the slow dimension (CUTLASS max_swizzle_size, Triton GROUP_M)."""
    splits: RawCount = 1
    """split_k (and dynamic_persistent): number of K splits."""
    parts: RawCount | None = None
    """splitkv_balanced: number of parts the KV range of each unit is split into."""
    fixed_overhead_blocks: RawSize = 0
    """splitkv_balanced: blocks of overhead charged per segment when balancing."""
    decomposition: StrictStr = "heuristic"
    """stream_k: CUTLASS's DecompositionMode, ``heuristic`` (data-parallel unless the last wave is less
    than half full), ``stream_k`` (stream-K for the last full and the partial wave whenever the last wave
    is partial) or ``data_parallel``; or an expression giving one (gpusim/sim/streamk.py)."""


class LaunchSpec(_Model):
    """Work decomposition, cluster shape, CTA pairs, persistence and the tile scheduler."""

    grid: dict[str, ExprLike]
    """Named work-unit dimensions with their extents, listed fastest-first (e.g. {m: ..., n: ...})."""
    fields: dict[str, ExprLike] = Field(default_factory=dict)
    """Per-unit values derived from the unit coordinates (e.g. causal block counts)."""
    cluster: Annotated[list[RawCount], Field(min_length=1, max_length=3)] = Field(
        default_factory=lambda: [1, 1, 1]
    )
    """CTAs per cluster along the first, second and third grid dimensions."""
    cta_pair: ExprLike = False
    """Blackwell cta_group::2: the two CTAs of a cluster pair share MMAs (needs cluster[0] % 2 == 0); a
    boolean or an expression (e.g. ``PAIR == 1``) so one schedule can model both 1-CTA and 2-CTA MMA."""
    ctas_per_sm: RawCount | Literal["auto"] = "auto"
    """CTAs resident per SM: ``auto`` (the default) computes the most that fit the registers, shared
    memory, threads, TMEM columns and the arch's CTA limit; a number pins it (checked against every budget)."""
    persistent: StrictBool = False
    """Persistent kernel: one CTA per slot loops over its units (tiles loop); else one CTA per unit."""
    scheduler: SchedulerSpec = SchedulerSpec()
    """Tile scheduler."""


class OperandSpec(_Model):
    """A tensor read by the kernel, for the L2 tile cache: which key identifies a cached panel."""

    key: list[ExprLike]
    """Expressions over unit coordinates identifying the panel (e.g. [m] for A's row panel)."""
    bytes: RawSize
    """Bytes of one panel."""
    interleaved: StrictBool = False
    """The wave's readers stream through all their panels together, front to back, not in step
    (repeated-read microbenchmarks): under LRU a wave whose panels overflow the L2 keeps none of them
    (the lines a re-read needs first were evicted first) and every read misses, instead of the most
    recent panels surviving and each panel being fetched once per wave."""
    resident: StrictBool = False
    """Written by the kernel launched just before in the same stream (a producer-consumer pair such as
    FlashMLA's decode and combine kernels): the kernel starts with every panel of it in L2 when they
    all fit. A set larger than the L2 starts with none: it was written in the order it is read, so
    under LRU its first panels were evicted first and reading them evicts the rest (a cyclic scan)."""


PROTOCOL_PRODUCERS = ("tma", "umma", "threads", "cp_async", "clc")
PROTOCOL_CONSUMERS = ("threads", "umma", "manual")
Protocol = Literal[tuple(f"{p}->{c}" for p in PROTOCOL_PRODUCERS for c in PROTOCOL_CONSUMERS)]  # type: ignore[valid-type]
"""producer->consumer: which hardware event fills a stage and which frees it."""


class BufferSpec(_Model):
    """Storage with an optional pipeline protocol."""

    space: Literal["smem", "tmem", "rmem"] = "smem"
    """Shared memory (bytes), tensor memory (columns) or registers (bytes per replica)."""
    stages: RawCount | Literal["fit"] = 1
    """Ring depth; ``fit``: as many stages as fit in the shared memory the other buffers leave (smem only)."""
    bytes: RawSize = 0
    """Bytes per stage (smem, rmem)."""
    cols: RawSize = 0
    """TMEM columns per stage."""
    max_stages: RawCount | None = None
    """Upper bound for ``stages: fit``."""
    chunks: RawCount = 1
    """Per-stage sub-barriers (FlashMLA's 9 chunk barriers)."""
    protocol: Protocol | None = None
    """producer->consumer, e.g. tma->threads, tma->umma, umma->threads, cp_async->threads,
    threads->threads, threads->umma, tma->manual."""
    scope: Literal["cta", "pair"] = "cta"
    """pair: one barrier on the leader CTA counting both CTAs of a pair (2-CTA MMA)."""
    per: Literal["cta", "replica"] = "cta"
    """replica: one copy per replica of each role using it (budget multiplies)."""
    alias: str | None = None
    """Another buffer whose storage this one reuses (not counted again)."""
    role: str | None = None
    """rmem: the role whose registers hold it."""


class BarrierSpec(_Model):
    """Synchronisation that is not a buffer protocol."""

    kind: Literal["named", "event", "turnstile", "cluster"]
    """named: bar.arrive/bar.sync with a warp count; event: mbarrier signal; turnstile: round robin."""
    warps: RawCount | None = None
    """named: warps that must arrive."""
    count: RawCount = 1
    """event: arrivals per tag."""
    members: str | None = None
    """turnstile: the role whose replicas take turns."""


class RoleSpec(_Model):
    """A set of warps running one program, optionally replicated."""

    warps: RawCount
    """Warps per replica."""
    regs: RawCount | None = None
    """Registers per thread (setmaxnreg value for warp-specialized roles)."""
    replicas: RawCount = 1
    """Copies running the same program with symbol r = 0..replicas-1."""
    cta: Literal["all", "leader"] = "all"
    """leader: only the even CTA of a pair runs this role."""
    program: Program
    """Statements; see gpusim.schedule.program."""


class MetricsSpec(_Model):
    """Useful work, for TFLOPS and bandwidth reporting and the roofline bound."""

    flops: ExprLike = 0
    """Useful FLOPs by the problem's convention (GEMM 2MNK)."""
    compulsory_bytes: ExprLike = 0
    """Bytes that must cross HBM at least once (inputs read once, outputs written once)."""
    workspace_bytes: ExprLike = 0
    """Bytes the kernel's own design moves through HBM beyond the compulsory ones, at the least (split-K
    partials written and read back); searches count them in a candidate's lower bound."""
    dtype: str | None = None
    """Dtype whose tensor peak bounds the time (default: the problem dtype)."""


class RequireSpec(_Model):
    """A condition the problem and parameters must meet for the kernel to exist (as a library's
    ``can_implement``): a tile that divides its epilogue's, query heads grouped evenly over KV heads."""

    check: ExprLike
    """An expression over problem and param symbols that must be true."""
    why: str = ""
    """What breaks otherwise, in a few words (quoted in the refusal)."""


class ScheduleSpec(_Model):
    """A whole schedule file."""

    schedule: str
    """Name (must match the file name for built-in schedules)."""
    description: str = ""
    """One paragraph: which real kernel this models and how."""
    reference_arch: str
    """The arch its golden result is checked on."""
    problem: dict[str, ExprLike]
    """Problem symbols with defaults (M, N, K, dtype ...); overridable with --set."""
    params: dict[str, ExprLike] = Field(default_factory=dict)
    """Tiling symbols; expressions over problem and earlier params; overridable with --set."""
    aliases: dict[str, str] = Field(default_factory=dict)
    """Other names accepted for a problem or param symbol in overrides and measured rows (e.g. DeepGEMM's
    ``BLOCK_M: BM``)."""
    choices: dict[str, list[str]] = Field(default_factory=dict)
    """The words a word-valued problem or param symbol may take (``choices: {op: [copy, scale]}``); any
    other value given with ``--set`` or in a measured row is refused, naming the closest."""
    requires: dict[str, RequireSpec] = Field(default_factory=dict)
    """Named conditions on the problem and parameters (``requires: {gqa: {check: heads % heads_kv == 0,
    why: ...}}``); a value that breaks one is refused with the values it read."""
    mixes: dict[str, dict[InstrClass, OpsPerElement]] = Field(default_factory=dict)
    """CUDA-core instruction mixes: ops per element by class (fp32, ex2, cvt, int)."""
    metrics: MetricsSpec = MetricsSpec()
    """Useful FLOPs and compulsory bytes."""
    launch: LaunchSpec
    """Launch and scheduling."""
    operands: dict[str, OperandSpec] = Field(default_factory=dict)
    """Tensors for the L2 tile cache."""
    buffers: dict[str, BufferSpec] = Field(default_factory=dict)
    """Storage and pipelines."""
    barriers: dict[str, BarrierSpec] = Field(default_factory=dict)
    """Named, event, turnstile and cluster barriers."""
    roles: dict[str, RoleSpec]
    """Roles and their programs (at least one)."""

    @field_validator("schedule")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        if name is not None and not SCHEDULE_NAME.fullmatch(name):
            raise ValueError(f"'{quote(name)}': a schedule name is 1 to 128 letters, digits, '_', '.' or '-' (it "
                             "names the kernel in every report, and '+' joins kernels in a measured row)")  # fmt: skip
        return name

    @field_validator("reference_arch")
    @classmethod
    def _a_known_arch(cls, name: str | None) -> str | None:
        from gpusim.arch import resolve_arch_id
        from gpusim.errors import GpusimError

        if (
            name is not None and not name.endswith((".yaml", ".yml")) and "/" not in name
        ):  # a path: read later
            try:
                resolve_arch_id(name)
            except GpusimError as exc:
                raise ValueError(str(exc)) from None
        return name

    @field_validator("roles")
    @classmethod
    def _some_role(cls, roles: dict[str, RoleSpec]) -> dict[str, RoleSpec]:
        if not roles:
            raise ValueError("a schedule needs at least one role (roles: {} runs no work)")
        return roles

    @field_validator("problem", "params", "aliases")
    @classmethod
    def _symbol_names(cls, values: dict[str, Any]) -> dict[str, Any]:
        from gpusim.schedule.reserved import reserved_reason

        for key in values:
            if not isinstance(key, str) or not key.isidentifier() or len(key) > 64:
                raise ValueError(f"'{quote(str(key), 80)}': a symbol name is up to 64 letters, digits and '_', "
                                 "not starting with a digit (expressions read it)")  # fmt: skip
            reason = reserved_reason(key)
            if reason:
                raise ValueError(f"{key}: {reason}; choose another name")
        return values

    @model_validator(mode="after")
    def _symbols_defined_once(self) -> ScheduleSpec:
        both = sorted(set(self.problem) & set(self.params))
        if both:
            raise ValueError(f"{both[0]} is both a problem value and a param; name it in one of them")
        for alias, target in self.aliases.items():
            if alias in self.problem or alias in self.params:
                raise ValueError(f"aliases.{alias}: '{alias}' is already a problem value or param; an alias "
                                 "is another name for one, not a second definition")  # fmt: skip
            if target in self.aliases:
                raise ValueError(f"aliases.{alias}: its target '{quote(str(target), 80)}' is itself an alias; "
                                 "name the problem value or param")  # fmt: skip
        return self


class TemplateSpec(_Model):
    """A reusable part: a role (``role:``) or a list of statements (``do:``), with arguments substituted
    for ``${name}`` in its text."""

    description: str = ""
    """What the part models."""
    args: dict[str, ExprLike | None] = Field(default_factory=dict)
    """Arguments and their defaults (null: required); ``$name`` in the part is replaced by the value given
    in ``with:``."""
    role: dict[str, Any] | None = None
    """A role body (warps, regs, replicas, program ...)."""
    do: list[Any] | None = None
    """Statements inserted where ``- use: <name>`` stands."""


class AuthoredRoleSpec(RoleSpec):
    """A role as written: its own fields, or a template (``use:``) with arguments and overrides."""

    use: str | None = None
    """A role template from ``templates:`` (its own or an extended file's)."""
    with_: dict[str, Any] = Field(default_factory=dict, alias="with")
    """Template arguments."""
    warps: RawCount | None = None  # type: ignore[assignment]
    """Warps per replica."""
    program: Program | None = None  # type: ignore[assignment]
    """Statements; see gpusim.schedule.program."""


class AuthoredLaunchSpec(LaunchSpec):
    """A launch as written: a part may leave the grid to the schedule that extends it."""

    grid: dict[str, ExprLike] | None = None  # type: ignore[assignment]
    """Named work-unit dimensions with their extents, listed fastest-first (e.g. {m: ..., n: ...})."""


class AuthoredScheduleSpec(ScheduleSpec):
    """A schedule file as written: composition keys before they are resolved (see gpusim.schedule.compose)."""

    extends: str | list[str] | None = None
    """Schedules or parts (names, or paths relative to this file) whose keys this file overrides."""
    templates: dict[str, TemplateSpec] = Field(default_factory=dict)
    """Reusable roles and statement lists."""
    schedule: str | None = None  # type: ignore[assignment]
    """Name (must match the file name for built-in schedules)."""
    reference_arch: str | None = None  # type: ignore[assignment]
    """The arch its golden result is checked on."""
    problem: dict[str, ExprLike] = Field(default_factory=dict)
    """Problem symbols with defaults (M, N, K, dtype ...); overridable with --set."""
    launch: AuthoredLaunchSpec | None = None  # type: ignore[assignment]
    """Launch and scheduling."""
    roles: dict[str, AuthoredRoleSpec] = Field(default_factory=dict)  # type: ignore[assignment]
    """Roles and their programs."""
