"""Candidate spaces for the tuner: the tile, stage and cluster choices the real libraries consider.

- Hopper (sm_90) GEMMs: CUTLASS's warp-specialized kernels (cooperative: 128 or 256 rows, ping-pong: 64 or
  128 rows per consumer warpgroup; 64..256 columns; 1x1, 2x1 and 1x2 clusters; K tile of 128 bytes; as
  many stages as fit, like ``StageCountAutoCarveout``), for fp16/bf16/fp8 and tf32 (wgmma tf32); the
  stream-K kernel (128x128, 128x256, 256x128) where CUTLASS's heuristic would split the last wave.
- Blackwell (sm_100) GEMMs: CUTLASS's tcgen05 kernels, 1-SM and 2-SM (CTA pair) MMAs, 64..256 columns,
  clusters along N of 1 or 2.
- Ampere (sm_80+) GEMMs: CUTLASS's multistage cp.async tiles (128x256, 256x128, 128x128, 128x64, 64x128,
  64x64; K tile of 64 bytes; 3 to 6 stages), tf32 with the m16n8k8 instruction.
- Volta (sm_70) GEMMs: the mma.sync tiles of the same shapes with two-stage register staging (one or two
  CTAs per SM for tiles up to 128x128).
- fp32 / tf32 on CUDA cores (any arch): CUTLASS's SIMT sgemm tiles (128x128x8 with 32x64 warps and smaller).
- DeepGEMM FP8 (``gemm_fp8_deepgemm``): DeepGEMM's own list, BLOCK_M 64/128/256, BLOCK_N 16..256 in steps
  of 16, clusters 1x1, 1x2, 2x1 (deep_gemm ``get_best_config``); on sm_100 its 1D1D kernel
  (``gemm_fp8_deepgemm_sm100``), one candidate whose layout the schedule derives as DeepGEMM's heuristic does.
- Attention: FlashAttention-2 (BM 64/128, BN 32..128), FlashAttention-3 (tile_size_fwd_sm90's BM 128/192
  and BN 64..224 in steps of 16), FlashAttention-4 (BN 64/128, one or two Q stages).

Candidates name parameters the way the schedule spells them (``BM`` or ``BLOCK_M``), so the spaces work
before and after the schedules' vocabulary is unified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.dtypes import bytes_per_element, canonical_dtype

GEMM_KERNELS = ("auto:gemm", "auto", "gemm")
ATTENTION_KERNELS = ("auto:attention", "auto:attn", "attention")
GEMM_PROBLEM_KEYS = ("M", "N", "K", "dtype", "groups")
ATTENTION_PROBLEM_KEYS = (
    "batch",
    "heads",
    "heads_kv",
    "seqlen_q",
    "seqlen_kv",
    "head_dim",
    "causal",
    "dtype",
)
GEMM_SCHEDULES = ("gemm_tcgen05", "gemm_ws_cooperative", "gemm_ws_pingpong", "gemm_streamk", "gemm_cp_async",
                  "gemm_sync", "gemm_simt_fp32", "gemm_fp8_deepgemm", "gemm_fp8_deepgemm_sm100")  # fmt: skip
"""Every schedule ``gemm_space`` may name (what an ``auto:gemm`` prediction reads)."""
ATTENTION_SCHEDULES = ("attn_fa4_fwd", "attn_fa3_fwd", "attn_fa2_fwd")
"""Every schedule ``attention_space`` may name (what an ``auto:attention`` prediction reads)."""
FIT = "fit"
"""A STAGES value meaning: as many as the shared memory holds (the tuner resolves it with the checks)."""


@dataclass(frozen=True)
class Candidate:
    """One configuration the tuner may predict: a schedule and its parameter values."""

    schedule: str
    params: tuple[tuple[str, Any], ...]
    origin: str

    @property
    def overrides(self) -> dict[str, Any]:
        """The parameters as a mapping."""
        return dict(self.params)


def _spec_keys(schedule: str) -> set[str]:
    from gpusim.schedule.load import read_spec

    spec = read_spec(schedule)
    return {*spec.problem, *spec.params, *(getattr(spec, "aliases", None) or {})}


def _named(schedule: str, values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Spell each parameter as the schedule does: ``BM`` may be ``BLOCK_M`` and the reverse."""
    keys = _spec_keys(schedule)
    aliases = {"BM": "BLOCK_M", "BN": "BLOCK_N", "BLOCK_M": "BM", "BLOCK_N": "BN"}
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        name = key if key in keys or aliases.get(key) not in keys else aliases[key]
        out.append((name, value))
    return tuple(out)


