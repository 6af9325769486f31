"""The prediction summary: time, TFLOPS, bandwidth, utilization per unit, budgets and the bottleneck."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from gpusim.sim.engine import SimRun

UNIT_LABELS = {
    "tensor": "tensor core",
    "tma": "load port (TMA, cp.async, ldg)",
    "lsu": "LSU / shared memory",
    "fp32": "CUDA cores (fp32)",
    "sfu": "SFU (ex2)",
    "cvt": "conversions",
    "int": "integer",
    "issue": "warp issue",
    "tmem": "TMEM datapath",
    "hbm": "HBM",
    "l2": "L2",
}


@dataclass(frozen=True)
class Prediction:
    """A prediction, ready to print or dump as JSON."""

    schedule: str
    arch: str
    problem: dict[str, Any]
    time_us: float
    tflops: float
    hbm_gbps: float
    l2_gbps: float
    l2_hit_rate: float
    hbm_read_bytes: float
    hbm_write_bytes: float
    utilization: dict[str, float]
    budgets: dict[str, Any]
    occupancy: dict[str, Any]
    bottleneck: str
    costs: str
    clock_mhz: float
    roofline_us: float
    sim: dict[str, Any]
    choice: dict[str, Any] | None = None
    """For auto schedules: the chosen schedule and parameters, and every candidate tried."""
    attribution: dict[str, float] | None = None
    """Share of the kernel time per cause (report/attribution.py); only from a recorded simulation."""
    verdict: str | None = None
    """One-line bottleneck verdict from the attribution; only from a recorded simulation."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def summarize(run: SimRun) -> Prediction:
    """Turn a simulation into a prediction with utilizations and a one-sentence bottleneck."""
    arch, sched = run.arch, run.sched
    launch_ns = arch.calibration.launch_overhead_ns
    kernel_ns = max(run.kernel_ns, 1e-9)
    total_ns = kernel_ns + launch_ns
    sms_total = arch.sm_count
    util: dict[str, float] = {}
    for pipe in ("tensor", "fp32", "sfu", "cvt", "int", "issue", "lsu", "tmem"):
        busy = sum(sm.servers[pipe].busy_ns * sm.weight for sm in run.sms)
        util[pipe] = busy / (sms_total * kernel_ns)
    tma_busy = sum(sm.ingress.busy_ns * sm.weight for sm in run.sms)  # type: ignore[union-attr]
    util["tma"] = tma_busy / (sms_total * kernel_ns)
    net = run.net
    hbm_bytes = net.hbm_read_bytes + net.hbm_write_bytes
    l2_bytes = net.l2_read_bytes + net.l2_write_bytes
    util["hbm"] = hbm_bytes / (kernel_ns * arch.memory.hbm_bandwidth_bytes_per_s / 1e9)
    util["l2"] = l2_bytes / (kernel_ns * arch.memory.l2_bandwidth_bytes_per_s / 1e9)
    hit = 1 - net.hbm_read_bytes / net.l2_read_bytes if net.l2_read_bytes > 0 else 0.0
    peak = arch.dense_peak_tflops(sched.metrics_dtype)
    if peak is None and sched.metrics_dtype == "fp32":  # CUDA-core (SIMT) work: the FP32 pipe bounds it
        peak = arch.fp32_peak_tflops()
    compute_ns = sched.flops / (peak * 1e3) if peak else 0.0
    memory_ns = sched.compulsory_bytes / (arch.memory.hbm_bandwidth_bytes_per_s / 1e9)
    attribution = verdict = None
    if run.sms and run.sms[0].ingress is not None and run.sms[0].ingress.spans is not None:
        from gpusim.report.attribution import attribute

        attr = attribute(run)
        attribution, verdict = attr.shares, attr.verdict
    b = run.budgets
    occupancy = {
        "ctas_per_sm": b.ctas_per_sm,
        "warps_per_sm": b.warps_per_sm,
        "threads_per_cta": b.threads_per_cta,
        "units": run.plan.num_units,
        "waves": run.plan.num_waves,
        "cluster": list(sched.launch.cluster),
    }
    return Prediction(
        schedule=sched.name,
        arch=arch.id,
        problem={k: sched.env[k] for k in sched.symbols},
        time_us=total_ns / 1000,
        tflops=sched.flops / total_ns / 1e3,
        hbm_gbps=hbm_bytes / total_ns,
        l2_gbps=l2_bytes / total_ns,
        l2_hit_rate=max(0.0, hit),
        hbm_read_bytes=net.hbm_read_bytes,
        hbm_write_bytes=net.hbm_write_bytes,
        utilization={k: round(v, 4) for k, v in util.items()},
        budgets=b.as_dict(),
        occupancy=occupancy,
        bottleneck=bottleneck_sentence(util),
        costs=arch.calibration.origin,
        clock_mhz=arch.sustained_clock_mhz,
        roofline_us=max(compute_ns, memory_ns) / 1000,
        sim={
            "wall_s": round(run.wall_s, 4),
            "events": run.events,
            "simulated_sm_groups": len(run.plan.groups),
        },
        attribution=attribution,
        verdict=verdict,
    )


