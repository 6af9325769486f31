"""Turn the kernels' raw per-CTA records (kernels/micro/common.cuh) into measured quantities.

Pure functions over numpy arrays, so they are tested with synthetic records. Rates are per SM per SM
clock (cycles from %clock64 of the same SM), the median over CTAs (one CTA per SM); clocks are
%clock64 cycles over %globaltimer nanoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.calibrate.micro.catalog import INLINE_OPS, MMA_SYNC_FLOP, SIDE_OPS, WGMMA_FLOP, Variant

RECORD_WORDS = 8
"""64-bit words per record (common.cuh)."""
WGMMA_SLOTS = 3
"""Records per CTA of wgmma_bench.cu (kMaxWarpgroups)."""
CLOCK_SAMPLES = 64
"""Samples per CTA of tensor_clock.cu and l2_clock.cu (kSamples)."""
SAMPLE_WORDS = {"tensor_clock": 2, "l2_clock": 3}
"""64-bit words per sample of the experiments that sample over time: (%clock64, %globaltimer) and, in
l2_clock.cu, the reader passes done."""
FLAG_TIMEOUT = 1
C0, C1, N0, N1, WORK, SMID, FLAGS = range(7)


class TimedOut(ValueError):
    """A kernel's wait loop hit its deadline: its numbers are not a measurement."""


@dataclass(frozen=True)
class Quantity:
    """One measured number of one variant."""

    metric: str
    value: float
    unit: str
    role: str
    """Which warps it describes: mma, side, inline, sm, chip."""
    extra: dict[str, Any] = field(default_factory=dict)


def _cycles(r: np.ndarray) -> np.ndarray:
    return (r[..., C1] - r[..., C0]).astype(np.float64)


def _ns(r: np.ndarray) -> np.ndarray:
    return (r[..., N1] - r[..., N0]).astype(np.float64)


def clock_mhz(records: np.ndarray) -> float:
    """Median over CTAs of cycles / ns x 1000 (records shaped (ctas, 8))."""
    ns = _ns(records)
    ok = ns > 0
    if not ok.any():
        raise ValueError("no CTA recorded a positive %globaltimer interval")
    return float(np.median(_cycles(records)[ok] / ns[ok] * 1000.0))


def _median_rate(work: np.ndarray, cycles: np.ndarray) -> float:
    ok = cycles > 0
    if not ok.any():
        raise ValueError("no CTA recorded a positive cycle count")
    return float(np.median(work[ok] / cycles[ok]))


def _check_flags(records: np.ndarray, what: str) -> None:
    if np.any(records[..., FLAGS] & FLAG_TIMEOUT):
        raise TimedOut(f"{what}: a wait loop hit its deadline (see kernels/micro/common.cuh)")


def derive_wgmma(v: Variant, records: np.ndarray) -> list[Quantity]:
    """wgmma_bench.cu: records shaped (ctas, WGMMA_SLOTS, 8)."""
    wgs = v.args["mma_wgs"]
    side = next(n for n, c in SIDE_OPS.items() if c == v.args["side_op"])
    inline = next(n for n, c in INLINE_OPS.items() if c == v.args["inline_op"])
    out: list[Quantity] = []
    if wgs:
        mma = records[:, :wgs, :]
        start = mma[:, :, C0].min(axis=1).astype(np.float64)
        cycles = mma[:, :, C1].max(axis=1).astype(np.float64) - start
        flop = mma[:, :, WORK].sum(axis=1).astype(np.float64) * WGMMA_FLOP * v.args["N"]
        clk = clock_mhz(mma[:, 0, :])
        out.append(Quantity("tensor_flops_per_clk_per_sm", _median_rate(flop, cycles), "FLOP/clk/SM", "mma",
                            {"clock_mhz": round(clk, 1)}))  # fmt: skip
        if inline != "none":
            ops = mma[:, :, FLAGS].sum(axis=1).astype(np.float64)  # the MMA records carry the inline op count
            scale = 2.0 if inline == "ffma" else 1.0
            metric = "fp32_flops_per_clk_per_sm" if inline == "ffma" else "ex2_per_clk_per_sm"
            out.append(Quantity(metric, _median_rate(ops * scale, cycles), "FLOP/clk/SM" if scale == 2 else "op/clk/SM",
                                "inline"))  # fmt: skip
    if side != "none":
        rec = records[:, wgs, :]
        _check_flags(rec, v.name)
        work = rec[:, WORK].astype(np.float64)
        if side == "ex2":
            q = ("ex2_per_clk_per_sm", 1.0, "op/clk/SM")
        elif side == "ffma":
            q = ("fp32_flops_per_clk_per_sm", 2.0, "FLOP/clk/SM")
        else:
            q = ("smem_bytes_per_clk_per_sm", 1.0, "B/clk/SM")
        extra = {} if wgs else {"clock_mhz": round(clock_mhz(rec), 1)}
        out.append(Quantity(q[0], _median_rate(work * q[1], _cycles(rec)), q[2], "side", extra))
    return out


