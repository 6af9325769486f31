"""One shared-memory budget (engine-fidelity G3): fills, TMA-store reads and, as a separate switch, the
tensor core's operand reads on the SM's shared-memory bandwidth (mechanisms smem_fills, smem_operands)."""

from __future__ import annotations

import pytest

import gpusim
from gpusim.mechanisms import DEFAULT_ON, MECHANISMS
from gpusim.sim.hardware import mma_operand_bytes

GEMM = {"M": 2048, "N": 2048, "K": 2048}


def _predict(
    schedule: str, arch_id: str, model: str, exact: bool = False, **problem: object
) -> gpusim.Prediction:
    return gpusim.predict(
        schedule, arch_id, model=model, costs="datasheet", attribute=False, exact=exact, **problem
    )


def test_both_are_switchable_and_off_by_default() -> None:
    assert {"smem_fills", "smem_operands"} <= set(MECHANISMS)
    assert not {"smem_fills", "smem_operands"} & DEFAULT_ON


@pytest.mark.parametrize(
    ("unit", "mnk", "a", "dtype", "group", "expected"),
    [
        ("mma_sync", (64, 64, 16), None, "fp16", 1, 0.0),  # fragments come through ldmatrix (lds)
        ("wgmma", (64, 128, 16), "smem", "bf16", 1, 64 * 16 * 2 + 128 * 16 * 2),
        ("wgmma", (128, 128, 16), None, "bf16", 1, 128 * 16 * 2 + 2 * 128 * 16 * 2),  # B once per m64
        ("wgmma", (64, 128, 16), "rmem", "bf16", 1, 128 * 16 * 2),  # RS: A from registers
        ("wgmma", (64, 160, 32), "smem", "fp8_e4m3", 1, 64 * 32 + 160 * 32),
        ("tcgen05", (128, 256, 16), "smem", "bf16", 1, 128 * 16 * 2 + 256 * 16 * 2),
        ("tcgen05", (256, 256, 16), "smem", "bf16", 2, (256 * 16 * 2 + 256 * 16 * 2) / 2),  # each CTA half
        ("tcgen05", (128, 256, 16), "tmem", "bf16", 1, 256 * 16 * 2),
    ],
)
def test_operand_bytes_follow_the_instruction(
    unit: str, mnk: tuple[float, float, float], a: str | None, dtype: str, group: int, expected: float
) -> None:
    assert mma_operand_bytes(unit, mnk, a, dtype, group) == expected


def test_fills_take_shared_memory_bandwidth() -> None:
    """cp.async fills land through the shared-memory path the ldmatrix/lds traffic uses: the LSU is
    busier by the fill bytes, and the kernel is no faster."""
    off = _predict("gemm_cp_async", "a100", "default", **GEMM)
    on = _predict("gemm_cp_async", "a100", "+smem_fills", **GEMM)
    assert on.utilization["lsu"] > off.utilization["lsu"] + 0.05
    assert on.time_us >= off.time_us * 0.999


def test_operand_reads_slow_a_gemm_whose_tile_needs_more_than_the_bandwidth() -> None:
    """A 128x128 ping-pong tile reads ~96 B/clk of operands plus ~64 B/clk of fills at the tensor peak,
    more than the 128 B/clk of shared memory: with both switches on it runs slower; the operand reads
    alone do not touch a schedule without wgmma/tcgen05 (FA2's mma.sync reads registers)."""
    base = _predict("gemm_ws_pingpong", "h100", "default", **GEMM)
    both = _predict("gemm_ws_pingpong", "h100", "+smem_fills,+smem_operands", **GEMM)
    assert both.time_us > 1.05 * base.time_us
    assert both.utilization["lsu"] > 0.8
    fa2 = {"batch": 1, "heads": 8, "seqlen_q": 1024, "seqlen_kv": 1024, "head_dim": 64}
    assert _predict("attn_fa2_fwd", "h100", "+smem_operands", **fa2).time_us == pytest.approx(
        _predict("attn_fa2_fwd", "h100", "default", **fa2).time_us, rel=1e-12
    )


@pytest.mark.parametrize(
    ("schedule", "arch_id", "problem"),
    [
        ("gemm_ws_pingpong", "h100", {"M": 4096, "N": 4096, "K": 4096}),
        ("gemm_tcgen05", "b200", {"M": 4096, "N": 4096, "K": 4096}),
        ("gemm_cp_async", "a100", {"M": 2048, "N": 2048, "K": 4096}),
    ],
)
def test_fast_forward_stays_exact_with_both_on(schedule: str, arch_id: str, problem: dict) -> None:
    model = "+smem_fills,+smem_operands"
    fast = _predict(schedule, arch_id, model, **problem)
    exact = _predict(schedule, arch_id, model, exact=True, **problem)
    assert fast.time_us == pytest.approx(exact.time_us, rel=5e-3)
    assert fast.utilization["lsu"] == pytest.approx(exact.utilization["lsu"], abs=5e-3)
    assert fast.sim["skipped_events"] > 0
