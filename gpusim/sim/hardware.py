"""The simulated hardware of one SM and the rates the interpreter charges, from the arch."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import simpy

from gpusim.arch import Arch
from gpusim.dtypes import bytes_per_element
from gpusim.errors import ScheduleRefused
from gpusim.sim.memory import FlowNetwork, Port, Transfer
from gpusim.sim.mma_sync_rate import WarpRate
from gpusim.sim.servers import COUPLING_LABEL, FifoServer, SharedTensorCore
from gpusim.sim.spanlog import BusyLog, SpanLog

PIPES = ("tensor", "fp32", "sfu", "cvt", "int", "issue", "lsu", "tmem")
SUB_PARTITIONED_PIPES = ("fp32", "sfu", "cvt", "int", "issue")
"""Pipes that each SM sub-partition (SMSP) has its own quarter of, behind its own warp scheduler: a warp
drives only its SMSP's share. ``servers`` holds one server per SMSP for these (``fp32.0`` ...)."""


def sub_server_name(pipe: str, smsp: int) -> str:
    """The name of SMSP ``smsp``'s server of ``pipe``."""
    return f"{pipe}.{smsp}"


def warps_per_smsp(first_warp: int, warps: int, smsps: int) -> tuple[int, ...]:
    """How many of the warps ``first_warp .. first_warp + warps - 1`` of an SM sit on each sub-partition
    (warp slot w on SMSP w mod smsps, as the hardware assigns them)."""
    counts = [warps // smsps] * smsps
    for w in range(first_warp + warps - warps % smsps, first_warp + warps):
        counts[w % smsps] += 1
    return tuple(counts)


@dataclass(frozen=True)
class Rates:
    """Per-SM costs in nanoseconds, derived once from an arch and its calibration."""

    arch: Arch
    clock_ghz: float
    fp32_ops_per_ns: float
    ex2_per_ns: float
    cvt_per_ns: float
    int_per_ns: float
    issue_lane_ops_per_ns: float
    smem_bytes_per_ns: float
    port_bytes_per_ns: float
    tmem_bytes_per_ns: float
    l2_bytes_per_ns: float
    hbm_bytes_per_ns: float
    l2_latency_ns: float
    hbm_latency_ns: float
    tma_extra_ns: float
    tensor_efficiency: float
    shared_tensor_core: bool = False
    """The tensor core interleaves the MMA groups different issuers issue at the same instant
    (``SharedTensorCore``; the mechanism ``shared_tensor``, on by default) instead of serving whole
    groups in issue order."""
    tensor_cuda_coupling: float = 0.0
    """Fraction of a CUDA-core/SFU op's time that it holds the tensor core of its sub-partitions
    (1 - the calibration's ``tensor_cuda_overlap``; the ``pipe_coupling`` mechanism, G1): 0 overlaps
    for free, 1 serialises. Used with the shared tensor core only."""
    smem_fills: bool = False
    """Fills and TMA-store reads take shared-memory bandwidth on the ``lsu`` server with lds/sts (the
    ``smem_fills`` mechanism, G3)."""
    smem_operands: bool = False
    """The tensor core's shared-memory operand reads do too (the ``smem_operands`` mechanism, G3)."""
    mma_sync_fraction: float = 1.0
    """The fraction of the arch's mma.sync rate the warps resident on an SM reach (the ``mma_sync_warps``
    mechanism, G5, on a FIFO tensor core; gpusim/sim/mma_sync_rate.py)."""
    mma_sync_issuing_rate: WarpRate | None = None
    """With the ``mma_sync_issuing`` mechanism on a shared tensor core: the arch's mma.sync rate by the
    warps issuing it at each moment (``SharedTensorCore.sync_rate``, one for every SM), in place of the
    static fraction."""
    barrier_wake_ns: float = 0.0
    """How long a warp that waited at a named barrier or turnstile takes to issue again once it
    completes (the ``sync_latency`` mechanism, G12; 0: in the same instant)."""
    mbarrier_wake_ns: float = 0.0
    """The same for an mbarrier: a stage ring's acquire or wait, an event barrier, a chunk landing."""

    @classmethod
    def from_arch(cls, arch: Arch, *, shared_tensor_core: bool = False, pipe_coupling: bool = False,
                  smem_fills: bool = False, smem_operands: bool = False,
                  mma_sync_fraction: float = 1.0, mma_sync_issuing_rate: WarpRate | None = None,
                  sync_latency: bool = False, l2_clock: bool = False) -> Rates:  # fmt: skip
        """Rates at the sustained clock, with the calibration block's efficiencies and fractions
        (``sync_latency``: barrier wake-up times from the arch's cycles at that clock; ``l2_clock``: the
        L2 bandwidth scaled from the max boost clock to that clock)."""
        cal = arch.calibration
        ghz = arch.sustained_clock_mhz / 1000
        cc = arch.cuda_cores
        eff = cal.cuda_core_issue_efficiency
        smem = arch.sm.smem_bandwidth_bytes_per_clk * ghz
        tmem_clk = arch.sm.tmem_read_bytes_per_clk if arch.sm.tmem_read_bytes_per_clk else smem / ghz
        l2_listed = arch.memory.l2_bandwidth_bytes_per_s * cal.l2_bandwidth_fraction / 1e9
        return cls(
            arch=arch,
            clock_ghz=ghz,
            fp32_ops_per_ns=cc.fp32_flops_per_clk_per_sm / 2 * ghz * eff,
            ex2_per_ns=cc.ex2_per_clk_per_sm * ghz * eff,
            cvt_per_ns=cc.cvt_per_clk_per_sm * ghz * eff,
            int_per_ns=cc.int32_ops_per_clk_per_sm * ghz * eff,
            issue_lane_ops_per_ns=arch.sm.warp_schedulers_per_sm * 32 * ghz * eff,
            smem_bytes_per_ns=smem,
            port_bytes_per_ns=smem,
            tmem_bytes_per_ns=tmem_clk * ghz,
            l2_bytes_per_ns=l2_listed * (ghz * 1000 / arch.clocks.boost_clock_mhz if l2_clock else 1.0),
            hbm_bytes_per_ns=arch.memory.hbm_bandwidth_bytes_per_s * cal.hbm_bandwidth_fraction / 1e9,
            l2_latency_ns=arch.memory.l2_hit_latency_ns * cal.latency_scale,
            hbm_latency_ns=arch.memory.hbm_latency_ns * cal.latency_scale,
            tma_extra_ns=(arch.tma_latency_extra_ns or 0.0) * cal.latency_scale,
            tensor_efficiency=cal.tensor_issue_efficiency,
            shared_tensor_core=shared_tensor_core,
            tensor_cuda_coupling=1.0 - cal.tensor_cuda_overlap
            if pipe_coupling and shared_tensor_core
            else 0.0,
            smem_fills=smem_fills,
            smem_operands=smem_operands,
            mma_sync_fraction=mma_sync_fraction,
            mma_sync_issuing_rate=mma_sync_issuing_rate,
            barrier_wake_ns=(arch.sm.barrier_wake_cycles or 0.0) / ghz if sync_latency else 0.0,
            mbarrier_wake_ns=(arch.sm.mbarrier_wake_cycles or 0.0) / ghz if sync_latency else 0.0,
        )

    def mma_flops_per_ns(self, unit: str, dtype: str, where: str) -> float:
        """Tensor-core FLOP/ns of one SM for ``unit`` and ``dtype``; refuses what the arch lacks."""
        spec = self.arch.tensor_cores.unit(unit)
        if spec is None:
            have = [u for u in ("mma_sync", "wgmma", "tcgen05") if self.arch.tensor_cores.unit(u)]
            raise ScheduleRefused(f"{where}: {unit} does not exist on {self.arch.id} (sm_{self.arch.sm_version}); "
                                  f"it has {', '.join(have)}")  # fmt: skip
        if dtype not in spec.dtypes:
            raise ScheduleRefused(f"{where}: {unit} on {self.arch.id} has no {dtype} path; "
                                  f"supported: {', '.join(spec.dtypes)}")  # fmt: skip
        rate = spec.dtypes[dtype].flops_per_clk_per_sm * self.clock_ghz * self.tensor_efficiency
        return rate * self.mma_sync_fraction if unit == "mma_sync" else rate


@dataclass(eq=False)
class SimSM:
    """One simulated SM standing for ``weight`` identical SMs: its agents and memory ports."""

    env: simpy.Environment
    index: int
    weight: int
    rates: Rates
    net: FlowNetwork
    record_spans: bool = False
    span_labels: bool = True
    """Whether the agents' and ports' recorded spans keep what work they were (traces, timelines) or
    only when they were busy (the attribution)."""
    servers: dict[str, FifoServer | SharedTensorCore] = field(default_factory=dict)
    ingress: Port | None = None
    egress: Port | None = None
    tensor_flops: float = 0.0
    _cuda_plans: dict[tuple[int, tuple[int, ...]], _CudaPlan] = field(default_factory=dict, repr=False)
    """The servers and rates of each CUDA-core op shape (mix, warps per SMSP) met so far."""

    def __post_init__(self) -> None:
        for pipe in PIPES:
            if pipe in SUB_PARTITIONED_PIPES:
                for smsp in range(self.smsps):
                    name = sub_server_name(pipe, smsp)
                    self.servers[name] = FifoServer(self.env, name, 1.0, spans=self._span_log())
            elif pipe == "tensor" and self.rates.shared_tensor_core:
                self.servers[pipe] = SharedTensorCore(
                    self.env, pipe, sync_rate=self.rates.mma_sync_issuing_rate, spans=self._span_log()
                )
            else:
                self.servers[pipe] = FifoServer(self.env, pipe, 1.0, spans=self._span_log())
        cap = self.rates.port_bytes_per_ns
        self.ingress = Port(self.net, f"sm{self.index}.in", cap, self.weight, spans=self._span_log())
        self.egress = Port(self.net, f"sm{self.index}.out", cap, self.weight, spans=self._span_log())

    def _span_log(self) -> BusyLog | None:
        if not self.record_spans:
            return None
        return SpanLog() if self.span_labels else BusyLog()

    @property
    def smsps(self) -> int:
        """Sub-partitions (warp schedulers) of the SM."""
        return self.rates.arch.sm.warp_schedulers_per_sm

    def pipe_servers(self, pipe: str) -> list[FifoServer]:
        """The servers of ``pipe``: one per SMSP for a sub-partitioned pipe, else the SM's one."""
        if pipe in SUB_PARTITIONED_PIPES:
            return [self.servers[sub_server_name(pipe, j)] for j in range(self.smsps)]
        return [self.servers[pipe]]

    def pipe_busy_ns(self, pipe: str) -> float:
        """Busy time of ``pipe`` as a share of the whole SM's pipe (a sub-partitioned pipe: the mean
        over its SMSPs)."""
        servers = self.pipe_servers(pipe)
        return sum(s.busy_ns for s in servers) / len(servers)

    # ---- the cost model: what each kind of work charges to this SM's agents ------------------------

    def pipe_share(self, warps: int) -> float:
        """Fraction of an SM-wide pipe that a role of ``warps`` warps can drive (one warp per scheduler)."""
        schedulers = self.rates.arch.sm.warp_schedulers_per_sm
        return min(warps, schedulers) / schedulers

    def transfer(self, nbytes: float, *, miss: float, write: bool, tma: bool = False,
                 on_done: Callable[[], Any] | None = None) -> simpy.Event:  # fmt: skip
        """Move bytes through this SM's port and the chip's L2/HBM (``miss`` of them from HBM); the event
        fires when they land. ``tma`` adds the TMA unit's latency over a plain load."""
        rates = self.rates
        if write:
            miss = 1.0
            latency = rates.l2_latency_ns
        else:
            latency = (
                rates.l2_latency_ns * (1 - miss)
                + rates.hbm_latency_ns * miss
                + (rates.tma_extra_ns if tma else 0.0)
            )
        done = self.env.event()
        port = self.egress if write else self.ingress
        t = Transfer(
            bytes=nbytes,
            l2_coef=1.0,
            hbm_coef=miss,
            latency_ns=latency,
            weight=self.weight,
            on_done=on_done,
            done=done,
            is_write=write,
        )
        if nbytes <= 0:
            done.succeed()
            return done
        port.submit(t)  # type: ignore[union-attr]
        return done

    def smem_access(self, nbytes: float, label: str) -> simpy.Event:
        """lds/sts: shared-memory bytes through the LSU at the SM's shared-memory bandwidth."""
        return self.servers["lsu"].serve(nbytes / self.rates.smem_bytes_per_ns, label=label)

    def smem_charge(self, nbytes: float, label: str, operands: bool = False) -> float:
        """With the ``smem_fills`` mechanism (``smem_operands`` for the tensor core's ``operands``): book
        ``nbytes`` of shared-memory traffic that nothing waits on by itself (a fill landing, a TMA store
        reading its tile) on the LSU; returns when it ends."""
        if nbytes <= 0 or not (self.rates.smem_operands if operands else self.rates.smem_fills):
            return self.env.now
        return self.servers["lsu"].reserve(nbytes / self.rates.smem_bytes_per_ns, label=label)[1]

    def tmem_access(self, nbytes: float, label: str) -> simpy.Event:
        """tcgen05.ld/st: bytes through the TMEM datapath."""
        return self.servers["tmem"].serve(nbytes / self.rates.tmem_bytes_per_ns, label=label)

    def mma(self, unit: str, dtype: str, mnk: tuple[float, float, float], *, warps: int, cta_group: int,
            pair: list[SimSM], label: str, where: str, owner: str = "",
            a_space: str | None = None, smsp_warps: tuple[int, ...] = ()) -> tuple[simpy.Event, bool]:  # fmt: skip
        """Book one MMA on the tensor core(s); returns (event, synchronous): mma.sync blocks its warps
        until the result is there, wgmma/tcgen05 return at once and complete through the event.
        ``owner`` names the issuer (its groups run in order on a shared tensor core). ``a_space``: where A
        is read from (None: the unit's default); with the ``smem_operands`` mechanism the bytes the tensor
        core reads from shared memory (:func:`mma_operand_bytes`) take the LSU, and the MMA ends no
        sooner than they do. ``smsp_warps``: the issuing warps per sub-partition (mma.sync's rate follows
        the warps issuing it at the moment with the ``mma_sync_issuing`` mechanism)."""
        event, synchronous = self._mma(unit, dtype, mnk, warps=warps, cta_group=cta_group, pair=pair,
                                       label=label, where=where, owner=owner, smsp_warps=smsp_warps)  # fmt: skip
        if not self.rates.smem_operands:
            return event, synchronous
        operand_bytes = mma_operand_bytes(unit, mnk, a_space, dtype, cta_group)
        if operand_bytes <= 0:
            return event, synchronous
        sms = pair if cta_group == 2 and len(pair) == 2 else [self]
        reads_end = max(sm.smem_charge(operand_bytes, "mma operands", operands=True) for sm in sms)
        now = self.env.now
        if reads_end <= now:
            return event, synchronous
        return self.env.all_of([event, self.env.timeout(reads_end - now)]), synchronous

    def _mma(self, unit: str, dtype: str, mnk: tuple[float, float, float], *, warps: int, cta_group: int,
             pair: list[SimSM], label: str, where: str, owner: str,
             smsp_warps: tuple[int, ...] = ()) -> tuple[simpy.Event, bool]:  # fmt: skip
        m, n, k = mnk
        flops = 2.0 * m * n * k
        rate = self.rates.mma_flops_per_ns(unit, dtype, where)
        if self.rates.shared_tensor_core:
            return self._shared_mma(unit, flops, rate, warps=warps, cta_group=cta_group, pair=pair,
                                    label=label, where=where, owner=owner, smsp_warps=smsp_warps)  # fmt: skip
        if unit == "mma_sync":
            duration = flops / (rate * self.pipe_share(warps))
            self.tensor_flops += flops
            latency = self.rates.arch.tensor_cores.mma_sync.latency_cycles / self.rates.clock_ghz
            return self.servers["tensor"].serve(duration, label=label, extra_latency_ns=latency), True
        if cta_group == 2:
            if len(pair) != 2:
                raise ScheduleRefused(f"{where}: cta_group 2 needs launch.cta_pair")
            duration = flops / 2 / rate
            start = max(sm.servers["tensor"].free_at_ns for sm in pair)
            end = 0.0
            for sm in pair:
                _, end = sm.servers["tensor"].reserve(
                    duration, earliest_ns=max(start, self.env.now), label=label
                )
                sm.tensor_flops += flops / 2
        else:
            _, end = self.servers["tensor"].reserve(flops / rate, label=label)
            self.tensor_flops += flops
        return self.env.timeout(end - self.env.now), False

    def _shared_mma(self, unit: str, flops: float, rate: float, *, warps: int, cta_group: int,
                    pair: list[SimSM], label: str, where: str, owner: str,
                    smsp_warps: tuple[int, ...] = ()) -> tuple[simpy.Event, bool]:  # fmt: skip
        """``mma`` on tensor cores shared by the groups in flight (``SharedTensorCore``)."""
        if unit == "mma_sync":
            latency = self.rates.arch.tensor_cores.mma_sync.latency_cycles / self.rates.clock_ghz
            core = self.servers["tensor"]
            self.tensor_flops += flops
            event = core.submit(flops / rate, owner, label, cap=self.pipe_share(warps), latency_ns=latency,  # type: ignore[union-attr]
                                smsp_warps=smsp_warps)  # fmt: skip
            return event, True
        if cta_group == 2:
            if len(pair) != 2:
                raise ScheduleRefused(f"{where}: cta_group 2 needs launch.cta_pair")
            halves = []
            for sm in pair:
                halves.append(sm.servers["tensor"].submit(flops / 2 / rate, owner, label))  # type: ignore[union-attr]
                sm.tensor_flops += flops / 2
            return simpy.AllOf(self.env, halves), False
        self.tensor_flops += flops
        return self.servers["tensor"].submit(flops / rate, owner, label), False  # type: ignore[union-attr]

    def cuda(
        self, elems: float, mix: Mapping[str, float], *, smsp_warps: tuple[int, ...], label: str,
        owner: str = "",
    ) -> simpy.Event:  # fmt: skip
        """CUDA-core work: ``elems`` elements, each costing ``mix`` operations per pipe, spread evenly over
        the issuing warps, of which ``smsp_warps[j]`` sit on sub-partition j; each SMSP serves its share at
        a quarter of the SM's rate (its own pipes and warp scheduler). Ends when the busiest is done.
        With pipe coupling (G1) the op also holds its sub-partitions' share of the tensor core for the
        coupling times its time (a job queued by ``owner`` like its MMA groups; nothing waits on it)."""
        plan = self._cuda_plans.get((id(mix), smsp_warps))
        if plan is None or plan.mix is not mix:
            plan = self._cuda_plans[(id(mix), smsp_warps)] = _CudaPlan.of(self, mix, smsp_warps)
        warps, smsps = plan.warps, plan.smsps
        now = end = self.env.now
        longest = 0.0
        for per_element, rate, shares in plan.pipes:
            duration = elems * per_element / rate
            if duration <= 0:
                continue
            if duration > longest:
                longest = duration
            for server, count in shares:
                _, finish = server.reserve(duration * smsps * count / warps, now, label)
                if finish > end:  # max(end, finish)
                    end = finish
        coupling = self.rates.tensor_cuda_coupling
        if coupling > 0:
            core = self.servers["tensor"]
            core.submit(coupling * longest, owner, COUPLING_LABEL, cap=plan.used_smsps / smsps)  # type: ignore[union-attr]
        return self.env.timeout(end - self.env.now)


@dataclass(frozen=True, slots=True)
class _CudaPlan:
    """What a CUDA-core op of one mix on one set of warps books, worked out once: per pipe with work, the
    ops per element, the pipe's rate and the sub-partition servers with their warp counts."""

    mix: Mapping[str, float]
    warps: int
    smsps: int
    used_smsps: int
    pipes: tuple[tuple[float, float, tuple[tuple[FifoServer, int], ...]], ...]

    @classmethod
    def of(cls, sm: SimSM, mix: Mapping[str, float], smsp_warps: tuple[int, ...]) -> _CudaPlan:
        r = sm.rates
        per_pipe = (
            ("fp32", mix.get("fp32", 0.0), r.fp32_ops_per_ns),
            ("sfu", mix.get("ex2", 0.0), r.ex2_per_ns),
            ("cvt", mix.get("cvt", 0.0), r.cvt_per_ns),
            ("int", mix.get("int", 0.0), r.int_per_ns),
            ("issue", sum(mix.values()), r.issue_lane_ops_per_ns),
        )
        pipes = []
        for pipe, per_element, rate in per_pipe:
            if per_element == 0:
                continue  # no work on this pipe whatever the element count
            shares = tuple(
                (sm.servers[sub_server_name(pipe, smsp)], count)
                for smsp, count in enumerate(smsp_warps)
                if count
            )
            pipes.append((per_element, rate, shares))
        used = sum(1 for count in smsp_warps if count)
        return cls(mix, sum(smsp_warps), len(smsp_warps), used, tuple(pipes))  # type: ignore[arg-type]


def issued_tensor_flops(sms: Iterable[SimSM]) -> float:
    """Tensor FLOPs issued so far on the whole chip: each simulated SM's, times the SMs it stands for."""
    return sum(sm.tensor_flops * sm.weight for sm in sms)


def mma_operand_bytes(unit: str, mnk: tuple[float, float, float], a_space: str | None, dtype: str,
                      cta_group: int) -> float:  # fmt: skip
    """Bytes the tensor core reads from shared memory for one ``mma`` (on each CTA of a pair for
    ``cta_group`` 2): mma.sync reads registers (its fragments come through ldmatrix, an ``lds``); wgmma
    and tcgen05 read B from shared memory, and A unless it comes from registers or TMEM. A wgmma
    instruction covers 64 rows, so B is read once per 64 rows; a tcgen05 instruction covers the op's
    rows (a pair's 256 as two halves of 128, each CTA reading its half of A and of B)."""
    if unit == "mma_sync":
        return 0.0
    m, n, k = mnk
    elem = bytes_per_element(dtype)
    a_bytes = m * k * elem if a_space in (None, "smem") else 0.0
    b_bytes = n * k * elem * (math.ceil(m / 64) if unit == "wgmma" else 1)
    return (a_bytes + b_bytes) / (2 if cta_group == 2 else 1)
