"""What a microbenchmark CSV (``gpusim measure --micro``) says about an arch, and the calibration fields
``gpusim calibrate`` sets from it instead of fitting them.

Each :class:`MicroConstant` names the arch or calibration field it informs (``maps_to``) and how it was
computed from the rows (``how``); docs/microbenchmarks.md has the full table. Three of them are
calibration fields and are *applied* (held fixed at the measured value, not fitted):

- ``calibration.tensor_issue_efficiency`` = the best measured wgmma SS rate at the widest N (one or
  two warpgroups) / the arch's wgmma bf16 FLOP/clk/SM (archs without wgmma: the best mma.sync rate /
  the arch's mma.sync bf16 rate), within the fit's bounds [0.5, 1];
- ``calibration.sustained_clock_mhz`` = the steady SM clock under a full tensor load with random
  operands (only while the power model is off: with it on, the clock is the model's output);
- ``calibration.l2_bandwidth_fraction`` = the L2 read bandwidth of all SMs reading distinct 90 KiB
  blocks / the arch's ``memory.l2_bandwidth_bytes_per_s``, within [0.3, 1].

The rest are reported for the arch files (with the CSV as their source) and for mechanisms still to
come: the wgmma efficiency table by N and operand source (G7), the tensor/CUDA-core overlap coefficient
(G1), the shared-memory total while wgmma reads its operands beside other traffic (G3), the mma.sync
rate by warps per SMSP (G5: the GH100 arch files carry it since 2026-12-05) and latency, the zero-data
clock and the energy per tensor FLOP (G4), the one-SM L2 rate and whether the L2 follows the SM clock (G6:
the ``l2_clock`` mechanism), the barrier wake-up times (G12:
``sm.barrier_wake_cycles`` and ``sm.mbarrier_wake_cycles``, which the ``sync_latency`` mechanism uses).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.micro.rows import SCHEDULE_PREFIX

APPLIED_FIELDS = ("tensor_issue_efficiency", "sustained_clock_mhz", "l2_bandwidth_fraction")
"""Calibration fields a microbenchmark CSV sets (held fixed in the fit)."""


@dataclass(frozen=True)
class MicroConstant:
    """One constant identified by microbenchmark rows."""

    name: str
    value: float
    unit: str
    maps_to: str
    """The arch or calibration field it informs (``calibration.X`` fields are applied)."""
    how: str
    """The rows and arithmetic it comes from."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def is_micro(m: Measurement) -> bool:
    """Whether a row is a microbenchmark row (``schedule`` micro:...)."""
    return m.schedule.startswith(SCHEDULE_PREFIX)


def micro_rows(rows: list[Measurement], arch_id: str) -> list[Measurement]:
    """The well-formed microbenchmark rows of ``arch_id``."""
    return [m for m in rows if is_micro(m) and m.error is None and m.arch == arch_id]


def malformed_micro_rows(rows: list[Measurement], arch_id: str) -> dict[int, str]:
    """Why each malformed microbenchmark row of ``arch_id`` is left out (a NaN or negative value)."""
    return {m.index: str(m.error) for m in rows if is_micro(m) and m.error is not None and m.arch == arch_id}


def _index(rows: list[Measurement]) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for m in rows:
        role = str(m.params.get("role", ""))
        if m.params.get("window") not in (None, "steady"):
            role += ":" + str(m.params["window"])
        out[(str(m.params.get("variant", "")), m.metric, role)] = m.value
    return out


def _wgmma_peak(arch: Arch) -> float | None:
    unit = getattr(arch.tensor_cores, "wgmma", None)
    dtype = unit.dtypes.get("bf16") if unit is not None else None
    return dtype.flops_per_clk_per_sm if dtype is not None else None


def _mma_sync_peak(arch: Arch) -> float | None:
    unit = getattr(arch.tensor_cores, "mma_sync", None)
    dtype = unit.dtypes.get("bf16") if unit is not None else None
    return dtype.flops_per_clk_per_sm if dtype is not None else None


