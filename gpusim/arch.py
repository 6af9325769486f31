"""Architecture schema and loader: one YAML per GPU, every number with its source.

An :class:`Arch` holds physical parameters (SMs, clocks, memory system, per-SM limits, tensor-core
rates per MMA unit and dtype, CUDA-core and SFU rates, feature flags) plus a ``calibration`` block of
a few bounded costs that ``gpusim calibrate`` may fit. Derived values (dense peak TFLOPS per dtype,
ridge points) are computed, never stored.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpusim.dtypes import DtypeName
from gpusim.errors import InputError, UnknownNameError, format_validation_error
from gpusim.resources import builtin_dir
from gpusim.yamlio import read_yaml_mapping

MmaUnitName = Literal["mma_sync", "wgmma", "tcgen05"]
MMA_UNITS: tuple[str, ...] = ("mma_sync", "wgmma", "tcgen05")
OperandSpace = Literal["rmem", "smem", "tmem"]


class StrictModel(BaseModel):
    """Base for every schema model: unknown keys refused, numbers must be numbers, docs per field."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    def __setattr__(self, name: str, value: Any) -> None:
        raise InputError(f"gpusim.{type(self).__name__}.{name[:60]}: read-only; make a changed copy with "
                         f".model_copy(update={{'{name[:60]}': ...}}) (checked again where it is used)")  # fmt: skip


MIN_CLOCK_MHZ = 1.0
MAX_CLOCK_MHZ = 100_000.0
"""Clock bounds an arch file may give (any real GPU runs at 100-3,000 MHz): outside them it is a typo."""
MIN_BANDWIDTH_BYTES_PER_S = 1e6
MAX_BANDWIDTH_BYTES_PER_S = 1e18
"""Bandwidth bounds (1 MB/s to 1 EB/s; real HBM and L2 are 0.9-30 TB/s)."""
MAX_SM_COUNT = 4096
"""The most SMs an arch may have (the largest GPUs have under 200): the simulation holds state per SM."""
MAX_LATENCY_NS = 1e6
"""The longest latency an arch may give (1 ms; real memory latencies are 0.1-1 microseconds)."""
MAX_LATENCY_CYCLES = 1e6
"""The longest per-instruction latency in clocks (real MMA latencies are tens of clocks)."""
MAX_BYTES = 2.0**50
"""The largest memory size (1 PiB; the largest GPU memories are under 300 GB)."""
MAX_SM_BYTES = 2**30
"""The largest per-SM or per-block size in bytes or registers (real ones are under 300 KiB)."""
MAX_PER_SM_COUNT = 2**20
"""The most threads, warps, CTAs, schedulers or cores per SM or per block a file may give."""
MAX_RATE_PER_CLK_PER_SM = 1e7
"""The highest per-SM rate per clock (FLOP, ops or bytes; Blackwell's fp4 peak is ~65,000 FLOP/clk/SM)."""
MAX_POWER_W = 100_000.0
"""The highest board or static power (real boards draw under 2 kW)."""
MAX_PJ = 1e6
"""The highest energy per operation or byte (real ones are 0.1-100 pJ)."""
MAX_SCALE = 1000.0
"""The largest calibration scale factor."""
ARCH_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"
"""An arch id: letters, digits and ``_ . + -``, at most 64 characters (it names files and appears in messages)."""
MIN_FRACTION = 0.01
"""Smallest achievable fraction of a datasheet rate a calibration may carry (the fit's own bounds are
0.3 and above; below 1% a rate is a typo, and the times it gives are not a prediction)."""


