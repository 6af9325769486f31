"""The microbenchmark variants ``gpusim measure --micro`` runs: one per (kernel, launch, arguments).

Pure data: nothing here needs a GPU or a compiler. Each variant names the source under kernels/micro/,
the kernel symbol, the threads per CTA, the runtime arguments and the gap of
``reference/engine-fidelity.md`` it settles (G1, G3, G4, G5, G6, G7, G9, G10, G12).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from gpusim.calibrate.micro.gen_wgmma import WGMMA_N
from gpusim.errors import InputError, quote

TARGET_CYCLES = 3_000_000
"""Cycles each timed kernel aims at (~1.7 ms at 1.8 GHz): long against launch and timer granularity,
short enough that the whole set runs in well under a minute."""
CLOCK_SECONDS = 2.0
"""How long each tensor-clock kernel runs (power and clock settle within about a second)."""

SIDE_OPS = {"none": 0, "ex2": 1, "ffma": 2, "lds": 3, "sts": 4, "bulk": 5}
"""wgmma_bench.cu's side_op codes: what the non-MMA warpgroups do."""
INLINE_OPS = {"none": 0, "ex2": 1, "ffma": 2}
"""wgmma_bench.cu's inline_op codes: work the MMA warps do between issue and wait."""

WGMMA_FLOP = 2 * 64 * 16
"""FLOP of one wgmma m64nNk16, per unit of N."""
MMA_SYNC_FLOP = 2 * 16 * 8 * 16
"""FLOP of one mma.sync m16n8k16."""
PIPE_MODES = ("ex2", "cvt_bf16", "cvt_e4m3", "ex2_cvt_bf16", "ex2_cvt_e4m3", "fmnmx", "ex2_fmnmx")
"""pipes.cu's modes in order: one op, or two interleaved 1:1."""
PIPES_ITERS = 1_500
"""Loop trips of pipes.cu (64 results per thread each): ~3 M cycles where MUFU's 16/clk/SM binds."""
L2_CLOCK_CHUNK_BYTES = 90 * 1024
"""Bytes each CTA of l2_clock.cu re-reads (132 SMs x 90 KiB = 11.6 MB: L2-resident, spread over both
partitions)."""
ATOMIC_CHUNK_BYTES = 128 * 1024
"""Bytes each CTA of l2_atomics.cu reduces into per pass (132 SMs x 128 KiB stays well inside an L2)."""
SYNC_ITERS = 50_000
"""Iterations of each barrier experiment (sync_latency.cu): 1-10 M cycles at the tens to a few hundred
cycles a round or hand-off takes."""

# cycles one unit of side work takes at the datasheet rate (to size side-only runs): ex2 at 16/clk,
# FFMA at 128/clk, 16-byte lds/sts at 128 B/clk, a 16 KiB bulk copy at 128 B/clk
_SIDE_CYCLES_PER_ITER = {"ex2": 8 * 8 * 128 / 16, "ffma": 8 * 8 * 128 / 128, "lds": 8 * 16 * 128 / 128,
                         "sts": 8 * 16 * 128 / 128, "bulk": 16384 / 128}  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """One timed kernel launch of an experiment."""

    name: str
    """Unique, stable id (rows carry it as ``variant=``)."""
    experiment: str
    """wgmma, wgmma_overlap, operand_path, mma_sync, tensor_clock, l2_bandwidth, l2_clock, l2_atomics, pipes
    or sync_latency."""
    source: str
    """File under kernels/micro/."""
    kernel: str
    """The extern "C" kernel symbol."""
    threads: int
    """Threads per CTA."""
    args: dict[str, int] = field(default_factory=dict)
    """Runtime arguments by name (the kernel's own names); iteration counts sized to TARGET_CYCLES."""
    settles: str = ""
    """The gaps of the audit this variant informs (``G1,G7``)."""
    needs_wgmma: bool = False
    """Only on sm_90a (wgmma is Hopper's; Blackwell has tcgen05 instead)."""
    one_sm: bool = False
    """Launch one CTA (one SM) instead of one per SM."""
    data: str = "random"
    """Operand contents: ``random`` bf16 in [-1, 1) or ``zero``."""

    @property
    def labels(self) -> dict[str, str | int]:
        """What the variant varies, for the rows' params (N, a, side, inline, warps, ...)."""
        keep = {
            k: v
            for k, v in self.args.items()
            if not k.endswith("iters") and k not in {"passes", "sample_every"}
        }
        if keep.get("mma_wgs") == 0:  # a side-only run: no instruction shape
            keep.pop("N", None)
            keep.pop("a_from_rmem", None)
        for key, table in (("side_op", SIDE_OPS), ("inline_op", INLINE_OPS)):
            if key in keep:
                keep[key] = next(n for n, c in table.items() if c == keep[key])
        return {**keep, "data": self.data}


