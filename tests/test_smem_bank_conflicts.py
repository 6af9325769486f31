"""Shared-memory bank conflicts: ``lds`` / ``sts`` ``ways`` and the plain tiles of the wmma reference kernels."""

from __future__ import annotations

import pytest

import gpusim
from gpusim.arch import load_arch
from gpusim.errors import GpusimError
from gpusim.schedule.load import load_schedule

GEMM = {"M": 2048, "N": 2048, "K": 2048}


@pytest.mark.parametrize(
    ("schedule", "dtype", "bk", "ways"),
    [
        ("gemm_sync", "fp16", 32, 4),  # kernels/gemm_sync.cu: 64-byte rows, 2 bank groups per wavefront
        ("gemm_cp_async", "bf16", 64, 8),  # kernels/gemm_cp_async.cu: 128-byte rows, all 8 on the same banks
        ("gemm_cp_async", "bf16", 8, 1),  # 16-byte rows: 8 rows fill the 32 banks
        ("gemm_tf32", "tf32", 32, 8),
    ],
)
def test_plain_tiles_conflict_by_their_row_pitch(schedule: str, dtype: str, bk: int, ways: int) -> None:
    arch = load_arch("h200")
    plain = load_schedule(schedule, arch, {**GEMM, "dtype": dtype, "BK": bk, "SMEM_LAYOUT": "plain"})
    swizzled = load_schedule(schedule, arch, {**GEMM, "dtype": dtype, "BK": bk})
    assert plain.env["SMEM_WAYS"] == ways
    assert swizzled.env["SMEM_WAYS"] == 1


def test_conflicts_replay_the_fragment_loads_on_the_shared_memory_bandwidth() -> None:
    """The same GEMM with 8-way conflicted fragment loads: the LSU carries 8x the fragment bytes, and the
    kernel becomes shared-memory bound; 2-way conflicts (32-byte rows) cost less than 8-way ones."""

    def run(**sets):
        return gpusim.predict(
            "gemm_cp_async", "h200", costs="datasheet", attribute=False, dtype="bf16", **GEMM, **sets
        )

    swizzled, plain = run(), run(SMEM_LAYOUT="plain")
    assert plain.utilization["lsu"] > 1.5 * swizzled.utilization["lsu"]
    assert plain.time_us > 1.5 * swizzled.time_us
    assert plain.utilization["lsu"] > plain.utilization["tensor"]
    two_way = run(BK=16, SMEM_LAYOUT="plain")
    assert run(BK=16).time_us < two_way.time_us < plain.time_us


def test_ways_below_one_is_refused(tmp_path) -> None:
    src = tmp_path / "conflicted.yaml"
    src.write_text("schedule: conflicted\nextends: gemm_cp_async\nparams: {SMEM_WAYS: 0}\n", encoding="utf-8")
    with pytest.raises(GpusimError, match="ways"):
        gpusim.predict(str(src), "h200", costs="datasheet", attribute=False, **GEMM)