def _overlap(together_t: float, alone_t: float, together_s: float, alone_s: float) -> float:
    """1 when both run at their solo rates side by side, 0 when they take turns (f_t + f_s = 1)."""
    return min(1.0, max(0.0, together_t / alone_t + together_s / alone_s - 1.0))


L2_CLOCK_MIN_LOG_RATIO = 0.03
"""The l2_clock variants' clocks must differ by about 3% for the exponent to mean anything (power
throttling under random operands moves an H200 from ~1.9 to ~1.65 GHz, docs/measured-h200.md)."""


def identify(rows: list[Measurement], arch: Arch) -> list[MicroConstant]:
    """Every constant the microbenchmark rows of ``arch`` identify (rows of other archs are ignored)."""
    mine = micro_rows(rows, arch.id)
    if not mine:
        return []
    v = _index(mine)
    out: list[MicroConstant] = []
    tensor = "tensor_flops_per_clk_per_sm"
    peak = _wgmma_peak(arch)
    # G7: wgmma efficiency by N and operand source
    alone: dict[str, float] = {}
    for (variant, metric, role), value in sorted(v.items()):
        if (
            metric != tensor
            or role != "mma"
            or not variant.startswith("wgmma_")
            or "beside" in variant
            or "inline" in variant
        ):
            continue
        alone[variant] = value
        if peak:
            out.append(MicroConstant(f"wgmma_efficiency_{variant.removeprefix('wgmma_')}", value / peak, "fraction",
                                     "(G7, proposed) tensor_cores.wgmma efficiency by N and operand source",
                                     f"{variant} {value:.1f} FLOP/clk/SM / wgmma bf16 {peak:g}"))  # fmt: skip
    ss = {k: x for k, x in alone.items() if k.startswith("wgmma_ss_")}
    if ss and peak:
        widest = max(int(k.split("_n")[1].split("_")[0]) for k in ss)
        best_name, best = max(((k, x) for k, x in ss.items() if f"_n{widest}" in k), key=lambda kv: kv[1])
        out.append(MicroConstant("tensor_issue_efficiency", min(1.0, max(0.5, best / peak)), "fraction",
                                 "calibration.tensor_issue_efficiency",
                                 f"best wgmma SS rate at N={widest} ({best_name}: {best:.1f} FLOP/clk/SM) / "
                                 f"wgmma bf16 {peak:g}, within [0.5, 1]"))  # fmt: skip
    # G5: mma.sync rate by warps per SMSP, latency
    mpeak = _mma_sync_peak(arch)
    sync_rates = {
        k: x for (k, metric, role), x in v.items() if k.startswith("mma_sync_bf16_") and metric == tensor
    }
    for k, x in sorted(sync_rates.items()):
        out.append(MicroConstant(f"mma_sync_rate_{k.removeprefix('mma_sync_bf16_')}", x, "FLOP/clk/SM",
                                 "tensor_cores.mma_sync: dtypes.bf16.flops_per_clk_per_sm (the most warps "
                                 "per SMSP, no ldmatrix) and rate_by_warps_per_smsp (each count / that rate)", f"{k}" + (f", {x / mpeak:.3f} of the arch's {mpeak:g}" if mpeak else "")))  # fmt: skip
    if (lat := v.get(("mma_sync_bf16_latency", "mma_latency_cycles", "mma"))) is not None:
        out.append(MicroConstant("mma_sync_latency_cycles", lat, "cycles", "tensor_cores.mma_sync.latency_cycles",
                                 "mma_sync_bf16_latency: cycles per dependent m16n8k16, one warp per SMSP"))  # fmt: skip
    if peak is None and mpeak and (plain := [x for k, x in sync_rates.items() if "ldmatrix" not in k]):
        out.append(MicroConstant("tensor_issue_efficiency", min(1.0, max(0.5, max(plain) / mpeak)), "fraction",
                                 "calibration.tensor_issue_efficiency",
                                 f"best mma.sync bf16 rate {max(plain):.1f} / the arch's {mpeak:g}, within [0.5, 1]"))  # fmt: skip
    # G1 / G3: wgmma beside other work, inline work on the MMA warps
    side_metric = {"ex2": "ex2_per_clk_per_sm", "ffma": "fp32_flops_per_clk_per_sm", "lds": "smem_bytes_per_clk_per_sm",
                   "sts": "smem_bytes_per_clk_per_sm", "bulk": "smem_bytes_per_clk_per_sm"}  # fmt: skip
    for op, metric in side_metric.items():
        solo = v.get((f"side_{op}", metric, "side"))
        if solo is None:
            continue
        field = {"ex2": "cuda_cores.ex2_per_clk_per_sm", "ffma": "cuda_cores.fp32_flops_per_clk_per_sm"}.get(
            op, "sm.smem_bandwidth_bytes_per_clk"
        )
        unit = {"ex2": "op/clk/SM", "ffma": "FLOP/clk/SM"}.get(op, "B/clk/SM")
        out.append(MicroConstant(f"{op}_alone", solo, unit, field, f"side_{op}: one warpgroup alone"))
        for (variant, m, role), t in sorted(v.items()):
            if (
                m != tensor
                or role != "mma"
                or not (variant.endswith(f"_beside_{op}") or f"_inline_{op}x" in variant)
            ):
                continue
            base = variant.split("_beside_")[0].split("_inline_")[0]
            t_alone = alone.get(base)
            s_together = v.get((variant, metric, "inline" if "_inline_" in variant else "side"))
            if t_alone is None or s_together is None:
                continue
            gap = "G1" if op in ("ex2", "ffma") else "G3"
            target = "(G1, proposed) tensor_cuda_overlap: 1 free, 0 serial" if gap == "G1" else \
                "(G3) whether the tensor core's operand reads share sm.smem_bandwidth_bytes_per_clk"  # fmt: skip
            out.append(MicroConstant(f"overlap_{variant.removeprefix('wgmma_')}", _overlap(t, t_alone, s_together, solo),
                                     "fraction", target,
                                     f"tensor {t:.1f}/{t_alone:.1f} ({base} alone) + {op} {s_together:.1f}/{solo:.1f} "
                                     "(alone) - 1, within [0, 1]"))  # fmt: skip
            if gap == "G3" and "_n" in base:
                n = int(base.split("_n")[1].split("_")[0])
                operand_bytes = (0 if "_rs_" in base else 64 * 16 * 2) + n * 16 * 2
                total = s_together + t / (2 * 64 * 16 * n) * operand_bytes
                out.append(MicroConstant(f"smem_total_{variant.removeprefix('wgmma_')}", total, "B/clk/SM",
                                         "(G3, proposed) smem_tensor_read_bytes_per_clk: a total at "
                                         f"sm.smem_bandwidth_bytes_per_clk ({arch.sm.smem_bandwidth_bytes_per_clk:g}) "
                                         "means the operand reads share it",
                                         f"{op} {s_together:.1f} + operand reads {total - s_together:.1f} B/clk "
                                         f"(A {'0' if '_rs_' in base else '2048'} + B {32 * n} B per wgmma)"))  # fmt: skip
    # G4: the clock under tensor load
    for kind in ("wgmma", "mma_sync"):
        rnd = v.get((f"tensor_clock_{kind}_random", "sm_clock_mhz", "sm"))
        zero = v.get((f"tensor_clock_{kind}_zero", "sm_clock_mhz", "sm"))
        if rnd is not None:
            out.append(MicroConstant("sustained_clock_mhz", rnd, "MHz", "calibration.sustained_clock_mhz",
                                     f"tensor_clock_{kind}_random: steady %clock64/%globaltimer under a full "
                                     "tensor load, random bf16 operands"))  # fmt: skip
        if zero is not None:
            out.append(MicroConstant("clock_zero_data_mhz", zero, "MHz", "(G4) power model: zero operands draw less",
                                     f"tensor_clock_{kind}_zero: steady clock with zero operands"))  # fmt: skip
        power = v.get((f"tensor_clock_{kind}_random", "board_power_w", "chip"))
        rate = v.get((f"tensor_clock_{kind}_random", tensor, "mma"))
        if rnd is not None and power is not None and rate is not None and arch.power is not None:
            flops_per_s = rate * arch.sm_count * rnd * 1e6
            pj = (power - arch.power.static_power_w) / flops_per_s * 1e12
            out.append(MicroConstant("tensor_pj_per_flop_at_clock", pj, "pJ/FLOP",
                                     "power.tensor_fp16_pj_per_flop (after scaling to the max boost by the arch "
                                     "file's cubic law)", f"(board {power:.0f} W - static {arch.power.static_power_w:g} W) / "
                                     f"{flops_per_s / 1e12:.0f} TFLOP/s at {rnd:.0f} MHz (an upper bound)"))  # fmt: skip
    # G6: L2
    for variant, name, target in (
        ("l2_read_all_sms_distinct_90kib", "l2_bandwidth_fraction", "calibration.l2_bandwidth_fraction"),
        (
            "l2_read_all_sms_same_90kib",
            "l2_same_block_fraction",
            "(G6) crossbar: every SM reading the same blocks",
        ),
    ):
        gbs = v.get((variant, "memory_bandwidth", "chip"))
        if gbs is not None:
            listed = arch.memory.l2_bandwidth_bytes_per_s / 1e9
            value = min(1.0, max(0.3, gbs / listed)) if name == "l2_bandwidth_fraction" else gbs / listed
            out.append(MicroConstant(name, value, "fraction", target, f"{variant}: {gbs:.0f} GB/s / listed {listed:.0f} GB/s"
                                     + (", within [0.3, 1]" if name == "l2_bandwidth_fraction" else "")))  # fmt: skip
    if (tma := v.get(("side_bulk_1sm", "smem_bytes_per_clk_per_sm", "side"))) is not None:
        out.append(MicroConstant("tma_bytes_per_clk_1sm", tma, "B/clk/SM",
                                 "(G6, proposed) per-SM ingress cap of TMA fills from L2 (the engine: 128 B/clk)",
                                 "side_bulk_1sm: four 16 KiB cp.async.bulk in flight, one SM alone"))  # fmt: skip
    for variant in (
        "l2_read_1sm_same_90kib",
        "l2_read_1sm_distinct_1024kib",
        "l2_read_all_sms_distinct_90kib",
    ):
        per = v.get((variant, "l2_bytes_per_clk_per_sm", "sm"))
        if per is not None:
            out.append(MicroConstant(f"l2_bytes_per_clk_{variant.removeprefix('l2_read_')}", per, "B/clk/SM",
                                     "(G6, proposed) L2 bandwidth in B/clk/SM; one SM alone: the per-SM ingress cap",
                                     variant))  # fmt: skip
    # G6: does the L2 deliver bytes per SM clock (the l2_clock mechanism) or per second? The same readers at two
    # clocks: the exponent of the bandwidth's ratio in the clocks' ratio (1: per clock, 0: per second)
    bw = {d: v.get((f"l2_clock_{d}", "l2_bytes_per_ns_per_sm", "sm")) for d in ("zero", "random")}
    clk = {d: v.get((f"l2_clock_{d}", "sm_clock_mhz", "sm")) for d in ("zero", "random")}
    if all(x is not None and x > 0 for x in (*bw.values(), *clk.values())):
        log_clock = math.log(clk["random"] / clk["zero"])  # type: ignore[operator]
        if abs(log_clock) >= L2_CLOCK_MIN_LOG_RATIO:
            exponent = math.log(bw["random"] / bw["zero"]) / log_clock  # type: ignore[operator]
            out.append(MicroConstant("l2_clock_exponent", exponent, "",
                                     "(G6) the l2_clock mechanism: 1 = the L2 delivers bytes per SM clock (on), "
                                     "0 = per second (off)",
                                     f"l2_clock_random {bw['random']:.1f} B/ns/SM at {clk['random']:.0f} MHz against "
                                     f"l2_clock_zero {bw['zero']:.1f} at {clk['zero']:.0f} MHz: "
                                     "ln(bandwidth ratio) / ln(clock ratio)"))  # fmt: skip
    # G10: reductions against plain stores of the same traffic
    store = v.get(("l2_store_distinct", "memory_bandwidth", "chip"))
    for variant in ("l2_red_distinct", "l2_red_same"):
        red = v.get((variant, "memory_bandwidth", "chip"))
        if red is not None:
            out.append(MicroConstant(f"{variant.removeprefix('l2_')}_gbs", red, "GB/s",
                                     "(G10, proposed) an L2 atomic resource for reduce ops (FA2 backward's dQ): "
                                     "the engine charges them as plain stores today",
                                     f"{variant}: red.global.add.f32 bytes per second, all SMs"
                                     + (f" ({red / store:.2f} of plain stores, {store:.0f} GB/s)" if store else "")))  # fmt: skip
    # G9: does a conversion (or FMNMX) take MUFU's slots? 1: one pipe (1:1 pairs at the harmonic rate), 0: two
    # pipes (the pairs at twice the slower op's rate)
    ex2_rate = v.get(("pipes_ex2", "results_per_clk_per_sm", "sm"))
    for other in ("cvt_bf16", "cvt_e4m3", "fmnmx"):
        alone = v.get((f"pipes_{other}", "results_per_clk_per_sm", "sm"))
        both = v.get((f"pipes_ex2_{other}", "results_per_clk_per_sm", "sm"))
        if ex2_rate is None or alone is None or both is None:
            continue
        shared = 2 / (1 / ex2_rate + 1 / alone)
        separate = 2 * min(ex2_rate, alone)
        value = 1.0 if separate <= shared else min(1.0, max(0.0, (separate - both) / (separate - shared)))
        out.append(MicroConstant(f"{other}_shares_mufu", value, "fraction",
                                 "(G9) whether the op issues on the SFU pipe with ex2 (1) or on its own (0): "
                                 + ("cuda_cores.cvt_per_clk_per_sm" if other.startswith("cvt") else "the fp32 pipe"),
                                 f"pipes_ex2_{other} {both:.1f} op/clk/SM between {shared:.1f} (one pipe) and "
                                 f"{separate:.1f} (two); alone: ex2 {ex2_rate:.1f}, {other} {alone:.1f}"))  # fmt: skip
        out.append(MicroConstant(f"{other}_alone", alone, "op/clk/SM",
                                 "cuda_cores.cvt_per_clk_per_sm" if other.startswith("cvt") else
                                 "cuda_cores.fp32_flops_per_clk_per_sm / 2 (FMNMX)", f"pipes_{other}"))  # fmt: skip
    # G12: barrier wake-up (the sync_latency mechanism's arch fields)
    for variant, metric, field, how in (
        ("sync_bar_round_4w", "barrier_round_cycles", "sm.barrier_wake_cycles",
         "sync_bar_round_4w: cycles per bar.sync round of 4 warps (one per SMSP) arriving together"),
        ("sync_mbarrier_handoff", "mbarrier_wake_cycles", "sm.mbarrier_wake_cycles",
         "sync_mbarrier_handoff: cycles per hand-off, arrive on one warp to the next instruction of the "
         "warp spinning in try_wait on another SMSP"),
    ):  # fmt: skip
        value = v.get((variant, metric, "sm"))
        if value is not None:
            out.append(MicroConstant(field.removeprefix("sm."), value, "cycles", field, how))
    if (handoff := v.get(("sync_bar_handoff", "barrier_wake_cycles", "sm"))) is not None:
        out.append(MicroConstant("barrier_handoff_cycles", handoff, "cycles",
                                 "(G12) a warp blocked at bar.sync resuming after another's bar.arrive: "
                                 "compare with sm.barrier_wake_cycles (one field serves both)",
                                 "sync_bar_handoff: cycles per hand-off between two warps"))  # fmt: skip
    return out


def calibration_values(constants: list[MicroConstant], power: bool) -> dict[str, float]:
    """The calibration fields to hold fixed (``calibration.X`` constants; the clock only with the power
    model off)."""
    values: dict[str, float] = {}
    for c in constants:
        if c.maps_to.startswith("calibration."):
            name = c.maps_to.removeprefix("calibration.")
            if name == "sustained_clock_mhz" and power:
                continue
            values[name] = c.value
    return values