def derive_mma_sync(v: Variant, records: np.ndarray) -> list[Quantity]:
    """mma_sync_bench.cu: records shaped (ctas, 8)."""
    cycles = _cycles(records)
    extra = {"clock_mhz": round(clock_mhz(records), 1)}
    if v.args["chains"] == 1:  # one dependent chain per warp: cycles per mma.sync = its latency
        per = float(np.median(cycles[cycles > 0])) / v.args["iters"]
        return [Quantity("mma_latency_cycles", per, "cycles", "mma", extra)]
    flop = records[:, WORK].astype(np.float64) * MMA_SYNC_FLOP
    return [Quantity("tensor_flops_per_clk_per_sm", _median_rate(flop, cycles), "FLOP/clk/SM", "mma", extra)]


def derive_tensor_clock(v: Variant, records: np.ndarray, samples: np.ndarray) -> list[Quantity]:
    """tensor_clock.cu: records (ctas, 8), samples (ctas, CLOCK_SAMPLES, 2) of (cycles, ns).

    The steady clock is the median over CTAs of each CTA's median over the second half of its sample
    windows; the first window's clock is reported beside it (the clock before power settles)."""
    counts = records[:, FLAGS].astype(int)  # tensor_clock.cu stores the number of samples taken there
    steady, first = [], []
    for cta in range(records.shape[0]):
        n = int(min(counts[cta], samples.shape[1]))
        if n < 3:
            continue
        s = samples[cta, :n, :].astype(np.float64)
        dc, dn = np.diff(s[:, 0]), np.diff(s[:, 1])
        ok = dn > 0
        mhz = dc[ok] / dn[ok] * 1000.0
        if len(mhz) < 2:
            continue
        first.append(mhz[0])
        steady.append(float(np.median(mhz[len(mhz) // 2 :])))
    if not steady:
        raise ValueError(f"{v.name}: fewer than 3 clock samples per CTA")
    flop_per = WGMMA_FLOP * 256 if v.kernel.endswith("wgmma") else MMA_SYNC_FLOP
    flop = records[:, WORK].astype(np.float64) * flop_per
    return [
        Quantity("sm_clock_mhz", float(np.median(steady)), "MHz", "sm", {"window": "steady", "min_mhz": round(min(steady), 1)}),
        Quantity("sm_clock_mhz", float(np.median(first)), "MHz", "sm", {"window": "first"}),
        Quantity("tensor_flops_per_clk_per_sm", _median_rate(flop, _cycles(records)), "FLOP/clk/SM", "mma"),
    ]  # fmt: skip


def derive_l2(v: Variant, records: np.ndarray) -> list[Quantity]:
    """l2_bandwidth.cu: records (ctas, 8); per-SM bytes per clock and the chip's total GB/s."""
    work = records[:, WORK].astype(np.float64)
    span_ns = float(records[:, N1].max()) - float(records[:, N0].min())
    if span_ns <= 0:
        raise ValueError(f"{v.name}: no positive %globaltimer span")
    clk = clock_mhz(records)
    total = float(work.sum())
    return [
        Quantity("l2_bytes_per_clk_per_sm", _median_rate(work, _cycles(records)), "B/clk/SM", "sm",
                 {"clock_mhz": round(clk, 1)}),
        Quantity("memory_bandwidth", total / span_ns, "GB/s", "chip", {"bytes_moved": int(total), "ctas": records.shape[0]}),
    ]  # fmt: skip


def derive_l2_clock(v: Variant, records: np.ndarray, samples: np.ndarray) -> list[Quantity]:
    """l2_clock.cu: records (ctas, 2, 8) (readers, wgmma), samples (ctas, CLOCK_SAMPLES, 3) of (cycles, ns,
    passes). Over the second half of each CTA's sample windows (the clock settled under the power limit):
    the SM clock, the bytes each SM's readers pulled per ns and per clock, the chip's total; beside them the
    wgmma warpgroups' tensor rate (none when the variant runs no wgmma)."""
    readers, mma = records[:, 0, :], records[:, 1, :]
    counts = readers[:, FLAGS].astype(int)  # l2_clock.cu stores the number of samples taken there
    chunk = float(v.args["chunk_bytes"])
    mhz_by_cta, bytes_ns_by_cta = [], []
    for cta in range(records.shape[0]):
        n = int(min(counts[cta], samples.shape[1]))
        if n < 4:
            continue
        s = samples[cta, n // 2 : n, :].astype(np.float64)
        cycles, ns, passes = s[-1] - s[0]
        if ns <= 0 or cycles <= 0 or passes <= 0:
            continue
        mhz_by_cta.append(cycles / ns * 1000.0)
        bytes_ns_by_cta.append(passes * chunk / ns)
    if not mhz_by_cta:
        raise ValueError(f"{v.name}: fewer than 4 samples per CTA")
    mhz = float(np.median(mhz_by_cta))
    per_ns = float(np.median(bytes_ns_by_cta))
    out = [
        Quantity("sm_clock_mhz", mhz, "MHz", "sm", {"window": "steady", "min_mhz": round(min(mhz_by_cta), 1)}),
        Quantity("l2_bytes_per_ns_per_sm", per_ns, "B/ns/SM", "sm", {"clock_mhz": round(mhz, 1)}),
        Quantity("l2_bytes_per_clk_per_sm", per_ns / mhz * 1000.0, "B/clk/SM", "sm", {"clock_mhz": round(mhz, 1)}),
        Quantity("memory_bandwidth", float(np.sum(bytes_ns_by_cta)), "GB/s", "chip",
                 {"ctas": len(bytes_ns_by_cta), "window": "steady"}),
    ]  # fmt: skip
    if v.args["mma_on"] and int(mma[:, WORK].sum()) > 0:
        flop = mma[:, WORK].astype(np.float64) * WGMMA_FLOP * 128
        out.append(
            Quantity("tensor_flops_per_clk_per_sm", _median_rate(flop, _cycles(mma)), "FLOP/clk/SM", "mma")
        )
    return out


def derive_pipes(v: Variant, records: np.ndarray) -> list[Quantity]:
    """pipes.cu: records (ctas, 8); results of all the variant's ops together per SM per clock."""
    rate = _median_rate(records[:, WORK].astype(np.float64), _cycles(records))
    return [
        Quantity(
            "results_per_clk_per_sm", rate, "op/clk/SM", "sm", {"clock_mhz": round(clock_mhz(records), 1)}
        )
    ]


SYNC_METRICS = {0: "barrier_round_cycles", 1: "barrier_wake_cycles", 2: "mbarrier_wake_cycles"}
"""sync_latency.cu's modes and the quantity each measures."""


def derive_sync(v: Variant, records: np.ndarray) -> list[Quantity]:
    """sync_latency.cu: records (ctas, 8); cycles per round (mode 0) or per hand-off (modes 1 and 2: two
    hand-offs per iteration), the median over CTAs."""
    _check_flags(records, v.name)
    cycles = _cycles(records)
    ok = cycles > 0
    if not ok.any():
        raise ValueError(f"{v.name}: no CTA recorded a positive cycle count")
    mode = v.args["mode"]
    per = float(np.median(cycles[ok] / records[ok, WORK].astype(np.float64))) / (1 if mode == 0 else 2)
    return [Quantity(SYNC_METRICS[mode], per, "cycles", "sm", {"clock_mhz": round(clock_mhz(records), 1)})]


def derive(v: Variant, records: np.ndarray, samples: np.ndarray | None = None) -> list[Quantity]:
    """The quantities one variant measured (records shaped as its kernel writes them)."""
    if v.experiment in ("wgmma", "wgmma_overlap", "operand_path"):
        return derive_wgmma(v, records.reshape(-1, WGMMA_SLOTS, RECORD_WORDS))
    if v.experiment == "mma_sync":
        return derive_mma_sync(v, records.reshape(-1, RECORD_WORDS))
    if v.experiment == "tensor_clock":
        if samples is None:
            raise ValueError(f"{v.name}: no clock samples")
        return derive_tensor_clock(
            v,
            records.reshape(-1, RECORD_WORDS),
            samples.reshape(-1, CLOCK_SAMPLES, SAMPLE_WORDS[v.experiment]),
        )
    if v.experiment in ("l2_bandwidth", "l2_atomics"):
        return derive_l2(v, records.reshape(-1, RECORD_WORDS))
    if v.experiment == "l2_clock":
        if samples is None:
            raise ValueError(f"{v.name}: no samples")
        return derive_l2_clock(
            v,
            records.reshape(-1, 2, RECORD_WORDS),
            samples.reshape(-1, CLOCK_SAMPLES, SAMPLE_WORDS[v.experiment]),
        )
    if v.experiment == "sync_latency":
        return derive_sync(v, records.reshape(-1, RECORD_WORDS))
    if v.experiment == "pipes":
        return derive_pipes(v, records.reshape(-1, RECORD_WORDS))
    raise ValueError(f"unknown experiment '{v.experiment}'")
