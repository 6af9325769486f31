"""FlashMLA decode (seesaw registers, split-KV balance, memory- vs compute-bound), DeepGEMM FP8
(K-major rule, promotion, grouped layouts) and Blackwell block-scaled MMA legality."""

from __future__ import annotations

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import ScheduleRefused
from gpusim.schedule.check import check_schedule
from gpusim.schedule.load import load_schedule
from gpusim.schedule.program import walk
from gpusim.sim.scheduler import plan_work, splitkv_balanced_parts

H800 = load_arch("h800")
B200 = load_arch("b200")
H100 = load_arch("h100")
MLA_SMALL = {"batch": 8, "seqlen_kv": 1024}


def _predict(name: str, arch, *, attribute: bool = False, **problem):
    return predict(name, arch, costs="datasheet", attribute=attribute, **problem)


# ---- FlashMLA: registers -------------------------------------------------------------------------


def test_seesaw_output_counts_32768_registers_and_fits_the_sm() -> None:
    sched = load_schedule("mla_decode_flashmla", H800, MLA_SMALL)
    rmem = sum(b.bytes // 4 for b in sched.buffers.values() if b.space == "rmem")
    assert rmem == 64 * 512 == 32_768  # the 64x512 fp32 output
    per_role = {b.role: b.bytes // 4 for b in sched.buffers.values() if b.space == "rmem"}
    assert per_role == {"wg0": 16_384, "wg1": 16_384}  # O_L and O_R: 128 registers per thread each
    budgets = check_schedule(sched, H800)
    assert budgets.max_regs_per_thread == 128
    assert budgets.registers_per_sm <= 65_536


def test_whole_output_in_one_warpgroup_is_refused_with_the_numbers() -> None:
    sched = load_schedule("mla_decode_flashmla", H800, {**MLA_SMALL, "SEESAW": 0})
    with pytest.raises(ScheduleRefused, match=r"32,768 registers .* 256 registers per thread > 255"):
        check_schedule(sched, H800)


# ---- FlashMLA: bottleneck -----------------------------------------------------------------------


def test_decode_is_memory_bound_with_few_query_heads() -> None:
    p = _predict("mla_decode_flashmla", H800, attribute=True, batch=16, heads=16, seqlen_kv=2048)
    assert p.bottleneck == "memory" and "HBM" in p.verdict, p.verdict
    assert p.utilization["hbm"] > 2 * p.utilization["tensor"]


def test_decode_is_compute_bound_with_many_query_heads_per_kv_head() -> None:
    p = _predict("mla_decode_flashmla", H800, attribute=True, batch=32, heads=128, seqlen_q=2, seqlen_kv=2048)
    assert p.bottleneck == "tensor_core", p.verdict
    assert p.utilization["tensor"] > p.utilization["hbm"]


def test_decode_time_grows_with_seqlen() -> None:
    short = _predict("mla_decode_flashmla", H800, batch=8, seqlen_kv=1024)
    long = _predict("mla_decode_flashmla", H800, batch=8, seqlen_kv=4096)
    assert long.time_us > 1.5 * short.time_us
    assert long.time_us >= long.roofline_us


def test_the_first_flashmla_release_is_slower_where_compute_bound_and_alike_where_memory_bound() -> None:
    """mla_decode_flashmla_v1 (Feb 2025: WG0 alone computes QK^T and the softmax, a __syncthreads per KV
    block) against the seesaw kernel, with the shipped h800 overlay (its power model puts a compute-bound
    decode near 1.3-1.4 GHz): the release note of the rewrite claims 5-15% on compute-bound workloads
    (580 -> 660 TFLOPS on H800), and both READMEs quote up to 3000 GB/s memory-bound. At the datasheet
    clock (1,830 MHz) the two are alike compute-bound too: the seesaw's overlap pays where the tensor
    core is slow against the memory system."""
    compute = {"batch": 64, "heads": 128, "seqlen_q": 2, "seqlen_kv": 4096}
    v1 = predict("mla_decode_flashmla_v1", H800, attribute=False, **compute)
    seesaw = predict("mla_decode_flashmla", H800, attribute=False, **compute)
    assert 1.05 <= v1.time_us / seesaw.time_us <= 1.15, (v1.time_us, seesaw.time_us)
    memory = {"batch": 64, "heads": 16, "seqlen_kv": 4096}
    v1 = predict("mla_decode_flashmla_v1", H800, attribute=False, **memory)
    seesaw = predict("mla_decode_flashmla", H800, attribute=False, **memory)
    assert abs(v1.time_us / seesaw.time_us - 1) < 0.05, (v1.time_us, seesaw.time_us)
    assert v1.hbm_gbps > 2_700


def test_the_first_flashmla_release_keeps_the_output_split_and_loads_with_cp_async() -> None:
    """Its 64x512 fp32 output is split between the warpgroups as in the seesaw kernel (128 registers per
    thread each), and K arrives by cp.async (WG1), not TMA."""
    sched = load_schedule("mla_decode_flashmla_v1", H800, MLA_SMALL)
    per_role = {b.role: b.bytes // 4 for b in sched.buffers.values() if b.space == "rmem"}
    assert per_role == {"wg0": 16_384, "wg1": 16_384}
    ops = {stmt.op for role in sched.roles.values() for stmt, _ in walk(role.program)}
    assert "cp_async" in ops and "tma_load" not in ops
    check_schedule(sched, H800)


# ---- split-KV scheduling -------------------------------------------------------------------------


def test_splitkv_balanced_evens_out_uneven_requests() -> None:
    blocks = [3, 200, 17, 64, 1, 129, 90, 40]
    parts = splitkv_balanced_parts(blocks, parts=16, overhead=5)
    covered: dict[int, int] = {}
    for segs in parts:
        for s in segs:
            covered[s.request] = covered.get(s.request, 0) + s.block_end - s.block_begin
    assert covered == dict(enumerate(blocks))  # every block assigned exactly once
    work = [sum(s.block_end - s.block_begin + 5 for s in segs) for segs in parts]
    # every part carries about the same payload (the last takes the remainder)
    assert max(work) / (sum(work) / len(work)) < 1.05
    assert min(work[:-1]) / max(work) > 0.85
    big = [s for segs in parts for s in segs if s.request == 1]
    assert len(big) > 1 and all(s.n_splits == len(big) for s in big)


def test_mla_units_carry_segment_fields() -> None:
    sched = load_schedule("mla_decode_flashmla", H800, {"batch": 3, "seqlen_kv": 4096})
    plan = plan_work(sched, H800, group_identical=False)
    units = [cu[0] for slot in plan.slot_lists for cu in slot]
    assert sched.env["PARTS"] == 66
    by_m: dict[int, int] = {}
    for u in units:
        by_m[u["m"]] = by_m.get(u["m"], 0) + u["blocks"]
    assert by_m == {0: 3 * 64, 1: 3 * 64}  # each m-block walks every KV block once
    assert any(u["is_split"] for u in units)
    per_slot = [sum(cu[0]["blocks"] for cu in slot) for slot in plan.slot_lists if slot]
    assert max(per_slot) - min(per_slot) <= 5


# ---- DeepGEMM FP8 --------------------------------------------------------------------------------


def test_fp8_wgmma_refuses_mn_major_operands() -> None:
    sched = load_schedule("gemm_fp8_deepgemm", H800, {"M": 1024, "N": 1024, "K": 1024, "B_MAJOR": "mn"})
    with pytest.raises(ScheduleRefused, match=r"fp8_e4m3 on h800 needs K-major operands.*B is MN-major"):
        check_schedule(sched, H800)
    bf16 = load_schedule(
        "gemm_fp8_deepgemm", H800, {"M": 1024, "N": 1024, "K": 1024, "dtype": "bf16", "B_MAJOR": "mn"}
    )
    check_schedule(bf16, H800)  # 16-bit wgmma may read MN-major B


def test_fp8_promotion_runs_on_cuda_cores() -> None:
    p = _predict("gemm_fp8_deepgemm", H800, M=1024, N=1024, K=2048)
    assert p.utilization["fp32"] > 0
    assert p.time_us >= p.roofline_us


def test_masked_grouped_layout_skips_padding_blocks() -> None:
    base = {"groups": 4, "M": 512, "N": 1024, "K": 1024, "layout": "masked"}
    full = _predict("gemm_fp8_deepgemm", H800, **base)
    part = _predict("gemm_fp8_deepgemm", H800, **base, masked_m=100)
    assert part.time_us < full.time_us
    contiguous = _predict("gemm_fp8_deepgemm", H800, groups=4, M=512, N=1024, K=1024)
    assert contiguous.tflops > 0


# ---- block-scaled formats ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["nvfp4", "mxfp8", "mxfp4"])
def test_block_scaled_legal_on_b200(dtype: str) -> None:
    p = _predict("gemm_tcgen05", B200, M=1024, N=1024, K=1024, dtype=dtype)
    assert p.tflops > 0


def test_block_scale_vector_mismatch_is_refused_with_the_rule() -> None:
    sched = load_schedule(
        "gemm_tcgen05", B200, {"M": 1024, "N": 1024, "K": 1024, "dtype": "nvfp4", "SCALE_VEC": 32}
    )
    with pytest.raises(
        ScheduleRefused, match=r"nvfp4 on b200 needs scale_vec 16 with ue4m3 scales.*got scale_vec 32"
    ):
        check_schedule(sched, B200)


def test_block_scale_dtype_mismatch_is_refused() -> None:
    sched = load_schedule(
        "gemm_tcgen05", B200, {"M": 1024, "N": 1024, "K": 1024, "dtype": "mxfp8", "SCALE_DTYPE": "ue4m3"}
    )
    with pytest.raises(ScheduleRefused, match=r"mxfp8 on b200 needs scale_vec 32 with ue8m0 scales"):
        check_schedule(sched, B200)


def test_block_scaled_dtype_refused_on_hopper() -> None:
    sched = load_schedule("gemm_ws_cooperative", H100, {"M": 1024, "N": 1024, "K": 1024, "dtype": "mxfp8"})
    with pytest.raises(ScheduleRefused, match=r"wgmma on h100 has no mxfp8 path"):
        check_schedule(sched, H100)


def test_sparse_fp8_decode_dequantizes_at_the_deep_dives_rate_and_crossover_halves_it() -> None:
    """FlashMLA's FP8 sparse decode: ~50 CUDA-core cycles to dequantize one 512-value token on an SM
    (docs/20250929-hopper-fp8-sparse-deep-dive.md); the crossover pair converts half the tokens each,
    which turns a conversion-bound kernel into a tensor-core-bound one."""
    sched = load_schedule("mla_decode_flashmla_sparse_fp8", H800, {"batch": 16})
    mix = sched.mixes["dequant"]
    cc = H800.cuda_cores
    cycles_per_token = 512 * (
        mix["cvt"] / cc.cvt_per_clk_per_sm + mix["fp32"] / (cc.fp32_flops_per_clk_per_sm / 2)
    )
    assert 48 <= cycles_per_token <= 52
    assert sched.env["TOKEN_BYTES"] == 656 and sched.env["TOKENS"] == 32
    problem = {"batch": 32, "topk": 2048}
    crossover = _predict("mla_decode_flashmla_sparse_fp8", H800, attribute=True, **problem)
    alone = _predict("mla_decode_flashmla_sparse_fp8", H800, attribute=True, CROSSOVER=0, **problem)
    assert alone.time_us > 1.15 * crossover.time_us
    assert "CUDA-core" in alone.verdict and "tensor" in crossover.verdict
    with pytest.raises(ScheduleRefused, match="wgmma"):
        _predict("mla_decode_flashmla_sparse_fp8", B200, **problem)


def test_sparse_fp8_decode_leaves_its_split_to_the_combine_kernel_with_the_same_split() -> None:
    """FOLD_COMBINE=0: the sparse decode writes partials and mla_combine (SPARSE=1) merges exactly the
    segments the decode's metadata split (csrc/api/sparse_decode.h runs the shared combine kernel)."""
    problem = {"batch": 5, "heads": 128, "seqlen_q": 2}
    decode = load_schedule("mla_decode_flashmla_sparse_fp8", H800, {**problem, "topk": 4096})
    combine = load_schedule("mla_combine", H800, {**problem, "seqlen_kv": 4096, "SPARSE": 1})
    assert combine.env["PARTS"] == decode.env["PARTS"] == 132 // 2 // 2
    parts = splitkv_balanced_parts([decode.env["KV_BLOCKS"]] * 5, decode.env["PARTS"], 5)
    split = [seg for segs in parts for seg in segs if seg.n_splits > 1]
    assert split and combine.env["SPLIT_SEGMENTS"] == len(split)
    folded = _predict("mla_decode_flashmla_sparse_fp8", H800, topk=4096, **problem)
    alone = _predict("mla_decode_flashmla_sparse_fp8", H800, topk=4096, FOLD_COMBINE=0, **problem)
    merged = _predict("mla_combine", H800, seqlen_kv=4096, SPARSE=1, **problem)
    assert alone.time_us < folded.time_us and merged.time_us > 0
    dense = load_schedule("mla_combine", H800, {**problem, "seqlen_kv": 4096})
    assert dense.env["PARTS"] == 132 // 1 // 4  # the dense decode folds s_q into the heads' rows
