"""Deadlocks the schedule itself guarantees are reported before simulating, however large the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpusim
from gpusim.errors import DeadlockError

SCHEDULES = Path(__file__).resolve().parent.parent / "schedules"


def _pingpong_with_a_final_sync(tmp_path: Path, barrier_warps: int) -> Path:
    """The ping-pong GEMM whose math warpgroups (2 x 4 warps) meet at a named barrier after their last tile."""
    text = (SCHEDULES / "gemm_ws_pingpong.yaml").read_text()
    text = text.replace("schedule: gemm_ws_pingpong", "schedule: final_sync", 1)
    text = text.replace(
        "  epi_turn: {kind: turnstile, members: math}\n",
        f"  epi_turn: {{kind: turnstile, members: math}}\n  final: {{kind: named, warps: {barrier_warps}}}\n",
    )
    text = text.replace(
        "          with: {count: BM * BN // (EPI_M * EPI_N)}\n",
        "          with: {count: BM * BN // (EPI_M * EPI_N)}\n    - sync: final\n",
        1,
    )
    assert "sync: final" in text
    path = tmp_path / "final_sync.yaml"
    path.write_text(text)
    return path


def test_a_named_barrier_no_roles_can_fill_is_a_deadlock_named_before_simulating(tmp_path: Path) -> None:
    path = _pingpong_with_a_final_sync(tmp_path, barrier_warps=12)
    with pytest.raises(DeadlockError, match=r"barriers\.final waits for 12 warps but only math \(8 warps\)"):
        gpusim.predict(str(path), "h100", M=65536, N=65536, K=65536, attribute=False)


def test_the_same_barrier_with_every_warp_counted_runs(tmp_path: Path) -> None:
    path = _pingpong_with_a_final_sync(tmp_path, barrier_warps=8)
    assert gpusim.predict(str(path), "h100", M=1024, N=1024, K=1024, attribute=False).time_us > 0
