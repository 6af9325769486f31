"""Attention schedules (FA2 forward/backward, FA3, FA4): the published mechanisms as what-ifs, and properties."""

from __future__ import annotations

from typing import Any

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import ScheduleRefused
from gpusim.result import Prediction
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate

SMALL = {"batch": 1, "heads": 16, "seqlen_q": 2048, "head_dim": 128}


def _predict(schedule: str, arch: str, *, attribute: bool = False, **overrides: Any) -> Prediction:
    arch_obj = load_arch(arch)
    return predict(schedule, arch_obj, costs="datasheet", attribute=attribute, **{**SMALL, **overrides})


def test_fa3_beats_fa2_on_h100_by_a_wide_margin() -> None:
    """FA3 (TMA + wgmma, warp-specialized, overlapped softmax) vs FA2 (cp.async + mma.sync) on Hopper."""
    fa2 = _predict("attn_fa2_fwd", "h100")
    fa3 = _predict("attn_fa3_fwd", "h100", attribute=True)
    assert fa3.time_us * 1.25 < fa2.time_us
    assert fa3.bottleneck == "tensor_core"


@pytest.mark.parametrize("switch", ["PINGPONG", "INTRA_OVERLAP"])
def test_fa3_each_overlap_is_worth_something(switch: str) -> None:
    """Switching off inter-warpgroup ping-pong or intra-warpgroup overlap makes FA3 slower."""
    on = _predict("attn_fa3_fwd", "h100")
    off = _predict("attn_fa3_fwd", "h100", **{switch: 0})
    assert off.time_us > on.time_us * 1.02
    both = _predict("attn_fa3_fwd", "h100", PINGPONG=0, INTRA_OVERLAP=0)
    assert both.time_us > off.time_us


def test_fa3_fp8_is_faster_and_transposes_v() -> None:
    """FP8 doubles the tensor rate; the producer warpgroup's V transpose shows up as shared-memory traffic."""
    bf16 = _predict("attn_fa3_fwd", "h100")
    fp8 = _predict("attn_fa3_fwd", "h100", dtype="fp8_e4m3")
    assert fp8.time_us < bf16.time_us * 0.8
    assert fp8.utilization["lsu"] > bf16.utilization["lsu"]


def test_fa4_bottleneck_names_the_exp_unit_or_the_tensor_core() -> None:
    """At head_dim 64 each score carries half the MMA work, so the SFU's ex2 bounds FA4 (all exponentials on
    the SFU, EXP_EMU=0); at 128 the tensor core."""
    small_d = _predict("attn_fa4_fwd", "b200", head_dim=64, EXP_EMU=0.0, attribute=True)
    assert small_d.bottleneck == "sfu", small_d.verdict
    big_d = _predict("attn_fa4_fwd", "b200", head_dim=128, batch=2, attribute=True)
    assert big_d.bottleneck == "tensor_core", big_d.verdict
    assert big_d.utilization["tensor"] >= big_d.utilization["sfu"]
    assert small_d.utilization["sfu"] > small_d.utilization["tensor"]


@pytest.mark.parametrize(
    ("schedule", "arch", "extra"),
    [
        ("attn_fa2_fwd", "a100", {}),
        ("attn_fa2_bwd", "a100", {"heads": 8}),
        ("attn_fa3_fwd", "h100", {}),
        (
            "attn_fa4_fwd",
            "b200",
            {"batch": 4},
        ),  # several waves: one wave of m-blocks is as long as its longest
    ],
)
def test_time_grows_with_seqlen_and_causal_is_about_half(
    schedule: str, arch: str, extra: dict[str, Any]
) -> None:
    """Property: longer sequences take longer; causal masking does between ~0.45x and 1x of the work's time."""
    short = _predict(schedule, arch, **{**extra, "seqlen_q": 1024})
    full = _predict(schedule, arch, **extra)
    assert full.time_us > short.time_us * 1.5
    causal = _predict(schedule, arch, **extra, causal=1)
    assert 0.45 * full.time_us <= causal.time_us <= full.time_us
    assert causal.time_us >= causal.roofline_us and full.time_us >= full.roofline_us


@pytest.mark.parametrize(("schedule", "arch"), [("attn_fa2_fwd", "a100"), ("attn_fa3_fwd", "h100")])
def test_gqa_shares_kv_in_l2(schedule: str, arch: str) -> None:
    """Query heads sharing a KV head hit its K/V panels in L2: less HBM traffic, never slower."""
    mha = _predict(schedule, arch)
    gqa = _predict(schedule, arch, heads_kv=2)
    assert gqa.hbm_read_bytes < mha.hbm_read_bytes
    assert gqa.time_us <= mha.time_us * 1.01