class Clocks(StrictModel):
    """Clock frequencies. Tensor peaks are quoted at ``tensor_clock_mhz``, which can differ from boost."""

    boost_clock_mhz: float = Field(ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    """Maximum boost clock."""
    base_clock_mhz: float | None = Field(default=None, ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    """Base clock, where published."""
    tensor_clock_mhz: float = Field(ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    """The clock at which the vendor's dense tensor-core peak is computed (H100 SXM: 1830 MHz)."""
    cuda_core_clock_mhz: float = Field(ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    """The clock at which the vendor's FP32 (CUDA-core) peak is computed."""


class Memory(StrictModel):
    """Chip-wide memory system: HBM (or GDDR) and L2."""

    hbm_type: str
    """Memory technology, e.g. HBM3."""
    hbm_capacity_bytes: float = Field(gt=0, le=MAX_BYTES)
    """Device memory capacity (decimal bytes as the vendor quotes it)."""
    hbm_bandwidth_bytes_per_s: float = Field(ge=MIN_BANDWIDTH_BYTES_PER_S, le=MAX_BANDWIDTH_BYTES_PER_S)
    """Peak device-memory bandwidth from the datasheet."""
    hbm_latency_ns: float = Field(gt=0, le=MAX_LATENCY_NS)
    """Load-to-use latency of an L2 miss served by device memory."""
    l2_size_bytes: float = Field(gt=0, le=MAX_BYTES)
    """L2 cache capacity."""
    l2_bandwidth_bytes_per_s: float = Field(ge=MIN_BANDWIDTH_BYTES_PER_S, le=MAX_BANDWIDTH_BYTES_PER_S)
    """Achievable aggregate L2-to-SM read bandwidth (NVIDIA does not publish it; measured), read as at the
    max boost clock, where the L2 benchmarks run: the ``l2_clock`` mechanism scales it by a kernel's clock
    over that one."""
    l2_hit_latency_ns: float = Field(gt=0, le=MAX_LATENCY_NS)
    """Load-to-use latency of an L2 hit in the near partition."""
    l2_far_hit_latency_ns: float | None = Field(default=None, gt=0, le=MAX_LATENCY_NS)
    """Load-to-use latency of an L2 hit in the far partition, where measured."""


class Tmem(StrictModel):
    """Blackwell tensor memory per SM: lanes x columns x bits per cell."""

    lanes: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Rows (lanes); 128 on sm_100."""
    columns: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Columns of 32-bit cells; 512 on sm_100."""
    bits_per_cell: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Bits per cell; 32."""
    min_alloc_columns: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Smallest allocation; allocations are powers of two of at least this many columns."""

    @property
    def bytes(self) -> int:
        """Capacity in bytes."""
        return self.lanes * self.columns * self.bits_per_cell // 8


class SmLimits(StrictModel):
    """Per-SM resources and limits (the occupancy model)."""

    registers_per_sm: int = Field(gt=0, le=MAX_SM_BYTES)
    """32-bit registers per SM."""
    max_registers_per_thread: int = Field(gt=0, le=MAX_SM_BYTES)
    """Largest per-thread register count."""
    max_registers_per_block: int = Field(gt=0, le=MAX_SM_BYTES)
    """Largest register count of one thread block."""
    register_alloc_granularity_per_warp: int = Field(gt=0, le=MAX_SM_BYTES)
    """Registers are allocated per warp in multiples of this (256 on Volta to Blackwell)."""
    smem_bytes_per_sm: int = Field(gt=0, le=MAX_SM_BYTES)
    """Largest shared-memory carveout per SM."""
    smem_bytes_per_block: int = Field(gt=0, le=MAX_SM_BYTES)
    """Largest dynamic shared memory one block may opt in to."""
    smem_reserved_bytes_per_block: int = Field(ge=0, le=MAX_SM_BYTES)
    """Shared memory the CUDA runtime reserves per block."""
    l1_smem_bytes_per_sm: int = Field(gt=0, le=MAX_SM_BYTES)
    """Unified L1 + texture + shared memory per SM."""
    smem_bandwidth_bytes_per_clk: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """Shared-memory bandwidth per SM (32 banks x 4 B)."""
    max_threads_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Resident threads per SM."""
    max_warps_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Resident warps per SM."""
    max_ctas_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Resident thread blocks per SM."""
    max_threads_per_block: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Threads per block."""
    warp_schedulers_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Warp schedulers (SM sub-partitions) per SM."""
    tensor_cores_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """Tensor cores per SM."""
    fp32_cores_per_sm: int = Field(gt=0, le=MAX_PER_SM_COUNT)
    """FP32 CUDA cores per SM."""
    tmem: Tmem | None = None
    """Tensor memory (Blackwell sm_100/sm_103 only)."""
    tmem_read_bytes_per_clk: float | None = Field(default=None, gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """TMEM-to-register bandwidth per SM (tcgen05.ld), where known."""
    barrier_wake_cycles: float | None = Field(default=None, ge=0, le=MAX_LATENCY_CYCLES)
    """SM clocks a round of a named barrier (bar.sync / __syncthreads) costs a warp that waits at it:
    from the last arrival to the waiting warps issuing again; None where unmeasured (the
    ``sync_latency`` mechanism then adds nothing)."""
    mbarrier_wake_cycles: float | None = Field(default=None, ge=0, le=MAX_LATENCY_CYCLES)
    """SM clocks from an mbarrier phase completing (its last arrive, or the last byte of its
    transaction count) to a warp spinning in try_wait on it issuing again; None where unmeasured."""


class CudaCores(StrictModel):
    """CUDA-core and SFU throughput per SM per clock (at ``cuda_core_clock_mhz``)."""

    fp32_flops_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """FP32 FLOP per clock per SM (2 per FMA)."""
    fp64_flops_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """FP64 FLOP per clock per SM on the CUDA cores (2 per FMA)."""
    int32_ops_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """32-bit integer add/logic instructions per clock per SM (per thread-lane)."""
    ex2_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """SFU transcendental results (ex2, rcp, rsqrt, sin, cos, lg2) per clock per SM."""
    cvt_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """Conversions from 32-bit to smaller float types per clock per SM."""


MAX_INSTR_EXTENT = 4096
"""A bound on an MMA instruction's m, n or k extent (the largest real one, tcgen05 n, is 256)."""


class InstrShapes(StrictModel):
    """A family of legal MMA instruction shapes: every combination of the listed m, n and k."""

    m: list[int]
    """Legal M extents."""
    n: list[int] | None = None
    """Legal N extents (or give ``n_range``)."""
    n_range: list[int] | None = None
    """[min, max, step] for N when N takes many values (wgmma: [8, 256, 8])."""
    k: list[int]
    """Legal K extents."""

    @model_validator(mode="after")
    def _one_n_form(self) -> InstrShapes:
        if (self.n is None) == (self.n_range is None):
            raise ValueError("give exactly one of 'n' or 'n_range'")
        if self.n_range is not None:
            if len(self.n_range) != 3:
                raise ValueError("'n_range' must be [min, max, step]")
            lo, hi, step = self.n_range
            if not (1 <= lo <= hi <= MAX_INSTR_EXTENT) or step < 1:
                raise ValueError(
                    f"'n_range' [{lo}, {hi}, {step}] must have 1 <= min <= max <= {MAX_INSTR_EXTENT} and step >= 1"
                )
        for name, values in (("m", self.m), ("n", self.n or []), ("k", self.k)):
            if any(not 1 <= v <= MAX_INSTR_EXTENT for v in values):
                raise ValueError(f"'{name}' extents must be between 1 and {MAX_INSTR_EXTENT}")
        return self

    def n_values(self) -> list[int]:
        """Every legal N."""
        if self.n is not None:
            return list(self.n)
        lo, hi, step = self.n_range  # type: ignore[misc]
        return list(range(lo, hi + 1, step))

    def allows_n(self, n: int) -> bool:
        """Whether ``n`` is a legal N extent (without listing a range)."""
        if self.n is not None:
            return n in self.n
        lo, hi, step = self.n_range  # type: ignore[misc]
        return lo <= n <= hi and (n - lo) % step == 0

    def allows(self, m: int, n: int, k: int) -> bool:
        """Whether (m, n, k) is one of these shapes."""
        return m in self.m and k in self.k and self.allows_n(n)

    def describe(self) -> str:
        """Compact text such as ``m64 n8..256/8 k16``."""
        if self.n_range is not None:
            n_text = f"{self.n_range[0]}..{self.n_range[1]}/{self.n_range[2]}"
        else:
            n_text = "|".join(map(str, self.n or []))
        return f"m{'|'.join(map(str, self.m))} n{n_text} k{'|'.join(map(str, self.k))}"


class BlockScale(StrictModel):
    """Block-scaled MMA (Blackwell mxfp8/mxfp6/mxfp4/nvfp4): one scale per vector of K elements."""

    scale_vec_elems: list[int]
    """Legal numbers of K elements sharing one scale."""
    scale_dtype: Literal["ue8m0", "ue4m3"]
    """Scale factor format."""


class MmaDtype(StrictModel):
    """Rate and legality of one operand dtype on one MMA unit."""

    flops_per_clk_per_sm: float = Field(gt=0, le=MAX_RATE_PER_CLK_PER_SM)
    """Dense FLOP per clock per SM at the tensor clock (2 per multiply-add)."""
    accumulators: list[DtypeName]
    """Accumulator dtypes supported."""
    shapes: list[InstrShapes]
    """Legal instruction shapes (per CTA for tcgen05 cta_group 1; per pair for cta_group 2)."""
    a_from: list[OperandSpace]
    """Where operand A may live."""
    k_major_only: bool = False
    """Both operands must be K-major in shared memory (FP8 wgmma on sm_90)."""
    block_scale: BlockScale | None = None
    """Block-scale rules for block-scaled formats."""

    def allows_shape(self, m: int, n: int, k: int) -> bool:
        """Whether (m, n, k) is a legal instruction shape for this dtype."""
        return any(family.allows(m, n, k) for family in self.shapes)


class MmaUnit(StrictModel):
    """One MMA instruction family: mma.sync (warp), wgmma (warpgroup, async) or tcgen05 (one thread, TMEM)."""

    issue_scope: Literal["warp", "warpgroup", "thread"]
    """Who issues one instruction."""
    latency_cycles: float = Field(gt=0, le=MAX_LATENCY_CYCLES)
    """Issue-to-result latency of one instruction at its largest shape, in SM clocks."""
    cta_groups: list[int] = [1]
    """tcgen05 cta_group values supported (2 = the CTA pair of a TPC shares one MMA)."""
    dtypes: dict[DtypeName, MmaDtype]
    """Operand dtypes this unit executes."""
    rate_by_warps_per_smsp: dict[int, float] | None = None
    """mma.sync only: the fraction of ``flops_per_clk_per_sm`` an SM reaches when this many warps per
    sub-partition issue mma.sync (independent chains), measured at a few counts and interpolated
    linearly (engine-fidelity G5; the ``mma_sync_warps`` mechanism). One warp per SMSP cannot issue
    fast enough to fill its tensor core; None: every count reaches the full rate."""

    @field_validator("rate_by_warps_per_smsp")
    @classmethod
    def _rates_by_warps(cls, table: dict[int, float] | None) -> dict[int, float] | None:
        if table is None:
            return None
        if not table:
            raise ValueError("expected at least one 'warps per SMSP: fraction' entry")
        last = 0.0
        for warps, fraction in sorted(table.items()):
            if warps < 1:
                raise ValueError(f"warps per SMSP {warps}: expected a whole number >= 1")
            if not 0 < fraction <= 1:
                raise ValueError(f"{warps} warps per SMSP: fraction {fraction} outside (0, 1]")
            if fraction < last:
                raise ValueError(f"{warps} warps per SMSP: fraction {fraction} below the {last} of fewer warps "
                                 "(more warps never issue slower)")  # fmt: skip
            last = fraction
        return dict(sorted(table.items()))


class TensorCores(StrictModel):
    """The MMA units an SM offers; absent units are not supported on this arch."""

    mma_sync: MmaUnit
    """Warp-level mma.sync / wmma (every generation)."""
    wgmma: MmaUnit | None = None
    """Warpgroup-level asynchronous MMA (sm_90a only)."""
    tcgen05: MmaUnit | None = None
    """Single-thread-issued MMA with TMEM accumulators (sm_100a / sm_103a)."""

    def unit(self, name: str) -> MmaUnit | None:
        """The unit called ``name``, or None when the arch lacks it."""
        return getattr(self, name, None)


class Power(StrictModel):
    """The board's power budget and the energy its units spend (``gpusim.sim.power`` turns it into the
    clock a kernel sustains). Energies are per operation at the max boost clock's voltage; dynamic
    energy scales with the square of the voltage, which the power model takes as proportional to the
    clock (P_dynamic ~ f^3); HBM energy is on the memory rail and does not scale."""

    board_power_limit_w: float = Field(gt=0, le=MAX_POWER_W)
    """Board power limit (TDP/TGP) the clock manager holds the average power under."""
    static_power_w: float = Field(ge=0, le=MAX_POWER_W)
    """Power drawn whatever the kernel does (leakage, idle clocks, board, memory refresh)."""
    tensor_fp16_pj_per_flop: float = Field(gt=0, le=MAX_PJ)
    """Energy per dense FP16/BF16 tensor-core FLOP; other dtypes cost the same per tensor-core clock
    (pJ/FLOP scaled by the FP16 rate over the dtype's rate)."""
    fp32_pj_per_op: float = Field(gt=0, le=MAX_PJ)
    """Energy per CUDA-core lane operation (an FFMA counts once); also charged for int and cvt ops."""
    sfu_pj_per_op: float = Field(gt=0, le=MAX_PJ)
    """Energy per SFU (MUFU) lane result."""
    smem_pj_per_byte: float = Field(gt=0, le=MAX_PJ)
    """Energy per byte read or written in shared memory / L1 (lds/sts, TMA and cp.async landings, TMEM)."""
    l2_pj_per_byte: float = Field(gt=0, le=MAX_PJ)
    """Energy per byte through the L2."""
    hbm_pj_per_byte: float = Field(gt=0, le=MAX_PJ)
    """Energy per byte read from or written to HBM, beyond its L2 pass (memory rail: not clock-scaled)."""

    @model_validator(mode="after")
    def _static_under_the_limit(self) -> Power:
        if self.static_power_w >= self.board_power_limit_w:
            raise ValueError(
                f"static_power_w {self.static_power_w:g} W is not below board_power_limit_w "
                f"{self.board_power_limit_w:g} W: no clock would leave the kernel any power"
            )
        return self


class Features(StrictModel):
    """Feature flags; each must agree with the rest of the file."""

    cp_async: bool
    """cp.async (LDGSTS) and hardware arrive/wait barriers (sm_80+)."""
    tma: bool
    """Tensor Memory Accelerator bulk tensor copies (sm_90+)."""
    tma_multicast: bool
    """TMA multicast to the CTAs of a cluster."""
    wgmma: bool
    """wgmma.mma_async (sm_90a)."""
    tcgen05: bool
    """tcgen05.mma and tensor memory (sm_100a)."""
    cta_pair_mma: bool
    """tcgen05 cta_group::2: one MMA spanning the two SMs of a TPC."""
    clusters: bool
    """Thread-block clusters."""
    max_cluster_size: int = Field(ge=1, le=MAX_PER_SM_COUNT)
    """Portable maximum CTAs per cluster (1 where clusters do not exist)."""
    max_cluster_size_nonportable: int = Field(ge=1, le=MAX_PER_SM_COUNT)
    """Maximum CTAs per cluster with the non-portable opt-in."""
    distributed_smem: bool
    """Distributed shared memory across a cluster."""
    setmaxnreg: bool
    """Per-warpgroup register reallocation (setmaxnreg)."""
    block_scaled_mma: bool
    """Hardware block-scaled MMA formats (mxfp8, mxfp4, nvfp4)."""


class Calibration(StrictModel):
    """Bounded costs the model uses; datasheet values by default, fitted by ``gpusim calibrate``."""

    origin: Literal["datasheet", "calibrated"] = "datasheet"
    """Where these values come from."""
    sustained_clock_mhz: float | None = Field(default=None, ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    """Clock sustained under tensor load; None means the tensor clock (datasheet)."""
    hbm_bandwidth_fraction: float = Field(default=1.0, ge=MIN_FRACTION, le=1)
    """Achievable fraction of datasheet HBM bandwidth."""
    l2_bandwidth_fraction: float = Field(default=1.0, ge=MIN_FRACTION, le=1)
    """Achievable fraction of the listed L2 bandwidth."""
    latency_scale: float = Field(default=1.0, ge=1 / MAX_SCALE, le=MAX_SCALE)
    """Multiplier on memory latencies."""
    launch_overhead_ns: float = Field(default=0.0, ge=0, le=MAX_LATENCY_NS)
    """Fixed time per kernel launch (the datasheet has none)."""
    tensor_issue_efficiency: float = Field(default=1.0, ge=MIN_FRACTION, le=1)
    """Achievable fraction of the tensor-core rate while the tensor core is busy."""
    cuda_core_issue_efficiency: float = Field(default=1.0, ge=MIN_FRACTION, le=1)
    """Achievable fraction of the CUDA-core and SFU rates while busy."""
    tensor_cuda_overlap: float = Field(default=1.0, ge=0, le=1)
    """How much of a CUDA-core/SFU op overlaps for free with tensor-core work on the same SM
    sub-partitions (the ``pipe_coupling`` mechanism, engine-fidelity G1): 1 (the datasheet value) is
    free overlap, 0 serialises the op's time with the tensor core. No microbenchmark of it exists
    yet, so it is fitted from measured rows."""
    energy_scale: float = Field(default=1.0, ge=1 / MAX_SCALE, le=MAX_SCALE)
    """Multiplier on every dynamic energy of the arch's ``power`` block (the power model's one fitted
    parameter; used only with the ``power`` mechanism on)."""
    provenance: dict[str, Any] = {}
    """For calibrated values: rows used, date, error before and after."""


class Arch(StrictModel):
    """One GPU: identity, clocks, memory, per-SM limits, compute rates, features, sources."""

    def __init__(self, **data: Any) -> None:
        """Build an arch from its fields (``load_arch`` reads one from YAML); a bad field is an InputError."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            error = InputError(format_validation_error("gpusim.Arch", exc))
            error.validation_error = exc  # type: ignore[attr-defined]  # load_arch_file names the file instead
            raise error from None

    id: str = Field(pattern=ARCH_ID_PATTERN)
    """Stable id, e.g. ``h100`` (the plain chip name is the SXM part)."""
    name: str
    """Marketing name."""
    aliases: list[str] = []
    """Other names accepted wherever an arch id is (``h100_sxm``, ``sm_90``)."""
    generation: Literal["volta", "turing", "ampere", "ada", "hopper", "blackwell"]
    """Microarchitecture."""
    compute_capability: str = Field(pattern=r"^\d+\.\d+$")
    """CUDA compute capability, e.g. ``9.0``."""
    sm_count: int = Field(gt=0, le=MAX_SM_COUNT)
    """Enabled SMs."""
    clocks: Clocks
    """Clock frequencies."""
    memory: Memory
    """HBM and L2."""
    sm: SmLimits
    """Per-SM limits and sizes."""
    cuda_cores: CudaCores
    """CUDA-core and SFU rates."""
    tensor_cores: TensorCores
    """MMA units and their per-dtype rates and shapes."""
    features: Features
    """Feature flags."""
    tma_latency_extra_ns: float | None = Field(default=None, ge=0, le=MAX_LATENCY_NS)
    """Extra latency of a TMA load over a plain global load (Hopper and later)."""
    power: Power | None = None
    """Board power limit and energy per operation (the power model; None: the arch has none)."""
    mechanisms: list[str] | None = None
    """Model mechanisms switched on for predictions with this arch (None: the defaults; see
    ``gpusim.mechanisms``). Set by ``gpusim.predict(..., model=...)``, not usually in a file."""
    calibration: Calibration = Calibration()
    """Calibrated costs (datasheet defaults)."""
    sources: dict[str, str]
    """Source of each field, keyed by its dotted path (or a parent path covering a whole block)."""
    notes: list[str] = []
    """Where sources disagree and which value was taken, and why."""

    @field_validator("mechanisms")
    @classmethod
    def _known_mechanisms(cls, names: list[str] | None) -> list[str] | None:
        from gpusim.mechanisms import MECHANISMS  # gpusim.mechanisms builds on this module

        for name in names or ():
            if name not in MECHANISMS:
                close = difflib.get_close_matches(name, list(MECHANISMS), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(MECHANISMS)})"
                raise ValueError(f"unknown mechanism '{name[:60]}'{hint}")
        return names

    @model_validator(mode="after")
    def _consistent(self) -> Arch:
        tc = self.tensor_cores
        checks = [
            ("features.wgmma", self.features.wgmma, tc.wgmma is not None, "tensor_cores.wgmma"),
            ("features.tcgen05", self.features.tcgen05, tc.tcgen05 is not None, "tensor_cores.tcgen05"),
            ("features.tcgen05", self.features.tcgen05, self.sm.tmem is not None, "sm.tmem"),
        ]
        for flag_name, flag, present, section in checks:
            if flag != present:
                state = "present" if present else "absent"
                raise ValueError(f"{flag_name} is {flag} but {section} is {state}")
        if self.features.cta_pair_mma and (tc.tcgen05 is None or 2 not in tc.tcgen05.cta_groups):
            raise ValueError("features.cta_pair_mma needs tensor_cores.tcgen05.cta_groups to include 2")
        if self.sm.smem_bytes_per_block > self.sm.smem_bytes_per_sm:
            raise ValueError("sm.smem_bytes_per_block exceeds sm.smem_bytes_per_sm")
        return self

    # ---- derived values -------------------------------------------------------------------------

    @property
    def cc_major_minor(self) -> tuple[int, int]:
        """Compute capability as (major, minor)."""
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def sm_version(self) -> int:
        """Compute capability as the sm_XY number (90 for 9.0)."""
        major, minor = self.cc_major_minor
        return major * 10 + minor

    @property
    def sustained_clock_mhz(self) -> float:
        """The clock the simulator runs SMs at: calibrated sustained clock, else the tensor clock."""
        return self.calibration.sustained_clock_mhz or self.clocks.tensor_clock_mhz

    def tensor_flops_per_clk_per_sm(self, dtype: str) -> float | None:
        """Best dense tensor FLOP/clk/SM for ``dtype`` over all MMA units (None if unsupported)."""
        rates = [
            unit.dtypes[dtype].flops_per_clk_per_sm  # type: ignore[index]
            for name in MMA_UNITS
            if (unit := self.tensor_cores.unit(name)) is not None and dtype in unit.dtypes
        ]
        return max(rates) if rates else None

    def dense_peak_tflops(self, dtype: str) -> float | None:
        """Dense tensor peak in TFLOPS = FLOP/clk/SM x SMs x tensor clock (None if unsupported)."""
        rate = self.tensor_flops_per_clk_per_sm(dtype)
        if rate is None:
            return None
        return rate * self.sm_count * self.clocks.tensor_clock_mhz * 1e6 / 1e12

    def fastest_peak_tflops(self) -> float:
        """The highest dense peak of any tensor-core dtype or the FP32 CUDA cores, in TFLOPS: no kernel,
        whatever its dtype, issues FLOPs faster."""
        dtypes = {
            d for name in MMA_UNITS if (unit := self.tensor_cores.unit(name)) is not None for d in unit.dtypes
        }
        return max([self.fp32_peak_tflops(), *(self.dense_peak_tflops(d) or 0.0 for d in dtypes)])

    def fp32_peak_tflops(self) -> float:
        """FP32 CUDA-core peak in TFLOPS at the CUDA-core clock."""
        return (
            self.cuda_cores.fp32_flops_per_clk_per_sm * self.sm_count * self.clocks.cuda_core_clock_mhz / 1e6
        )

    def ridge_point_flop_per_byte(self, dtype: str) -> float | None:
        """Arithmetic intensity (FLOP/byte of HBM traffic) where the dense tensor peak meets HBM bandwidth."""
        peak = self.dense_peak_tflops(dtype)
        if peak is None:
            return None
        return peak * 1e12 / self.memory.hbm_bandwidth_bytes_per_s

    def supported_dtypes(self) -> list[str]:
        """Dtypes with a tensor-core path, in the canonical order."""
        from gpusim.dtypes import DTYPE_NAMES

        return [d for d in DTYPE_NAMES if self.tensor_flops_per_clk_per_sm(d) is not None]

    def derived(self) -> dict[str, Any]:
        """Every derived value, for reports and JSON."""
        dtypes = self.supported_dtypes()
        return {
            "dense_peak_tflops": {d: round(self.dense_peak_tflops(d) or 0.0, 1) for d in dtypes},
            "ridge_point_flop_per_byte": {
                d: round(self.ridge_point_flop_per_byte(d) or 0.0, 1) for d in dtypes
            },
            "fp32_peak_tflops": round(self.fp32_peak_tflops(), 2),
            "hbm_bandwidth_tb_per_s": self.memory.hbm_bandwidth_bytes_per_s / 1e12,
            "smem_kib_per_sm": self.sm.smem_bytes_per_sm / 1024,
            "tmem_bytes_per_sm": self.sm.tmem.bytes if self.sm.tmem else 0,
            "sustained_clock_mhz": self.sustained_clock_mhz,
        }

    def uncovered_fields(self) -> list[str]:
        """Numeric fields whose dotted path (or a parent path) has no entry in ``sources``."""
        covered = set(self.sources)
        missing: list[str] = []

        def visit(value: Any, path: str) -> None:
            if path in covered:
                return
            if isinstance(value, BaseModel):
                for name in type(value).model_fields:
                    if name in {"sources", "notes", "calibration", "aliases", "id", "name"}:
                        continue
                    visit(getattr(value, name), f"{path}.{name}" if path else name)
            elif isinstance(value, dict):
                for key, item in value.items():
                    visit(item, f"{path}.{key}")
            elif isinstance(value, bool | str | list) or value is None:
                return
            elif isinstance(value, int | float):
                missing.append(path)

        visit(self, "")
        return missing


# ---- loading ------------------------------------------------------------------------------------


def archs_dir() -> Path:
    """The directory holding the built-in arch YAMLs."""
    return builtin_dir("archs")


@cache
def _builtin_paths() -> dict[str, Path]:
    return {p.stem: p for p in sorted(archs_dir().glob("*.yaml"))}


def load_arch_file(path: Path) -> Arch:
    """Load and validate one arch YAML; every problem is one InputError line naming the file and field."""
    data = read_yaml_mapping(path)
    try:
        return Arch.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation_error(str(path), exc)) from None
    except InputError as exc:
        validation = getattr(exc, "validation_error", None)
        if validation is None:
            raise
        raise InputError(format_validation_error(str(path), validation)) from None


@cache
def _builtin_arch(arch_id: str) -> Arch:
    return load_arch_file(_builtin_paths()[arch_id])


def builtin_arch_path(arch_id: str) -> Path:
    """The file of the built-in arch ``arch_id`` (an id, not an alias)."""
    return _builtin_paths()[arch_id]


def builtin_arch_ids() -> list[str]:
    """Ids of every built-in arch, oldest generation first (compute capability, then id)."""
    return [a.id for a in all_archs()]


@cache
def _alias_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for arch_id in _builtin_paths():
        table[arch_id] = arch_id
        for alias in _builtin_arch(arch_id).aliases:
            table[alias.lower().replace("-", "_")] = arch_id
    return table


def arch_alias_table() -> dict[str, str]:
    """Every name :func:`resolve_arch_id` knows (ids and normalized aliases) -> the arch id."""
    return dict(sorted(_alias_table().items()))


def resolve_arch_id(name: str) -> str:
    """The built-in arch id for an id or alias; an unknown name raises with the closest match."""
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(f"arch {name[:80]!r}: an arch id has no control characters (newline, tab, ...)")
    key = name.strip(" ").lower().replace("-", "_")  # spaces around a CSV cell are fine
    if key in _builtin_paths():  # an id needs no alias table (which reads every arch file)
        return key
    table = _alias_table()
    if key in table:
        return table[key]
    raise UnknownNameError("arch", name, builtin_arch_ids())


def validated(arch: Arch) -> Arch:
    """``arch`` after checking every field again: ``model_copy(update=...)`` skips pydantic's validation,
    so an instance handed to the API may hold any value (a NaN bandwidth, a text SM count). Returns
    ``arch`` itself; raises InputError naming the first bad field."""
    Arch.model_validate(arch.model_dump(warnings=False))
    return arch


def load_arch(name_or_path: str | Path) -> Arch:
    """An arch by id, alias, or path of a user's YAML file, with the costs its file writes (datasheet).

    Calibrated costs are merged by :func:`gpusim.costs.with_costs` (``gpusim.load_arch`` and
    ``gpusim.predict`` do so by default).
    """
    text = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")) or "/" in text
    if looks_like_path:
        return load_arch_file(Path(text))
    return _builtin_arch(resolve_arch_id(text))


def is_builtin_arch_id(arch_id: str) -> bool:
    """Whether ``arch_id`` names a built-in arch file."""
    return arch_id in _builtin_paths()


def all_archs() -> list[Arch]:
    """Every built-in arch, oldest generation first."""
    archs = [_builtin_arch(arch_id) for arch_id in _builtin_paths()]
    return sorted(archs, key=lambda a: (a.cc_major_minor, a.id))


def close_arch_match(name: str) -> str | None:
    """The closest built-in id or alias to ``name``, if any is close."""
    matches = difflib.get_close_matches(name, list(_alias_table()), n=1, cutoff=0.6)
    return matches[0] if matches else None
