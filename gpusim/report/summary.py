"""Text and CSV views of a :class:`~gpusim.result.Prediction` (formatting only)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from gpusim.report.attribution import CAUSE_LABELS
from gpusim.result import Prediction

UNIT_LABELS = {
    "tensor": "tensor core",
    "tensor_coupled": "tensor core held by CUDA-core work",
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


def costs_text(p: Prediction) -> str:
    """Which costs a prediction used, with the overlay file and the SM clock."""
    where = f" from {p.overlay}" if p.overlay else ""
    text = f"{p.costs}{where}; SM clock {p.clock_mhz:,.0f} MHz"
    if p.power_w is not None:
        limited = "power-limited" if p.sim.get("power_limited") else "at its ceiling"
        text += f" ({limited}, power model: {p.power_w:,.0f} W average)"
    return text


def key_values(values: dict[str, Any]) -> str:
    """``k=v, k=v``."""
    return ", ".join(f"{k}={v}" for k, v in values.items())


def prediction_tables(p: Prediction) -> list[Table]:
    """Rich tables for the text report: headline, utilization, and where the time goes."""
    head = Table(title=f"{p.schedule} on {p.arch}", show_header=False, title_justify="left")
    head.add_column("what", style="bold", no_wrap=True)
    head.add_column("value", overflow="fold")
    b = p.budgets
    rows = [
        ("problem", key_values(p.problem)),
        ("parameters", key_values(p.params) or "-"),
        ("time", f"{p.time_us:,.2f} us (roofline bound {p.roofline_us:,.2f} us)"),
        ("interval", p.interval.text),
        ("throughput", f"{p.tflops:,.1f} TFLOPS"),
        ("HBM", f"{p.hbm_gbps:,.0f} GB/s ({(p.hbm_read_bytes + p.hbm_write_bytes) / 1e9:,.3f} GB moved)"),
        ("L2", f"{p.l2_gbps:,.0f} GB/s, hit rate {p.l2_hit_rate:.1%}"),
        ("occupancy", key_values(p.occupancy)),
        ("shared memory", f"{b['smem_bytes_per_cta'] / 1024:.1f} KiB per CTA of "
                          f"{b['smem_limit_per_block'] / 1024:.0f} KiB"),
        ("registers", f"{b['registers_per_sm']:,} per SM of {b['registers_limit_per_sm']:,} "
                      f"(max {b['max_regs_per_thread']} per thread)"),
        ("TMEM", f"{b['tmem_cols_per_cta']} of {b['tmem_cols_limit']} columns"),
        ("verdict", p.verdict or "-"),
        ("costs", costs_text(p)),
    ]  # fmt: skip
    if p.choice is not None:
        params = key_values(p.choice["params"]) or "defaults"
        tried = sum(1 for c in p.choice["candidates"] if c["time_us"] is not None)
        rows.insert(0, ("auto choice", f"{p.choice['schedule']} ({params}); {tried} candidates simulated"))
    for k, v in rows:
        head.add_row(k, v)
    util = Table(title="busy, mean of all SMs", title_justify="left")
    util.add_column("unit")
    util.add_column("busy", justify="right")
    for k, v in sorted(p.utilization.items(), key=lambda kv: -kv[1]):
        util.add_row(UNIT_LABELS.get(k, k), f"{v:.1%}")
    tables = [head, util]
    if p.attribution:
        attr = Table(title="where the time goes", title_justify="left")
        attr.add_column("cause")
        attr.add_column("share of kernel time", justify="right")
        for k, v in sorted(p.attribution.items(), key=lambda kv: -kv[1]):
            if v > 0:
                attr.add_row(CAUSE_LABELS.get(k, k), f"{v:.1%}")
        tables.append(attr)
    return tables


def prediction_csv_row(p: Prediction) -> dict[str, Any]:
    """One flat CSV row of a prediction's headline numbers (problem and parameters as ``k=v;...``)."""
    return {
        "schedule": p.schedule,
        "arch": p.arch,
        "problem": ";".join(f"{k}={v}" for k, v in p.problem.items()),
        "params": ";".join(f"{k}={v}" for k, v in p.params.items()),
        "time_us": p.time_us,
        "interval_low_us": p.interval.low_us,
        "interval_high_us": p.interval.high_us,
        "tflops": p.tflops,
        "hbm_gbps": p.hbm_gbps,
        "l2_gbps": p.l2_gbps,
        "l2_hit_rate": p.l2_hit_rate,
        **{f"util_{k}": v for k, v in p.utilization.items()},
        "bottleneck": p.bottleneck,
        "verdict": p.verdict,
        "costs": p.costs,
        "overlay": p.overlay,
        "clock_mhz": p.clock_mhz,
        "model": ",".join(p.model),
        "power_w": p.power_w,
    }
