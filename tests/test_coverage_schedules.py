"""CUDA-core SGEMM, the TF32 paths auto:gemm picks per arch, and split-KV decode with a paged KV cache."""

from __future__ import annotations

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.autotune import search_gemm
from gpusim.schedule.load import load_schedule
from gpusim.sim.unitfields import UnitModel

SMALL_GEMM = {"M": 1024, "N": 1024, "K": 512}


def _predict(name: str, arch_id: str, **problem):
    return predict(name, arch_id, costs="datasheet", attribute=False, **problem)


def test_simt_sgemm_is_bounded_by_the_fp32_pipe_not_memory() -> None:
    p = _predict("gemm_simt_fp32", "a100", **SMALL_GEMM)
    arch = load_arch("a100")
    fp32_bound_us = 2 * 1024 * 1024 * 512 / (arch.fp32_peak_tflops() * 1e6)
    assert p.roofline_us == pytest.approx(fp32_bound_us, rel=1e-9)
    assert p.time_us >= fp32_bound_us
    assert p.utilization["fp32"] > 0.5
    assert p.utilization["tensor"] == 0.0


@pytest.mark.parametrize(
    ("arch_id", "dtype", "schedule"),
    [
        ("v100", "fp32", "gemm_simt_fp32"),
        ("v100", "tf32", "gemm_simt_fp32"),  # no TF32 tensor cores: cuBLAS runs the fp32 SIMT path
        ("a100", "fp32", "gemm_simt_fp32"),
        (
            "a100",
            "tf32",
            "gemm_tf32|gemm_cp_async",
        ),  # TF32 mma.sync: the tf32 or the multistage CUTLASS 2.x GEMM
    ],
)
def test_auto_gemm_picks_the_path_the_hardware_has(arch_id: str, dtype: str, schedule: str) -> None:
    best, _ = search_gemm(load_arch(arch_id), {**SMALL_GEMM, "dtype": dtype})
    assert best.choice is not None
    assert best.choice["schedule"] in schedule.split("|")


def test_tf32_on_hopper_uses_wgmma_with_128_byte_k_tiles() -> None:
    best, tried = search_gemm(load_arch("h100"), {"M": 2048, "N": 2048, "K": 1024, "dtype": "tf32"})
    assert best.choice is not None
    assert best.choice["schedule"] in ("gemm_ws_cooperative", "gemm_ws_pingpong")
    assert best.choice["params"]["BK"] == 32
    assert not any(c.schedule == "gemm_simt_fp32" and c.time_us and c.time_us < best.time_us for c in tried)


def test_bf16_never_tries_the_cuda_core_sgemm() -> None:
    _, tried = search_gemm(load_arch("a100"), {**SMALL_GEMM, "dtype": "bf16"})
    assert all(c.schedule != "gemm_simt_fp32" for c in tried)


def test_paged_kv_with_small_pages_gathers_with_cp_async_and_large_pages_use_tma() -> None:
    arch = load_arch("h100")
    problem = {"batch": 2, "seqlen_kv": 2048}
    small = load_schedule("attn_decode_splitkv", arch, {**problem, "PAGE_SIZE": 16})
    large = load_schedule("attn_decode_splitkv", arch, {**problem, "PAGE_SIZE": 256})
    assert small.env["TMA_KV"] == 0 and small.buffers["kp"].bytes > 0 and small.buffers["k"].bytes == 0
    assert large.env["TMA_KV"] == 1 and large.buffers["k"].bytes > 0 and large.buffers["kp"].bytes == 0
    assert small.roles["producer"].warps == 4 and large.roles["producer"].warps == 1


def test_split_kv_moves_the_kv_cache_once_and_more_splits_help_a_single_sequence() -> None:
    problem = {"batch": 1, "heads": 32, "heads_kv": 8, "seqlen_kv": 16384}
    one = _predict("attn_decode_splitkv", "h100", **problem, SPLITS=1)
    many = _predict("attn_decode_splitkv", "h100", **problem, SPLITS=16)
    kv_bytes = 2 * 8 * 16384 * 128 * 2
    assert one.hbm_gbps * one.time_us * 1e3 >= kv_bytes * 0.99
    assert many.time_us < one.time_us / 4