def _wgmma(n: int, rs: bool, mma_wgs: int = 1, side: str = "none", side_wgs: int = 0, inline: str = "none",
           inline_count: int = 0, experiment: str = "wgmma", settles: str = "G7",
           one_sm: bool = False, steps: int = 4) -> Variant:  # fmt: skip
    # per iteration: `steps` wgmma m64nNk16 of N/2 cycles each at 4096 FLOP/clk
    mma_cycles = mma_wgs * steps * n / 2
    inline_cycles = _SIDE_CYCLES_PER_ITER.get(inline, 0) / 8 * inline_count
    mma_iters = int(TARGET_CYCLES / (mma_cycles + inline_cycles)) if mma_wgs else 0
    side_iters = int(TARGET_CYCLES / _SIDE_CYCLES_PER_ITER[side]) if side != "none" else 0
    parts = [f"wgmma_{'rs' if rs else 'ss'}_n{n}"] if mma_wgs else [f"side_{side}"]
    if mma_wgs > 1:
        parts.append(f"{mma_wgs}wg")
    if mma_wgs and side != "none":
        parts.append(f"beside_{side}")
    if inline != "none":
        parts.append(f"inline_{inline}x{inline_count}")
    if not mma_wgs and side_wgs > 1:
        parts.append(f"{side_wgs}wg")
    if one_sm:
        parts.append("1sm")
    if steps != 4:
        parts.append(f"k{steps}steps")
    return Variant(
        name="_".join(parts), experiment=experiment, source="wgmma_bench.cu",
        kernel=f"wgmma_{'rs' if rs else 'ss'}_n{n}" + (f"_k{steps}" if steps != 4 else ""),
        threads=128 * (mma_wgs + side_wgs),
        args={"mma_iters": mma_iters, "side_iters": 0 if mma_wgs else side_iters, "mma_wgs": mma_wgs,
              "side_op": SIDE_OPS[side], "inline_op": INLINE_OPS[inline], "inline_count": inline_count,
              "N": n, "a_from_rmem": int(rs)},
        settles=settles, needs_wgmma=True, one_sm=one_sm,
    )  # fmt: skip


