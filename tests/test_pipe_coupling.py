"""Pipe coupling (engine-fidelity G1): CUDA-core/SFU work holds the tensor core of its sub-partitions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusim
from gpusim.arch import Arch
from gpusim.costs import with_calibration
from gpusim.mechanisms import with_model

FA3 = {"batch": 1, "heads": 4, "seqlen_q": 1024, "seqlen_kv": 1024, "head_dim": 128}
DEEPGEMM = {"M": 1024, "N": 2048, "K": 2048}


def _arch(overlap: float, arch_id: str = "h100") -> Arch:
    base = gpusim.load_arch(arch_id, costs="datasheet")
    values = {**base.calibration.model_dump(), "origin": "calibrated", "tensor_cuda_overlap": overlap}
    return with_calibration(base, values)


def _time(schedule: str, arch: Arch, exact: bool = False, **problem: object) -> float:
    return gpusim.predict(schedule, arch, attribute=False, exact=exact, **problem).time_us


def test_datasheet_overlap_changes_nothing() -> None:
    on = _arch(1.0)
    off = with_model(on, "-pipe_coupling")
    assert _time("attn_fa3_fwd", on, **FA3) == _time("attn_fa3_fwd", off, **FA3)


def test_pipe_coupling_is_in_effect_only_below_the_datasheet_overlap() -> None:
    """What the ablation counts: at an overlap of 1 (every shipped overlay) the mechanism cannot move a
    prediction; below it, it can, unless the shared tensor core it needs is off."""
    from gpusim.mechanisms import in_effect

    assert not in_effect("pipe_coupling", _arch(1.0))
    assert in_effect("pipe_coupling", _arch(0.5))
    assert not in_effect("pipe_coupling", with_model(_arch(0.5), "-shared_tensor"))
    assert not in_effect("pipe_coupling", with_model(_arch(0.5), "-pipe_coupling"))


def test_serialising_softmax_slows_attention_not_a_plain_gemm_mainloop() -> None:
    free, half, serial = (_time("attn_fa3_fwd", _arch(x), **FA3) for x in (1.0, 0.5, 0.0))
    assert free < half < serial
    # FA3's softmax is ~half the tensor time at head dim 128: fully serial costs a large share of it
    assert serial > 1.2 * free
    gemm = {"M": 2048, "N": 2048, "K": 2048}
    assert _time("gemm_ws_pingpong", _arch(0.0), **gemm) == pytest.approx(
        _time("gemm_ws_pingpong", _arch(1.0), **gemm), rel=0.01
    )


def test_switched_off_it_is_free_whatever_the_overlap() -> None:
    arch = with_model(_arch(0.0), "-pipe_coupling")
    assert _time("attn_fa3_fwd", arch, **FA3) == _time("attn_fa3_fwd", _arch(1.0), **FA3)


@pytest.mark.parametrize(("schedule", "problem"), [("attn_fa3_fwd", FA3), ("gemm_fp8_deepgemm", DEEPGEMM)])
def test_fast_forward_stays_exact(schedule: str, problem: dict[str, object]) -> None:
    arch = _arch(0.4)
    fast = gpusim.predict(schedule, arch, attribute=False, **problem)
    exact = gpusim.predict(schedule, arch, attribute=False, exact=True, **problem)
    assert fast.time_us == pytest.approx(exact.time_us, rel=1e-9)
    for unit, value in exact.utilization.items():
        assert fast.utilization[unit] == pytest.approx(value, rel=1e-6, abs=1e-9)


def test_held_time_is_not_counted_as_tensor_work() -> None:
    free = gpusim.predict("attn_fa3_fwd", _arch(1.0), attribute=False, **FA3)
    serial = gpusim.predict("attn_fa3_fwd", _arch(0.0), attribute=False, **FA3)
    # the same MMA work over a longer time: utilization falls in proportion
    ratio = free.time_us / serial.time_us
    assert serial.utilization["tensor"] == pytest.approx(
        free.utilization["tensor"] * ratio, rel=0.01
    )  # rounded to 3 digits


@settings(max_examples=6, deadline=None)
@given(a=st.floats(0.0, 1.0), b=st.floats(0.0, 1.0))
def test_less_overlap_is_never_faster(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    problem = {**FA3, "seqlen_q": 512, "seqlen_kv": 512}
    assert _time("attn_fa3_fwd", _arch(lo), **problem) >= _time("attn_fa3_fwd", _arch(hi), **problem) * (
        1 - 1e-9
    )


def test_held_tensor_time_is_reported_apart_from_mma_work() -> None:
    """The tensor-core time CUDA-core work holds is its own utilization entry, only when the coupling
    holds anything; the MMA utilization does not include it."""
    free = gpusim.predict("attn_fa3_fwd", _arch(1.0), attribute=False, **FA3)
    serial = gpusim.predict("attn_fa3_fwd", _arch(0.0), attribute=False, **FA3)
    assert "tensor_coupled" not in free.utilization
    held = serial.utilization["tensor_coupled"]
    assert 0 < held < 1
    launch_us = _arch(1.0).calibration.launch_overhead_ns / 1000
    work = free.utilization["tensor"] * (free.time_us - launch_us)  # the same MMA work, in a longer kernel
    assert serial.utilization["tensor"] * (serial.time_us - launch_us) == pytest.approx(work, rel=1e-3)
