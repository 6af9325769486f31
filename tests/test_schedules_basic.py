"""The pre-Hopper GEMMs (gemm_sync, gemm_cp_async) and stream: run, bounded by the roofline, refusals."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import ScheduleRefused
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate


def _predict(name: str, arch_id: str, **overrides):
    arch = load_arch(arch_id)
    return predict(name, arch, costs="datasheet", attribute=False, **overrides)


@pytest.mark.parametrize(
    ("name", "arch_id", "overrides"),
    [
        ("gemm_sync", "v100", {"M": 2048, "N": 2048, "K": 2048}),
        ("gemm_cp_async", "a100", {"M": 2048, "N": 2048, "K": 2048}),
        ("stream", "h100", {"bytes": 64 * 2**20}),
        ("stream", "h100", {"bytes": 64 * 2**20, "op": "triad"}),
    ],
)
def test_reference_arch_within_five_times_the_roofline(name: str, arch_id: str, overrides: dict) -> None:
    """On its reference arch a large problem takes longer than the roofline bound, but less than 5x it."""
    p = _predict(name, arch_id, **overrides)
    assert p.roofline_us < p.time_us < 5 * p.roofline_us


@pytest.mark.parametrize(
    ("name", "arch_ids"),
    [("gemm_sync", ["v100", "a100", "h100", "b200"]), ("gemm_cp_async", ["a100", "h100", "b200"])],
)
def test_gemms_run_on_every_arch_they_target(name: str, arch_ids: list[str]) -> None:
    """Small, edge-tile and K-shorter-than-the-pipeline problems finish (no deadlock) with a sane rate."""
    for arch_id in arch_ids:
        for overrides in ({"M": 512, "N": 512, "K": 512}, {"M": 1000, "N": 300, "K": 64}):
            p = _predict(name, arch_id, **overrides)
            assert p.time_us > p.roofline_us
            assert 0 < p.tflops < 5000


def test_cp_async_stages_are_overridable() -> None:
    """STAGES is a parameter: 128x128x64 with 4 stages fits a100 (128 KiB); 128x256x64 with 4 is refused."""
    four = _predict("gemm_cp_async", "a100", M=2048, N=2048, K=2048, STAGES=4, BN=128)
    assert four.time_us > four.roofline_us
    assert four.budgets["smem_bytes_per_cta"] >= 4 * (128 + 128) * 64 * 2
    with pytest.raises(ScheduleRefused, match="shared memory"):
        _predict("gemm_cp_async", "a100", STAGES=4)  # 4 x 48 KiB = 192 KiB > 163 KiB per block


def test_gemm_sync_on_v100_is_in_the_mma_sync_range() -> None:
    """4096^3 fp16 on v100 lands between half and all of the 125 TFLOPS mma.sync peak."""
    p = _predict("gemm_sync", "v100")
    assert 60 < p.tflops < 125


def test_gemm_cp_async_refused_on_v100_by_the_cli() -> None:
    """The CLI refuses with exit code 3 and one line naming v100, no traceback.

    Legality is checked MMA-first, so the line names the missing bf16 mma.sync path of sm_70; the
    cp.async (sm_80) refusal is checked directly with an MMA the arch has."""
    proc = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", "gemm_cp_async", "--arch", "v100"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "v100" in lines[0]
    assert "cp.async" in lines[0] or "mma_sync" in lines[0]


def test_cp_async_refused_on_sm70_even_with_a_legal_mma() -> None:
    """With fp16 and the sm_70 m8n8k4 shape (legal MMA), the refusal is cp.async needing sm_80."""
    arch = load_arch("v100")
    sched = load_schedule("gemm_cp_async", arch, {"dtype": "fp16", "INSTR_M": 8, "INSTR_K": 4})
    with pytest.raises(ScheduleRefused, match=r"cp\.async does not exist on v100 \(sm_70; needs sm_80\)"):
        simulate(sched, arch)


@pytest.mark.parametrize("op", ["copy", "scale", "add", "triad", "init", "read", "3pt", "5pt"])
def test_stream_bandwidth_between_half_and_all_of_hbm(op: str) -> None:
    """Every STREAM op on h100 moves its compulsory bytes at 50-100% of the 3.35 TB/s datasheet."""
    p = _predict("stream", "h100", bytes=64 * 2**20, op=op)
    arrays = 3 if op in ("add", "triad") else 1 if op in ("init", "read") else 2
    assert p.hbm_read_bytes + p.hbm_write_bytes == pytest.approx(arrays * 64 * 2**20, rel=1e-6)
    gbps = arrays * 64 * 2**20 / (p.time_us * 1e3)
    datasheet = load_arch("h100").memory.hbm_bandwidth_bytes_per_s / 1e9
    assert 0.5 * datasheet < gbps <= datasheet