def _variants() -> tuple[Variant, ...]:
    out: list[Variant] = []
    # G7: rate by N and operand source, one warpgroup and two (a cooperative GEMM's consumers)
    for n in WGMMA_N:
        for rs in (False, True):
            out.append(_wgmma(n, rs))
        out.append(_wgmma(n, False, mma_wgs=2))
    # one warpgroup, 16 wgmma per group: a per-group cost or a dependent accumulate's latency at N = 64
    for n, rs in ((64, False), (64, True), (128, False)):
        out.append(_wgmma(n, rs, steps=16))
    # G1: wgmma beside MUFU / FFMA on other warps of the same SMSPs, inline on the MMA warps, side alone
    for side in ("ex2", "ffma"):
        for n, rs, wgs in ((128, False, 1), (176, False, 1), (128, True, 1), (256, False, 2)):
            out.append(
                _wgmma(n, rs, mma_wgs=wgs, side=side, side_wgs=1, experiment="wgmma_overlap", settles="G1")
            )
        # inline work of about half and all of the MMA time per iteration (N=128: 4 x 64 cycles): one round
        # is 8 EX2 (64 cycles at 16/clk/SM) or 8 FFMA (8 cycles at 128/clk/SM) per thread of the warpgroup
        for count in (2, 4) if side == "ex2" else (16, 32):
            out.append(
                _wgmma(128, False, inline=side, inline_count=count, experiment="wgmma_overlap", settles="G1")
            )
        out.append(
            _wgmma(128, False, mma_wgs=0, side=side, side_wgs=1, experiment="wgmma_overlap", settles="G1")
        )
    # G3: wgmma SS / RS while other warps stream shared memory, or the TMA engine fills it
    for side in ("lds", "sts", "bulk"):
        out.append(_wgmma(128, False, side=side, side_wgs=1, experiment="operand_path", settles="G3"))
        out.append(_wgmma(256, False, side=side, side_wgs=1, experiment="operand_path", settles="G3"))
        out.append(_wgmma(256, True, side=side, side_wgs=1, experiment="operand_path", settles="G3"))
        out.append(
            _wgmma(128, False, mma_wgs=0, side=side, side_wgs=1, experiment="operand_path", settles="G3")
        )
    # G6: what the TMA engine brings from L2 into one SM's shared memory when that SM is alone
    out.append(_wgmma(128, False, mma_wgs=0, side="bulk", side_wgs=1, experiment="operand_path", settles="G3,G6",
                      one_sm=True))  # fmt: skip
    # G5: mma.sync m16n8k16 by warps per SMSP (8 chains per warp), with ldmatrix, and its latency
    for per_smsp in (1, 2, 4, 8):
        warps = 4 * per_smsp
        iters = int(TARGET_CYCLES / (8 * per_smsp * MMA_SYNC_FLOP / (4096 / 4)))
        for ldm in (0, 2):
            out.append(Variant(f"mma_sync_bf16_{per_smsp}w_per_smsp" + ("_ldmatrix" if ldm else ""), "mma_sync",
                               "mma_sync_bench.cu", "mma_sync_bf16_c8", 32 * warps,
                               {"iters": iters, "ldm_per_iter": ldm, "warps_per_smsp": per_smsp, "chains": 8},
                               "G5"))  # fmt: skip
        # the fragments software-pipelined (FA2's and CUTLASS sm80's register double buffering)
        out.append(Variant(f"mma_sync_bf16_{per_smsp}w_per_smsp_ldmatrix_db", "mma_sync", "mma_sync_bench.cu",
                           "mma_sync_bf16_c8_ldm_db", 32 * warps,
                           {"iters": iters, "ldm_per_iter": 2, "warps_per_smsp": per_smsp, "chains": 8}, "G5"))  # fmt: skip
    out.append(Variant("mma_sync_f16_4w_per_smsp", "mma_sync", "mma_sync_bench.cu", "mma_sync_f16_c8", 512,
                       {"iters": int(TARGET_CYCLES / (32 * MMA_SYNC_FLOP / 1024)), "ldm_per_iter": 0,
                        "warps_per_smsp": 4, "chains": 8}, "G5"))  # fmt: skip
    out.append(Variant("mma_sync_bf16_latency", "mma_sync", "mma_sync_bench.cu", "mma_sync_bf16_c1", 128,
                       {"iters": 100_000, "ldm_per_iter": 0, "warps_per_smsp": 1, "chains": 1}, "G5"))  # fmt: skip
    # G4: the clock a full tensor load sustains, zero vs random operands (iterations set from the clock)
    for data in ("zero", "random"):
        out.append(Variant(f"tensor_clock_wgmma_{data}", "tensor_clock", "tensor_clock.cu", "tensor_clock_wgmma", 256,
                           {"iters": 0, "sample_every": 0}, "G4", needs_wgmma=True, data=data))  # fmt: skip
        out.append(Variant(f"tensor_clock_mma_sync_{data}", "tensor_clock", "tensor_clock.cu", "tensor_clock_mma_sync",
                           512, {"iters": 0, "sample_every": 0}, "G4", data=data))  # fmt: skip
    # G6: L2 reads from one SM and from all (same 90 KiB block as FA3's K/V, or distinct blocks)
    for chunk_kib, same, one in (
        (90, 1, True),
        (90, 1, False),
        (90, 0, False),
        (16, 0, False),
        (1024, 0, True),
    ):
        passes = max(1, int(TARGET_CYCLES * 32 / (chunk_kib * 1024)))  # at ~32 B/clk/SM
        where = "1sm" if one else "all_sms"
        kind = "same" if same else "distinct"
        out.append(Variant(f"l2_read_{where}_{kind}_{chunk_kib}kib", "l2_bandwidth", "l2_bandwidth.cu", "l2_read", 1024,
                           {"chunk_bytes": chunk_kib * 1024, "same_chunk": same, "passes": passes}, "G6",
                           one_sm=one))  # fmt: skip
    # G6: the L2's bandwidth at two SM clocks: every SM reads its own L2-resident chunk beside wgmma work on zero
    # operands (the clock near its maximum) and on random ones (pulled down by the power limit), and alone
    for name, data, mma_on in (
        ("l2_clock_zero", "zero", 1),
        ("l2_clock_random", "random", 1),
        ("l2_clock_idle", "zero", 0),
    ):
        out.append(Variant(name, "l2_clock", "l2_clock.cu", "l2_read_beside_wgmma", 512,
                           {"chunk_bytes": L2_CLOCK_CHUNK_BYTES, "mma_on": mma_on}, "G6", needs_wgmma=True,
                           data=data))  # fmt: skip
    # G10: fp32 reductions into L2 (FA2 backward's dQ), each CTA on its own 128 KiB or all on the same, and
    # plain stores of the same traffic (the working set stays in L2)
    for name, mode in (("l2_red_distinct", 0), ("l2_red_same", 1), ("l2_store_distinct", 2)):
        out.append(Variant(name, "l2_atomics", "l2_atomics.cu", "l2_atomics", 1024,
                           {"chunk_bytes": ATOMIC_CHUNK_BYTES, "mode": mode,
                            "passes": int(TARGET_CYCLES * 32 / ATOMIC_CHUNK_BYTES)}, "G10"))  # fmt: skip
    # G9: which pipe the fp32 -> bf16 / FP8 conversions (P's packing) and FMNMX (the row max) issue on
    for mode, name in enumerate(PIPE_MODES):
        out.append(Variant(f"pipes_{name}", "pipes", "pipes.cu", "pipes", 512, {"iters": PIPES_ITERS, "mode": mode},
                           "G9"))  # fmt: skip
    # G12: a named-barrier round (4 warps, one per SMSP, and 16), and the wake-up of a warp blocked on a
    # named barrier or an mbarrier that another warp completes (two hand-offs per iteration)
    for name, mode, threads in (
        ("sync_bar_round_4w", 0, 128),
        ("sync_bar_round_16w", 0, 512),
        ("sync_bar_handoff", 1, 64),
        ("sync_mbarrier_handoff", 2, 64),
    ):
        out.append(Variant(name, "sync_latency", "sync_latency.cu", "sync_latency", threads,
                           {"iters": SYNC_ITERS, "mode": mode}, "G12"))  # fmt: skip
    names = [v.name for v in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise AssertionError(f"duplicate microbenchmark variant names: {sorted(dupes)}")
    return tuple(out)


VARIANTS: tuple[Variant, ...] = _variants()
"""Every variant, in run order."""

SOURCES: tuple[str, ...] = (
    "wgmma_bench.cu",
    "mma_sync_bench.cu",
    "tensor_clock.cu",
    "l2_bandwidth.cu",
    "l2_clock.cu",
    "sync_latency.cu",
    "pipes.cu",
    "l2_atomics.cu",
)
"""The microbenchmark sources (kernels/micro/)."""
WGMMA_ONLY_SOURCES = frozenset({"wgmma_bench.cu", "l2_clock.cu"})
"""Sources that build only for sm_90a."""


def variants_for(sm: str, only: str | None = None) -> list[Variant]:
    """The variants a device with SM target ``sm`` (``sm_90a``) runs; ``only``: comma-separated words, each
    an experiment's name (that experiment) or else a part of variants' names."""
    wgmma = sm.startswith("sm_90")
    words = [w.strip() for w in (only or "").split(",") if w.strip()]
    experiments = {v.experiment for v in VARIANTS}

    def wanted(v: Variant) -> bool:
        return not words or any(w == v.experiment if w in experiments else w in v.name for w in words)

    chosen = [v for v in VARIANTS if (wgmma or not v.needs_wgmma) and wanted(v)]
    if wgmma:  # on Hopper the clock is measured under wgmma load; mma.sync is the fallback elsewhere
        chosen = [v for v in chosen if not v.name.startswith("tensor_clock_mma_sync")]
    return chosen


TARGET_PATTERN = re.compile(r"sm_(\d{2,3})a?")
"""An SM target as nvcc spells it (``sm_90a``)."""
MIN_SM = 80
"""The oldest SM the microbenchmarks build for (bf16 mma.sync)."""


def check_request(target: str | None, only: str | None) -> None:
    """Refuse an unknown ``--target`` or an ``--only`` word no experiment or variant matches, before any
    build: the target must be ``sm_NN`` or ``sm_NNa`` at sm_80 or newer."""
    if target is not None:
        match = TARGET_PATTERN.fullmatch(target)
        if not match or not MIN_SM <= int(match.group(1)) <= 121:
            raise InputError(f"--target {quote(target, 40)}: expected an SM target such as sm_80, sm_90a or "
                             f"sm_100a (sm_{MIN_SM} to sm_121)")  # fmt: skip
    experiments = sorted({v.experiment for v in VARIANTS})
    for word in (w.strip() for w in (only or "").split(",")):
        if word and word not in experiments and not any(word in v.name for v in VARIANTS):
            close = difflib.get_close_matches(word, experiments, n=1, cutoff=0.0)
            raise InputError(f"--only {quote(word, 40)}: no experiment or variant name matches; experiments: "
                             f"{', '.join(experiments)}" + (f"; did you mean '{close[0]}'?" if close else ""))  # fmt: skip