def test_gqa_packing_puts_a_kv_heads_query_heads_in_one_cta_and_splits_fill_the_sms() -> None:
    mha = load_schedule("attn_decode_splitkv", load_arch("h100"), {"heads": 32, "heads_kv": 32})
    gqa = load_schedule("attn_decode_splitkv", load_arch("h100"), {"heads": 32, "heads_kv": 4})
    assert mha.env["ROWS"] == 1 and mha.env["SPLITS"] == 1  # 8 x 32 CTAs already fill 132 SMs
    assert mha.launch.num_units == 8 * 32
    assert gqa.env["ROWS"] == 8 and gqa.env["MB"] == 1
    assert gqa.env["SPLITS"] == 132 // (8 * 4)  # 32 CTAs: split KV to cover the SMs once
    assert gqa.launch.num_units == 8 * 4 and gqa.launch.splits == gqa.env["SPLITS"]


def test_stream_k_covers_every_k_iteration_once_and_fills_a_part_empty_wave() -> None:
    from gpusim.sim.scheduler import plan_work
    from gpusim.sim.streamk import MIN_ITERS_PER_SK_UNIT

    arch = load_arch("h100")
    problem = {"M": 1536, "N": 1536, "K": 2048, "decomposition": "stream_k"}  # 72 tiles: one partial wave
    sched = load_schedule("gemm_streamk", arch, problem)
    plan = plan_work(sched, arch, group_identical=False)
    iters = sum(u["k_iters"] for slot in plan.slot_lists for cu in slot for u in cu)
    total = sched.env["TILES"] * sched.env["KT"]
    assert iters == total
    share = -(-total // arch.sm_count)
    per_slot = [sum(cu[0]["k_iters"] for cu in slot) for slot in plan.slot_lists]
    assert max(per_slot) <= share + 2 * (MIN_ITERS_PER_SK_UNIT - 1) and min(per_slot) > 0
    streamk = _predict("gemm_streamk", "h100", **problem)
    data_parallel = _predict("gemm_ws_cooperative", "h100", M=1536, N=1536, K=2048, CLUSTER_M=1)
    assert sched.env["TILES"] < arch.sm_count
    assert streamk.time_us < data_parallel.time_us
    # CUTLASS's heuristic keeps a last wave that is at least half full data-parallel
    heuristic = load_schedule("gemm_streamk", arch, {**problem, "decomposition": "heuristic"})
    assert all(u["k_iters"] == sched.env["KT"] for slot in plan_work(heuristic, arch).slot_lists
               for cu in slot for u in cu)  # fmt: skip


def test_fa3_backward_counts_two_and_a_half_forwards_and_causal_skips_half_the_blocks() -> None:
    arch = load_arch("h100")
    problem = {"batch": 2, "heads": 16, "seqlen_q": 2048}  # 512 CTAs: several waves
    bwd = load_schedule("attn_fa3_bwd", arch, problem)
    fwd = load_schedule("attn_fa3_fwd", arch, problem)
    assert bwd.flops == pytest.approx(2.5 * fwd.flops)
    full = _predict("attn_fa3_bwd", "h100", **problem)
    causal = _predict("attn_fa3_bwd", "h100", **problem, causal=1)
    assert 0.4 * full.time_us < causal.time_us < 0.75 * full.time_us


def test_fa3_backward_adds_every_dq_partial_into_dqaccum() -> None:
    """The dQ path: one fp32 reduce-add of BM x head_dim per (m-block, n-block) pair."""
    arch = load_arch("h100")
    sched = load_schedule("attn_fa3_bwd", arch, {"batch": 1, "heads": 1, "seqlen_q": 1024})
    env = sched.env
    p = _predict("attn_fa3_bwd", "h100", batch=1, heads=1, seqlen_q=1024)
    dq_bytes = env["NUM_N"] * 1024 * 128 * 4
    written = p.hbm_gbps * p.time_us * 1e3  # every byte the kernel moved through HBM
    assert written >= dq_bytes


def test_fa4_backward_runs_as_cta_pairs_from_head_dim_128_and_counts_five_gemms() -> None:
    arch = load_arch("b200")
    problem = {"batch": 1, "heads": 2, "seqlen_q": 1024}
    hd64 = load_schedule("attn_fa4_bwd", arch, {**problem, "head_dim": 64})
    hd128 = load_schedule("attn_fa4_bwd", arch, problem)
    deepseek = load_schedule("attn_fa4_bwd", arch, {**problem, "head_dim": 192, "head_dim_v": 128})
    assert hd64.env["PAIR"] == 0 and hd128.env["PAIR"] == 1 and deepseek.env["PAIR"] == 1
    fwd = load_schedule("attn_fa4_fwd", arch, problem)
    assert hd128.flops == pytest.approx(2.5 * fwd.flops)
    assert deepseek.flops == pytest.approx(2 * 1024 * 1024 * 2 * (3 * 192 + 2 * 128))
    p = _predict("attn_fa4_bwd", "b200", **problem, head_dim=192, head_dim_v=128)
    assert p.time_us >= p.roofline_us > 0


@pytest.mark.parametrize(("arch_id", "problem"), [("h100", {}), ("a100", {})])
def test_fa4_backward_is_refused_without_tcgen05(arch_id: str, problem: dict) -> None:
    from gpusim.errors import GpusimError

    with pytest.raises(GpusimError) as err:
        _predict("attn_fa4_bwd", arch_id, batch=1, heads=2, seqlen_q=1024, **problem)
    assert any(word in str(err.value) for word in ("tcgen05", "TMEM", "shared memory"))


def test_fa4_backward_at_head_dim_256_names_the_dedicated_kernels() -> None:
    from gpusim.errors import GpusimError

    with pytest.raises(GpusimError, match="attn_fa4_bwd_hd256_dq then attn_fa4_bwd_hd256_dkdv"):
        _predict("attn_fa4_bwd", "b200", batch=1, heads=2, seqlen_q=1024, head_dim=256)


HD256 = {"batch": 1, "heads": 4, "seqlen_q": 2048}


def test_fa4_hd256_backward_kernels_fill_the_sm_as_the_real_ones() -> None:
    """Shared memory, TMEM and registers as the dedicated kernels' _setup_attributes and setmaxnreg give them."""
    dq = _predict("attn_fa4_bwd_hd256_dq", "b200", **HD256)
    dkdv = _predict("attn_fa4_bwd_hd256_dkdv", "b200", **HD256)
    # dQ: Q and dO (64 KiB each, with LSE / dPsum), K, V and K^T (32 KiB each); dK/dV: six 32 KiB operand halves,
    # P and dS (16 KiB each), LSE and dPsum: both ~225 KiB of the 227 KiB
    assert dq.budgets["smem_bytes_per_cta"] - 230_400 in range(0, 1024)
    assert dkdv.budgets["smem_bytes_per_cta"] - 230_400 in range(0, 1024)
    assert dq.budgets["tmem_cols_per_cta"] == 512  # S 128 + dP 128 + dQ 256 (dS over dP)
    assert dkdv.budgets["tmem_cols_per_cta"] == 384  # dK 128 + dV 128 + S 64 + dP 64
    assert dq.budgets["max_regs_per_thread"] == 256  # the compute warpgroup's setmaxnreg
    assert dq.occupancy["cluster"] == dkdv.occupancy["cluster"] == [2, 1, 1]
    assert dq.occupancy["units"] == 16 * 4 and dkdv.occupancy["units"] == 32 * 4  # 128-query / 64-key CTAs


def test_fa4_hd256_backward_runs_seven_gemms_in_two_kernels() -> None:
    arch = load_arch("b200")
    dq = load_schedule("attn_fa4_bwd_hd256_dq", arch, HD256)
    dkdv = load_schedule("attn_fa4_bwd_hd256_dkdv", arch, HD256)
    fused_gemm = 2 * 4 * 2048 * 2048 * 256  # one query-key GEMM over every head
    assert dq.flops == 3 * fused_gemm  # S, dP, dQ
    assert dkdv.flops == 4 * fused_gemm  # S, dP, dV, dK
    for name in ("attn_fa4_bwd_hd256_dq", "attn_fa4_bwd_hd256_dkdv"):
        p = _predict(name, "b200", **HD256)
        assert p.time_us >= p.roofline_us > 0


@pytest.mark.parametrize("name", ["attn_fa4_bwd_hd256_dq", "attn_fa4_bwd_hd256_dkdv"])
def test_fa4_hd256_backward_kernels_exist_at_head_dim_256_only(name: str) -> None:
    from gpusim.errors import GpusimError

    with pytest.raises(GpusimError, match=r"\(head_dim, head_dim_v\) = \(256, 256\)"):
        _predict(name, "b200", **HD256, head_dim=128)
    with pytest.raises(GpusimError, match="tcgen05 does not exist"):
        _predict(name, "h100", **HD256)
    with pytest.raises(GpusimError, match=r"requires\.sixteen_bit"):
        _predict(name, "b200", **HD256, dtype="fp8_e4m3")
    with pytest.raises(GpusimError, match=r"requires\.epilogue_slices"):
        _predict(name, "b200", **HD256, EPI_COLS=48)  # 5 slices of 48 would drop 16 columns


def test_fa4_hd256_causal_trip_counts_follow_whole_pairs() -> None:
    """dQ: a pair of 128-row CTAs walks the key blocks up to its 256 rows' diagonal; dK/dV: a pair starts at the
    even m-block at or below its diagonal (an odd pair computes one fully masked block)."""
    arch = load_arch("b200")
    problem = {**HD256, "causal": 1}
    dq = load_schedule("attn_fa4_bwd_hd256_dq", arch, problem)
    dkdv = load_schedule("attn_fa4_bwd_hd256_dkdv", arch, problem)
    dq_units, dkdv_units = UnitModel(dq, ()), UnitModel(dkdv, ())
    assert [dq_units.unit((m, 0, 0), {}, m % 2)["N_END"] for m in range(4)] == [2, 2, 4, 4]
    assert [dkdv_units.unit((n, 0, 0), {}, n % 2)["M_BEGIN"] for n in range(8)] == [0, 0, 0, 0, 2, 2, 2, 2]
    many = {"batch": 2, "heads": 16, "seqlen_q": 2048}  # several waves: the causal work shrinks the time
    names = ("attn_fa4_bwd_hd256_dq", "attn_fa4_bwd_hd256_dkdv")
    full = [_predict(name, "b200", **many) for name in names]
    causal = [_predict(name, "b200", **many, causal=1) for name in names]
    for f, c in zip(full, causal, strict=True):
        assert 0.45 * f.time_us < c.time_us < 0.75 * f.time_us


def test_fa4_hd256_dkdv_sums_gqa_heads_in_tmem() -> None:
    """GQA: one dK/dV CTA pair per KV head walks all its query heads (no dKaccum); the dQ kernel keeps one CTA
    per query head and reads the shared KV head from L2."""
    mha = _predict("attn_fa4_bwd_hd256_dkdv", "b200", batch=1, heads=8, seqlen_q=2048)
    gqa = _predict("attn_fa4_bwd_hd256_dkdv", "b200", batch=1, heads=8, heads_kv=1, seqlen_q=2048)
    assert gqa.occupancy["units"] * 8 == mha.occupancy["units"]
    assert gqa.hbm_write_bytes < mha.hbm_write_bytes / 4  # dK and dV of one KV head
    dq_mha = _predict("attn_fa4_bwd_hd256_dq", "b200", batch=1, heads=8, seqlen_q=2048)
    dq_gqa = _predict("attn_fa4_bwd_hd256_dq", "b200", batch=1, heads=8, heads_kv=1, seqlen_q=2048)
    assert dq_gqa.occupancy["units"] == dq_mha.occupancy["units"]
    assert dq_gqa.hbm_read_bytes < dq_mha.hbm_read_bytes


@pytest.mark.parametrize(
    ("arch_id", "problem", "pair", "exp_emu"),
    [
        ("b200", {}, 1, 0.1875),  # 2-CTA hdim 128: ex2_emu_freq 10 from fragment 1
        ("b200", {"causal": 1}, 0, 0.125),  # causal: 1 CTA, freq 16
        ("b200", {"head_dim": 192, "head_dim_v": 128}, 1, 0.1875),
        ("gb200", {"head_dim": 192, "head_dim_v": 128, "causal": 1}, 0, 0.0625),
        ("b300", {"head_dim": 192, "head_dim_v": 128}, 1, 0.0),  # sm_103: fast hardware exp2
        ("b200", {"head_dim": 256}, 1, 0.0),  # the dedicated hdim-256 2-CTA kernel
        ("b200", {"head_dim": 256, "causal": 1}, 1, 0.0),  # a causal pair walks its last m-block's KV range
    ],
)
def test_fa4_forward_tiles_follow_the_tuning_table(
    arch_id: str, problem: dict, pair: int, exp_emu: float
) -> None:
    sched = load_schedule(
        "attn_fa4_fwd", load_arch(arch_id), {"batch": 1, "heads": 2, "seqlen_q": 2048, **problem}
    )
    assert sched.env["PAIR"] == pair and sched.env["EXP_EMU"] == pytest.approx(exp_emu)
    p = _predict("attn_fa4_fwd", arch_id, batch=1, heads=2, seqlen_q=2048, **problem)
    assert p.time_us >= p.roofline_us > 0


def test_fa4_forward_counts_the_v_width_and_the_deepseek_shape_fits_where_192_192_does_not() -> None:
    arch = load_arch("b200")
    deepseek = load_schedule("attn_fa4_fwd", arch, {"seqlen_q": 1024, "head_dim": 192, "head_dim_v": 128})
    assert deepseek.flops == pytest.approx(2 * 4 * 16 * 1024 * 1024 * (192 + 128))
    from gpusim.errors import ScheduleRefused

    with pytest.raises(ScheduleRefused, match="TMEM"):
        _predict("attn_fa4_fwd", "b200", seqlen_q=1024, head_dim=192)