def test_fa2_runs_unchanged_on_hopper_and_refuses_volta() -> None:
    """FA2 needs cp.async (sm_80); on Hopper it runs on mma.sync, below the wgmma rate."""
    assert _predict("attn_fa2_fwd", "h100").time_us < _predict("attn_fa2_fwd", "a100").time_us
    arch = load_arch("v100")
    with pytest.raises(ScheduleRefused, match=r"bf16|cp\.async"):
        simulate(load_schedule("attn_fa2_fwd", arch, SMALL), arch)


@pytest.mark.parametrize(
    ("arch", "head_dim", "causal", "traits"),
    [
        # (BLOCK_M, BLOCK_N, WARPS, CTAS_PER_SM) as run_mha_fwd_hdim* in flash_fwd_launch_template.h picks them
        ("a100", 64, 0, (128, 128, 4, 2)),
        ("a100", 128, 1, (128, 64, 4, 2)),
        ("a100", 256, 0, (128, 64, 8, 1)),  # 2 x 128 KiB CTAs do not fit A100's 164 KiB, one does
        ("h100", 256, 1, (64, 64, 4, 2)),  # H100's 228 KiB hold two 96 KiB 64 x 64 CTAs
        ("h100", 192, 0, (128, 64, 8, 1)),
        ("h100", 80, 0, (128, 64, 4, 2)),  # rounded up to the compiled head dim 96
        ("sm86", 128, 1, (64, 64, 4, 2)),  # sm_8x: causal 64 x 64
        ("sm86", 128, 0, (128, 32, 4, 2)),  # sm_8x: non-causal 128 x 32
    ],
)
def test_fa2_kernel_traits_follow_the_launch_template(
    arch: str, head_dim: int, causal: int, traits: tuple[int, int, int, int]
) -> None:
    """FA2's tile, warps and CTAs per SM depend on the head dim and the device, as the real launcher's."""
    if arch == "sm86":  # an A100 that reports compute capability 8.6 (no sm_86 arch ships)
        arch_obj = load_arch("a100").model_copy(update={"compute_capability": "8.6"})
    else:
        arch_obj = load_arch(arch)
    env = load_schedule("attn_fa2_fwd", arch_obj, {**SMALL, "head_dim": head_dim, "causal": causal}).env
    assert (env["BLOCK_M"], env["BLOCK_N"], env["WARPS"], env["CTAS_PER_SM"]) == traits


def test_fa3_refused_off_hopper_and_fa4_off_blackwell() -> None:
    for schedule, arch, reason in (
        ("attn_fa3_fwd", "a100", "wgmma|TMA"),
        ("attn_fa4_fwd", "h100", "tcgen05"),
    ):
        arch_obj = load_arch(arch)
        with pytest.raises(ScheduleRefused, match=reason):
            simulate(load_schedule(schedule, arch_obj, SMALL), arch_obj)


@pytest.mark.parametrize(
    ("schedule", "arch"),
    [
        ("attn_fa2_bwd", "a100"),
        ("attn_fa3_bwd", "h100"),
        ("attn_fa4_bwd", "b200"),
        ("attn_fa4_bwd_hd256_dq", "b200"),
        ("attn_fa4_bwd_hd256_dkdv", "b200"),
    ],
)
def test_causal_backward_with_more_queries_than_keys_is_predicted(schedule: str, arch: str) -> None:
    """Bottom-right causal with seqlen_q > seqlen_kv: the queries above the first key see nothing, so the
    useful work is about the last seqlen_kv queries' triangle (it used to be counted as half of the whole
    rectangle, and the kernel was refused for issuing less)."""
    more_queries = predict(schedule, arch, costs="datasheet", attribute=False,
                           batch=1, heads=4, seqlen_q=2048, seqlen_kv=256, causal=1)  # fmt: skip
    square = predict(schedule, arch, costs="datasheet", attribute=False,
                     batch=1, heads=4, seqlen_q=256, seqlen_kv=256, causal=1)  # fmt: skip
    assert more_queries.time_us >= more_queries.roofline_us > 0
    assert more_queries.time_us < 4 * square.time_us  # the 1,792 queries that see no key cost little