SPLIT_K_CHOICES = (1, 2, 4, 8, 16)
"""Split-K factors tried when the output tiles alone cannot fill the SMs."""


def _splits(tiles_fill_sms: bool) -> tuple[int, ...]:
    return (1,) if tiles_fill_sms else SPLIT_K_CHOICES


def _k_tile(dtype: str, tile_bytes: int) -> int:
    return max(8, tile_bytes // max(1, int(bytes_per_element(dtype))))


STREAM_K_TILES = ((128, 128), (128, 256), (256, 128))
"""Output tiles of the stream-K candidates (the cooperative kernel's, without multicast)."""
STREAM_K_MIN_GAIN = 0.1
"""Stream-K is tried for a tile only when its whole-tile waves leave at least this fraction of the last
wave's slots idle over the kernel (1 - waves / ceil(waves)): below it, splitting can gain little, and
a stream-K simulation costs more than a data-parallel one (its CTAs all differ)."""


def _hopper(
    dtype: str, tiles_fill_sms: bool, shape: tuple[int, int, int] | None, sm_count: int
) -> list[Candidate]:
    """CUTLASS sm90 candidates; stream-K ones for ``shape`` (M, N, K) where they may help (None: none)."""
    bk = _k_tile(dtype, 128)
    out: list[Candidate] = [] if shape is None else _stream_k(bk, shape, sm_count)
    for bm, bn in ((128, 64), (128, 128), (128, 256), (256, 64), (256, 128)):
        for cluster_m in (1, 2):
            splits = _splits(tiles_fill_sms)
            for s in splits:
                values = {"BM": bm, "BN": bn, "BK": bk, "STAGES": FIT, "CLUSTER_M": cluster_m, "SPLITS": s}
                out.append(Candidate("gemm_ws_cooperative", _named("gemm_ws_cooperative", values),
                                     f"CUTLASS sm90 cooperative {bm}x{bn}x{bk}, cluster {cluster_m}x1"))  # fmt: skip
    for bm, bn in ((64, 64), (64, 128), (64, 256), (128, 64), (128, 128), (128, 256)):
        for cluster_n in (1, 2):
            values = {"BM": bm, "BN": bn, "BK": bk, "STAGES": FIT, "CLUSTER_N": cluster_n}
            out.append(Candidate("gemm_ws_pingpong", _named("gemm_ws_pingpong", values),
                                 f"CUTLASS sm90 ping-pong {bm}x{bn}x{bk}, cluster 1x{cluster_n}"))  # fmt: skip
    return out


def _stream_k(bk: int, shape: tuple[int, int, int], sm_count: int) -> list[Candidate]:
    """CUTLASS's sm90 stream-K kernel (``gemm_streamk``, decomposition ``heuristic``) for the tiles whose
    last wave the library's own heuristic would split: a partial last wave less than half full
    (gpusim/sim/streamk.py), and where splitting can gain at least ``STREAM_K_MIN_GAIN``. Elsewhere the
    heuristic keeps every tile data-parallel, which is the cooperative candidate with a 1x1 cluster.
    Not for grouped GEMMs (the schedule has no groups)."""
    from gpusim.sim.streamk import split_stream_k

    m, n, k = shape
    out: list[Candidate] = []
    for bm, bn in STREAM_K_TILES:
        tiles = -(-m // bm) * -(-n // bn)
        waves = tiles / sm_count
        if 1 - waves / math.ceil(waves) < STREAM_K_MIN_GAIN:
            continue
        if split_stream_k(tiles, -(-k // bk), sm_count, "heuristic").sk_tiles == 0:
            continue
        values = {"BM": bm, "BN": bn, "BK": bk, "STAGES": FIT}
        out.append(Candidate("gemm_streamk", _named("gemm_streamk", values),
                             f"CUTLASS sm90 stream-K {bm}x{bn}x{bk} (last wave split)"))  # fmt: skip
    return out


def _blackwell(dtype: str, tiles_fill_sms: bool) -> list[Candidate]:
    bk = _k_tile(dtype, 128)
    out: list[Candidate] = []
    for pair in (1, 0):
        for bn in (64, 128, 192, 256):
            for cluster_n in (1, 2):
                for s in _splits(tiles_fill_sms):
                    values = {
                        "PAIR": pair,
                        "BM": 128,
                        "BN": bn,
                        "BK": bk,
                        "CLUSTER_N": cluster_n,
                        "SPLITS": s,
                    }
                    mma = f"{256 if pair else 128}x{bn}"
                    out.append(Candidate("gemm_tcgen05", _named("gemm_tcgen05", values),
                                         f"CUTLASS sm100 {'2SM' if pair else '1SM'} MMA {mma}x{bk}, cluster "
                                         f"{1 + pair}x{cluster_n}"))  # fmt: skip
    return out


def _ampere(dtype: str, tiles_fill_sms: bool) -> list[Candidate]:
    bk = _k_tile(dtype, 64)
    out: list[Candidate] = []
    for bm, bn in ((128, 256), (256, 128), (128, 128), (128, 64), (64, 128), (64, 64)):
        warp_m, warp_n = min(64, bm), min(64, bn // 2 if bn >= 128 else bn)
        # a CUTLASS kernel runs as many CTAs per SM as its registers and shared memory allow: tiles up to
        # 128x128 also as two per SM, with the stages that leave room for both (128x128x32: 5 stages)
        for ctas in (1, 2) if bm * bn <= 128 * 128 else (1,):
            for s in _splits(tiles_fill_sms):
                values: dict[str, Any] = {"BM": bm, "BN": bn, "BK": bk, "WM": warp_m, "WN": warp_n, "STAGES": FIT,
                                          "SPLITS": s}  # fmt: skip
                if dtype == "tf32":
                    values["INSTR_K"] = 8  # mma.sync m16n8k8 for tf32
                if ctas > 1:
                    values["CTAS_PER_SM"] = ctas
                out.append(Candidate("gemm_cp_async", _named("gemm_cp_async", values),
                                     f"CUTLASS sm80 multistage {bm}x{bn}x{bk}, warp {warp_m}x{warp_n}"
                                     + (f", {ctas} CTAs per SM" if ctas > 1 else "")))  # fmt: skip
    return out


def _volta(dtype: str, tiles_fill_sms: bool) -> list[Candidate]:
    out: list[Candidate] = []
    for bm, bn in ((128, 256), (256, 128), (128, 128), (64, 128)):
        for ctas in (1, 2) if bm * bn <= 128 * 128 else (1,):  # two CTAs per SM where the budgets allow
            for s in _splits(tiles_fill_sms):
                values = {"BM": bm, "BN": bn, "BK": 32, "SPLITS": s, "CTAS_PER_SM": ctas}
                out.append(Candidate("gemm_sync", _named("gemm_sync", values),
                                     f"CUTLASS sm70 {bm}x{bn}x32, {ctas} CTA{'s' if ctas > 1 else ''} per SM"))  # fmt: skip
    return out


def _simt(dtype: str, tiles_fill_sms: bool) -> list[Candidate]:
    if dtype not in ("fp32", "tf32"):
        return []
    out: list[Candidate] = []
    for bm, bn, warp_m, warp_n in (
        (128, 128, 32, 64),
        (128, 64, 32, 32),
        (64, 128, 32, 64),
        (64, 64, 32, 32),
    ):
        for s in _splits(tiles_fill_sms):
            values = {"BM": bm, "BN": bn, "WM": warp_m, "WN": warp_n, "SPLITS": s}
            out.append(Candidate("gemm_simt_fp32", _named("gemm_simt_fp32", values),
                                 f"CUTLASS SIMT sgemm {bm}x{bn}x8, warp {warp_m}x{warp_n}"))  # fmt: skip
    return out


def deepgemm_space() -> list[Candidate]:
    """DeepGEMM's candidate list: BLOCK_M 64/128/256, BLOCK_N 16..256 step 16, clusters 1x1, 1x2, 2x1."""
    out: list[Candidate] = []
    for cluster_m, cluster_n in ((1, 1), (1, 2), (2, 1)):
        for bm in (64, 128, 256):
            for bn in range(16, 257, 16):
                values = {"BM": bm, "BN": bn, "CLUSTER_M": cluster_m, "CLUSTER_N": cluster_n}
                out.append(Candidate("gemm_fp8_deepgemm", _named("gemm_fp8_deepgemm", values),
                                     f"DeepGEMM {bm}x{bn}, cluster {cluster_m}x{cluster_n}"))  # fmt: skip
    return out


def deepgemm_sm100_space() -> list[Candidate]:
    """DeepGEMM's sm_100 FP8 kernel as its own heuristic configures it: ``gemm_fp8_deepgemm_sm100`` derives
    the block tile, swap-AB, the 2-CTA cluster and the stages from the problem the way
    SM100ArchSpec and get_best_config do, so the one candidate is the layout DeepGEMM would launch."""
    return [Candidate("gemm_fp8_deepgemm_sm100", (), "DeepGEMM sm100 1D1D, its heuristic's layout")]


SIZE_KEYS = ("M", "N", "K", "groups", "batch", "heads", "heads_kv", "seqlen_q", "seqlen_kv", "head_dim")
"""Problem sizes: whole numbers >= 1 when given as numbers."""


def check_problem(kind: str, problem: dict[str, Any]) -> None:
    """Refuse a problem size that is not a whole number >= 1 (NaN, infinities, fractions, zero, negatives,
    booleans) before any candidate is built; expressions (text) are left to the schedules."""
    from gpusim.errors import InputError, override_name

    for key in SIZE_KEYS:
        value = problem.get(key)
        if value is None or isinstance(value, str):
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        if isinstance(value, float) and value.is_integer():
            whole = True
        if not whole or value < 1:
            raise InputError(f"{kind}: {override_name(key, value)}: expected a whole number >= 1")


def _size(problem: dict[str, Any], key: str, default: int) -> int:
    value = problem.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, float) and not math.isfinite(value):
        return default
    return int(value) if abs(value) <= 2**62 else default


def gemm_space(arch: Arch, problem: dict[str, Any]) -> list[Candidate]:
    """The GEMM candidates for ``arch``: every generation whose MMA unit the arch has (the checks refuse
    the rest), newest first, with DeepGEMM's list for fp8 on sm_90; split-K variants only when the output
    tiles alone cannot fill the SMs."""
    dtype = canonical_dtype(str(problem.get("dtype", "bf16")))
    m, n, k = _size(problem, "M", 8192), _size(problem, "N", 8192), _size(problem, "K", 8192)
    tiles_fill_sms = (m // 128) * (n // 128) * _size(problem, "groups", 1) >= arch.sm_count
    version = arch.sm_version
    out: list[Candidate] = []
    if version >= 100:
        out += _blackwell(dtype, tiles_fill_sms)
        if dtype.startswith("fp8"):
            out += deepgemm_sm100_space()
    if version == 90:
        out += _hopper(
            dtype, tiles_fill_sms, (m, n, k) if _size(problem, "groups", 1) == 1 else None, arch.sm_count
        )
        if dtype.startswith("fp8"):
            out += deepgemm_space()
    if version >= 80:
        out += _ampere(dtype, tiles_fill_sms)
    if version >= 70:
        out += _volta(dtype, tiles_fill_sms)
        out += _simt(dtype, tiles_fill_sms)
    return out


def attention_space(arch: Arch, problem: dict[str, Any]) -> list[Candidate]:
    """Attention forward candidates: FA4 on sm_100, FA3 on sm_90, FA2 on sm_80 and later."""
    out: list[Candidate] = []
    if arch.sm_version >= 100:
        for bn in (64, 128):
            for q_stage in (1, 2):
                values = {"BN": bn, "Q_STAGE": q_stage}
                out.append(Candidate("attn_fa4_fwd", _named("attn_fa4_fwd", values),
                                     f"FlashAttention-4 {128 * q_stage}x{bn}"))  # fmt: skip
    if arch.sm_version == 90:
        for bm in (128, 192):
            for bn in range(64, 225, 16):
                values = {"BM": bm, "BN": bn}
                out.append(
                    Candidate("attn_fa3_fwd", _named("attn_fa3_fwd", values), f"FlashAttention-3 {bm}x{bn}")
                )
    if arch.sm_version >= 80:
        for bm in (64, 128):
            for bn in (32, 64, 128):
                values = {"BM": bm, "BN": bn}
                out.append(
                    Candidate("attn_fa2_fwd", _named("attn_fa2_fwd", values), f"FlashAttention-2 {bm}x{bn}")
                )
    return out


def schedules_read(kernel: str) -> tuple[str, ...] | None:
    """The schedules a search of ``kernel`` may simulate (None: not a search)."""
    if kernel in GEMM_KERNELS:
        return GEMM_SCHEDULES
    if kernel in ATTENTION_KERNELS:
        return ATTENTION_SCHEDULES
    return None


def space_for(kernel: str, arch: Arch, problem: dict[str, Any]) -> list[Candidate]:
    """The candidates of ``kernel``: ``auto:gemm``, ``auto:attention``, ``gemm_fp8_deepgemm`` or any
    schedule with tunable tile parameters (its slice of the GEMM / attention spaces)."""
    if kernel in GEMM_KERNELS:
        return gemm_space(arch, problem)
    if kernel in ATTENTION_KERNELS:
        return attention_space(arch, problem)
    if kernel == "gemm_fp8_deepgemm":
        return deepgemm_space()
    pool = [*gemm_space(arch, problem), *attention_space(arch, problem)]
    return [c for c in pool if c.schedule == kernel]
