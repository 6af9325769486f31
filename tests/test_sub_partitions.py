"""SM sub-partitions: CUDA-core/SFU pipe shares follow the warps resident per SMSP, not a role's own warps."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusim
from gpusim.sim.hardware import warps_per_smsp

ROW_SOFTMAX = str(Path(__file__).parents[1] / "examples" / "row_softmax.yaml")

SFU_BOUND = """
schedule: sfu_rows
reference_arch: h100
problem: {rows: 4096, cols: 4096, dtype: bf16}
params:
  WARPS: 1
  CTAS: 1
  CTAS_PER_SM: 1
mixes:
  exps: {ex2: 8}
metrics: {flops: 0, compulsory_bytes: 0}
launch:
  grid: {g: CTAS}
  ctas_per_sm: CTAS_PER_SM
roles:
  work:
    warps: WARPS
    program:
    - cuda: {mix: exps, elems: rows * cols}
"""


@given(first=st.integers(0, 64), warps=st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_warps_spread_round_robin_over_the_smsps(first: int, warps: int) -> None:
    counts = warps_per_smsp(first, warps, 4)
    assert sum(counts) == warps
    assert max(counts) - min(counts) <= 1
    assert counts == tuple(sum(1 for w in range(first, first + warps) if w % 4 == j) for j in range(4))


@pytest.mark.parametrize("cols", [512, 2048])
def test_one_warp_per_row_and_four_warps_per_cta_reach_the_same_rate(cols: int) -> None:
    """Issue 10's example: the same row-softmax work split as one-warp CTAs (four or more per SM) or as
    four-warp CTAs gives the same time."""
    times = {
        rows_per_cta: gpusim.predict(
            ROW_SOFTMAX, "h100", attribute=False, rows=65536, cols=cols, ROWS_PER_CTA=rows_per_cta
        ).time_us
        for rows_per_cta in (1, 2, 4)
    }
    assert times[1] == pytest.approx(times[4], rel=0.01)
    assert times[2] == pytest.approx(times[4], rel=0.01)


def test_a_lone_warp_drives_only_its_sub_partition(tmp_path: Path) -> None:
    """One warp alone on an SM gets a quarter of the SFU rate, four warps the whole SM's, and a second
    one-warp CTA on the SM uses another sub-partition instead of queueing behind the first."""
    path = tmp_path / "sfu_rows.yaml"
    path.write_text(SFU_BOUND)
    one = gpusim.predict(str(path), "h100", attribute=False, WARPS=1).time_us
    four = gpusim.predict(str(path), "h100", attribute=False, WARPS=4).time_us
    launch_us = gpusim.load_arch("h100").calibration.launch_overhead_ns / 1000
    assert (one - launch_us) == pytest.approx(4 * (four - launch_us), rel=0.02)
    # two one-warp CTAs resident on each SM sit on different SMSPs and run side by side
    two_per_sm = gpusim.predict(str(path), "h100", attribute=False, WARPS=1, CTAS=264, CTAS_PER_SM=2).time_us
    assert two_per_sm == pytest.approx(one, rel=0.02)
