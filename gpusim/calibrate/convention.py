"""Schedule families and the sources' FLOP conventions: every measured metric becomes a time."""

from __future__ import annotations

from gpusim.calibrate.measurements import Measurement

FAMILIES = ("gemm", "attention", "mla", "stream")
TIME_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
STREAM_ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "init": 1, "read": 1, "3pt": 2, "5pt": 2}
"""Arrays each stream op moves (read plus written), for GB/s rows without ``bytes_moved``."""


def family_of(schedule: str) -> str:
    """gemm, attention, mla, stream (or other) for a schedule name or ``a+b`` sum."""
    first = schedule.split("+")[0].strip()
    if first.startswith(("gemm", "auto:gemm")) or first == "auto":
        return "gemm"
    if first.startswith(("attn", "auto:attn")):
        return "attention"
    if first.startswith("mla"):
        return "mla"
    if first.startswith("stream"):
        return "stream"
    return "other"


def flops(m: Measurement, metric: str) -> float:
    """FLOPs of the measured run by the source's convention (raises ValueError when undefined)."""
    d = m.dims
    fam = family_of(m.schedule)
    if fam == "gemm":
        groups = int(m.params.get("groups", d.get("batch", 1)) or 1)
        return 2.0 * d["M"] * d["N"] * d["K"] * groups
    if fam == "attention":
        fwd = 4.0 * d["batch"] * d["seqlen_q"] * d["seqlen_kv"] * d["heads"] * d["head_dim"]
        if d.get("causal", 0):
            fwd /= 2
        return fwd * {"fwd_bwd_throughput": 3.5, "bwd_throughput": 2.5}.get(metric, 1.0)
    if fam == "mla":
        dv = int(m.params.get("head_dim_v", 512))
        return 2.0 * d.get("batch", 1) * d["seqlen_q"] * d["seqlen_kv"] * d["heads"] * (d["head_dim"] + dv)
    raise ValueError(f"no FLOP convention for schedule family '{fam}'")


def bytes_moved(m: Measurement) -> float:
    """Bytes a bandwidth figure counts: ``bytes_moved`` in params, else the stream's arrays."""
    if "bytes_moved" in m.params:
        return float(m.params["bytes_moved"])
    if family_of(m.schedule) == "stream" and "bytes" in m.params:
        op = str(m.params.get("op", "copy"))
        return STREAM_ARRAYS.get(op, 2) * float(m.params["bytes"])
    raise ValueError("memory_bandwidth row without bytes_moved (or a stream's bytes and op)")


def measured_time_us(m: Measurement) -> float:
    """The measured run's time in microseconds (raises ValueError for metrics that are not a time)."""
    metric, unit, v = m.metric, m.unit, m.value
    if v <= 0:
        raise ValueError(f"value {v} is not positive")
    if metric in ("time", "gpu_time", "kernel_time"):
        if unit not in TIME_UNITS:
            raise ValueError(f"time unit '{unit}' (expected one of {', '.join(TIME_UNITS)})")
        return v * TIME_UNITS[unit]
    if metric in ("throughput", "fwd_throughput", "bwd_throughput", "fwd_bwd_throughput"):
        scale = {"TFLOPS": 1e12, "GFLOPS": 1e9}.get(unit)
        if scale is None:
            raise ValueError(f"throughput unit '{unit}' (expected TFLOPS or GFLOPS)")
        return flops(m, metric) / (v * scale) * 1e6
    if metric == "memory_bandwidth":
        scale = {"GB/s": 1e9, "TB/s": 1e12}.get(unit)
        if scale is None:
            raise ValueError(f"bandwidth unit '{unit}' (expected GB/s or TB/s)")
        return bytes_moved(m) / (v * scale) * 1e6
    raise ValueError(f"metric '{metric}' is not a time, throughput or bandwidth")