def bottleneck_sentence(util: dict[str, float]) -> str:
    """One sentence naming the busiest unit, or saying that nothing is saturated."""
    candidates = {k: v for k, v in util.items() if k not in ("issue",)}
    name, value = max(candidates.items(), key=lambda kv: kv[1])
    label = UNIT_LABELS.get(name, name)
    if value >= 0.6:
        return f"{label}-bound: {label} busy {value:.0%} of the kernel time"
    return (f"latency/synchronization-bound: no unit is saturated (busiest: {label} at {value:.0%}); "
            "the kernel waits on latencies, barriers or too little parallel work")  # fmt: skip


def prediction_tables(p: Prediction) -> list[Table]:
    """Rich tables for the text report."""
    head = Table(title=f"{p.schedule} on {p.arch}", show_header=False, title_justify="left")
    head.add_column("what", style="bold")
    head.add_column("value")
    problem = ", ".join(f"{k}={v}" for k, v in p.problem.items())
    rows = [
        ("problem", problem),
        ("time", f"{p.time_us:,.2f} us (roofline bound {p.roofline_us:,.2f} us)"),
        ("throughput", f"{p.tflops:,.1f} TFLOPS"),
        ("HBM", f"{p.hbm_gbps:,.0f} GB/s ({(p.hbm_read_bytes + p.hbm_write_bytes) / 1e9:,.3f} GB moved)"),
        ("L2", f"{p.l2_gbps:,.0f} GB/s, hit rate {p.l2_hit_rate:.1%}"),
        ("occupancy", ", ".join(f"{k}={v}" for k, v in p.occupancy.items())),
        (
            "shared memory",
            f"{p.budgets['smem_bytes_per_cta'] / 1024:.1f} KiB per CTA of "
            f"{p.budgets['smem_limit_per_block'] / 1024:.0f} KiB",
        ),
        (
            "registers",
            f"{p.budgets['registers_per_sm']:,} per SM of {p.budgets['registers_limit_per_sm']:,} "
            f"(max {p.budgets['max_regs_per_thread']} per thread)",
        ),
        ("TMEM", f"{p.budgets['tmem_cols_per_cta']} of {p.budgets['tmem_cols_limit']} columns"),
        ("bottleneck", p.bottleneck),
        *([("verdict", p.verdict)] if p.verdict else []),
        ("costs", f"{p.costs} parameters, SM clock {p.clock_mhz:,.0f} MHz"),
    ]
    if p.choice is not None:
        params = ", ".join(f"{k}={v}" for k, v in p.choice["params"].items()) or "defaults"
        tried = sum(1 for c in p.choice["candidates"] if c["time_us"] is not None)
        rows.insert(0, ("auto choice", f"{p.choice['schedule']} ({params}); {tried} candidates simulated"))  # fmt: skip
    for k, v in rows:
        head.add_row(k, v)
    util = Table(title="utilization (fraction of kernel time, all SMs)", title_justify="left")
    util.add_column("unit")
    util.add_column("busy", justify="right")
    for k, v in sorted(p.utilization.items(), key=lambda kv: -kv[1]):
        util.add_row(UNIT_LABELS.get(k, k), f"{v:.1%}")
    tables = [head, util]
    if p.attribution:
        from gpusim.report.attribution import CAUSE_LABELS

        attr = Table(title="where the time goes (critical path approximation)", title_justify="left")
        attr.add_column("cause")
        attr.add_column("share of kernel time", justify="right")
        for k, v in sorted(p.attribution.items(), key=lambda kv: -kv[1]):
            if v > 0:
                attr.add_row(CAUSE_LABELS.get(k, k), f"{v:.1%}")
        tables.append(attr)
    return tables
