"""Simulating identical SM groups once agrees with simulating every SM."""

from __future__ import annotations

import pytest

from gpusim.arch import load_arch
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate


@pytest.mark.parametrize(
    ("name", "arch_id", "problem"),
    [
        ("gemm_ws_pingpong", "h100", {"M": 2048, "N": 3072, "K": 512}),
        ("gemm_ws_cooperative", "h100", {"M": 2048, "N": 2048, "K": 512, "SPLITS": 2}),
        ("gemm_tcgen05", "b200", {"M": 2048, "N": 4096, "K": 512}),
        ("gemm_cp_async", "a100", {"M": 1536, "N": 2048, "K": 256}),
        ("stream", "h100", {"bytes": 8 * 2**20}),
    ],
)
def test_grouped_and_per_sm_simulation_agree(name: str, arch_id: str, problem: dict[str, int]) -> None:
    """Time and HBM bytes agree within 1% (the tail wave makes groups of different sizes)."""
    arch = load_arch(arch_id)
    sched = load_schedule(name, arch, problem)
    grouped = simulate(sched, arch)
    every_sm = simulate(sched, arch, group_identical=False)
    assert len(grouped.plan.groups) < len(every_sm.plan.groups)
    assert grouped.kernel_ns == pytest.approx(every_sm.kernel_ns, rel=0.01)
    assert grouped.net.hbm_read_bytes == pytest.approx(every_sm.net.hbm_read_bytes, rel=0.01)
