"""The microbenchmarks on a real GPU (``gpu``: skipped without one): a short subset runs and its rows
are plausible (positive, in the measurement format, below the physical peaks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.calibrate.measurements import read_measurements
from gpusim.compiler.toolchain import toolchain_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.cuda,
    pytest.mark.skipif(not toolchain_available(), reason="no toolchain"),
]


def _has_gpu() -> bool:
    from gpusim.compiler.launch import local_device
    from gpusim.errors import InputError

    try:
        local_device()
    except InputError:
        return False
    return True


@pytest.mark.skipif(not _has_gpu(), reason="no NVIDIA GPU")
def test_micro_subset_runs(tmp_path: Path) -> None:
    from gpusim.calibrate.micro.run import run_micro

    out = tmp_path / "micro.csv"
    only = "wgmma_ss_n128,side_ex2,wgmma_ss_n128_beside_ex2,mma_sync_bf16_4w_per_smsp,l2_read_1sm_same_90kib"
    n = run_micro(out, only=only, build_dir=str(tmp_path / "build"), say=lambda s: None)
    rows = read_measurements([out])
    assert n == len(rows) > 0
    for m in rows:
        assert m.error is None and m.value > 0 and m.params["gpu"]
        if m.metric == "tensor_flops_per_clk_per_sm":
            assert m.value < 1.05 * 16384  # no tensor unit does more per SM per clock
        if m.metric == "ex2_per_clk_per_sm":
            assert m.value < 1.05 * 32
