"""The simulated hardware of one SM and the rates the interpreter charges, from the arch."""

from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from gpusim.arch import Arch
from gpusim.errors import ScheduleRefused
from gpusim.sim.memory import FlowNetwork, Port
from gpusim.sim.servers import FifoServer

PIPES = ("tensor", "fp32", "sfu", "cvt", "int", "issue", "lsu", "tmem")


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

    @classmethod
    def from_arch(cls, arch: Arch) -> Rates:
        """Rates at the sustained clock, with the calibration block's efficiencies and fractions."""
        cal = arch.calibration
        ghz = arch.sustained_clock_mhz / 1000
        cc = arch.cuda_cores
        eff = cal.cuda_core_issue_efficiency
        smem = arch.sm.smem_bandwidth_bytes_per_clk * ghz
        tmem_clk = arch.sm.tmem_read_bytes_per_clk if arch.sm.tmem_read_bytes_per_clk else smem / ghz
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
            l2_bytes_per_ns=arch.memory.l2_bandwidth_bytes_per_s * cal.l2_bandwidth_fraction / 1e9,
            hbm_bytes_per_ns=arch.memory.hbm_bandwidth_bytes_per_s * cal.hbm_bandwidth_fraction / 1e9,
            l2_latency_ns=arch.memory.l2_hit_latency_ns * cal.latency_scale,
            hbm_latency_ns=arch.memory.hbm_latency_ns * cal.latency_scale,
            tma_extra_ns=(arch.tma_latency_extra_ns or 0.0) * cal.latency_scale,
            tensor_efficiency=cal.tensor_issue_efficiency,
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
        return spec.dtypes[dtype].flops_per_clk_per_sm * self.clock_ghz * self.tensor_efficiency


@dataclass(eq=False)
class SimSM:
    """One simulated SM standing for ``weight`` identical SMs: its agents and memory ports."""

    env: simpy.Environment
    index: int
    weight: int
    rates: Rates
    net: FlowNetwork
    record_spans: bool = False
    servers: dict[str, FifoServer] = field(default_factory=dict)
    ingress: Port | None = None
    egress: Port | None = None
    tensor_flops: float = 0.0

    def __post_init__(self) -> None:
        for pipe in PIPES:
            self.servers[pipe] = FifoServer(self.env, pipe, 1.0, spans=[] if self.record_spans else None)
        cap = self.rates.port_bytes_per_ns
        self.ingress = Port(
            self.net, f"sm{self.index}.in", cap, self.weight, spans=[] if self.record_spans else None
        )
        self.egress = Port(
            self.net, f"sm{self.index}.out", cap, self.weight, spans=[] if self.record_spans else None
        )
