"""mma.sync's rate by the warps per sub-partition that issue it (engine-fidelity G5, ``mma_sync_warps``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusim
from gpusim.arch import Arch
from gpusim.errors import InputError
from gpusim.mechanisms import in_effect, with_model
from gpusim.schedule.load import load_schedule
from gpusim.sim.mma_sync_rate import (
    mma_sync_fraction,
    rate_fraction,
    resident_ctas_per_sm,
    schedule_issues_mma_sync,
)

H200_TABLE = {1: 0.4753, 2: 0.8148, 4: 0.9665, 8: 1.0}
GEMM = {"M": 4096, "N": 4096, "K": 4096}


def _with_table(arch: Arch, table: dict[int, float] | None) -> Arch:
    tc = arch.tensor_cores
    unit = tc.mma_sync.model_copy(update={"rate_by_warps_per_smsp": table})
    return arch.model_copy(update={"tensor_cores": tc.model_copy(update={"mma_sync": unit})})


def test_rate_fraction_hits_the_measured_points_and_interpolates() -> None:
    for warps, fraction in H200_TABLE.items():
        assert rate_fraction(H200_TABLE, warps) == fraction
    assert rate_fraction(H200_TABLE, 3) == pytest.approx((0.8148 + 0.9665) / 2)
    assert rate_fraction(H200_TABLE, 0.5) == 0.4753  # a sub-partition with a warp holds at least one
    assert rate_fraction(H200_TABLE, 32) == 1.0


@given(st.floats(0.0, 64.0), st.floats(0.0, 64.0))
def test_more_warps_never_issue_slower(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert 0 < rate_fraction(H200_TABLE, low) <= rate_fraction(H200_TABLE, high) <= 1.0


def test_the_gh100_archs_carry_the_measured_table() -> None:
    for arch_id in ("h100", "h100_pcie", "h200", "h800", "h800_pcie"):
        arch = gpusim.load_arch(arch_id, costs="datasheet")
        assert arch.tensor_cores.mma_sync.rate_by_warps_per_smsp == H200_TABLE
        assert in_effect("mma_sync_warps", arch)
        assert not in_effect("mma_sync_warps", with_model(arch, "-mma_sync_warps"))
    assert not in_effect("mma_sync_warps", gpusim.load_arch("a100", costs="datasheet"))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({1: 0.9, 2: 0.5}, "below the 0.9 of fewer warps"),
        ({1: 1.5}, r"fraction 1.5 outside \(0, 1\]"),
        ({0: 0.5}, "expected a whole number >= 1"),
        ({}, "at least one"),
    ],
)
def test_a_bad_table_is_refused_with_the_field(tmp_path, table: dict[int, float], message: str) -> None:
    text = (gpusim.arch.archs_dir() / "h200.yaml").read_text()
    bad = text.replace(
        "rate_by_warps_per_smsp: {1: 0.4753, 2: 0.8148, 4: 0.9665, 8: 1.0}",
        "rate_by_warps_per_smsp: {" + ", ".join(f"{k}: {v}" for k, v in table.items()) + "}",
    )
    assert bad != text
    path = tmp_path / "h200_bad.yaml"
    path.write_text(bad)
    with pytest.raises(InputError, match=f"rate_by_warps_per_smsp.*{message}"):
        gpusim.load_arch(str(path))


def test_fraction_counts_the_resident_warps_that_issue_mma_sync() -> None:
    arch = gpusim.load_arch("h200", costs="datasheet")
    fa2 = load_schedule("attn_fa2_fwd", arch, {"batch": 4, "heads": 16, "seqlen_q": 4096, "seqlen_kv": 4096,
                                               "head_dim": 128})  # fmt: skip
    # 4 warps per CTA, 2 CTAs per SM (255 registers per thread): 2 warps per SMSP
    assert resident_ctas_per_sm(fa2, arch) == 2
    assert mma_sync_fraction(fa2, arch) == H200_TABLE[2]
    tiny = load_schedule("attn_fa2_fwd", arch, {"batch": 1, "heads": 1, "seqlen_q": 128, "seqlen_kv": 128,
                                                "head_dim": 128})  # fmt: skip
    assert resident_ctas_per_sm(tiny, arch) == 1  # one CTA in the grid: alone on its SM
    assert mma_sync_fraction(tiny, arch) == H200_TABLE[1]
    wgmma = load_schedule("gemm_ws_pingpong", arch, GEMM)
    assert mma_sync_fraction(wgmma, arch) == 1.0
    assert mma_sync_fraction(fa2, gpusim.load_arch("a100", costs="datasheet")) == 1.0


def test_schedules_that_issue_mma_sync_are_found() -> None:
    assert schedule_issues_mma_sync("attn_fa2_fwd") and schedule_issues_mma_sync("gemm_sync")
    assert not schedule_issues_mma_sync("gemm_ws_pingpong") and not schedule_issues_mma_sync("stream")


def _time(schedule: str, arch: Arch, model: str | None = None) -> float:
    return gpusim.predict(schedule, arch, costs="datasheet", model=model, attribute=False, **GEMM).time_us


def test_an_mma_bound_kernel_slows_by_the_fraction_and_only_with_the_mechanism() -> None:
    arch = gpusim.load_arch("h200", costs="datasheet")
    fraction = mma_sync_fraction(load_schedule("gemm_sync", arch, GEMM), arch)
    assert fraction < 1.0
    on, off = _time("gemm_sync", arch), _time("gemm_sync", arch, "-mma_sync_warps")
    assert off < on <= off / fraction * 1.001
    assert on > off / fraction * 0.8  # tensor-bound at this size: most of the slowdown shows
    # no table: the mechanism changes nothing
    assert _time("gemm_sync", _with_table(arch, None)) == off
    # wgmma schedules do not feel it
    assert _time("gemm_ws_pingpong", arch) == _time("gemm_ws_pingpong", arch, "-mma_sync_warps")
