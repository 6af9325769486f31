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
    on, off = _time("gemm_sync", arch, "-mma_sync_issuing"), _time("gemm_sync", arch, "-mma_sync_warps")
    assert off < on <= off / fraction * 1.001
    assert on > off / fraction * 0.8  # tensor-bound at this size: most of the slowdown shows
    # counted while issuing (mma_sync_issuing, the default): each group of 4 warps issues at the rate of
    # the warps issuing with it at that moment, between the two groups' rate together and one group's alone
    issuing = _time("gemm_sync", arch)
    assert on < issuing <= off / H200_TABLE[1] * 1.001  # the groups' fragment loads leave the other alone
    # no table: the mechanism changes nothing
    assert _time("gemm_sync", _with_table(arch, None)) == off
    # wgmma schedules do not feel it
    assert _time("gemm_ws_pingpong", arch) == _time("gemm_ws_pingpong", arch, "-mma_sync_warps")


def _sync_core():
    """A shared tensor core with the H200 mma.sync rate by issuing warps, and its environment."""
    import simpy

    from gpusim.sim.mma_sync_rate import WarpRate
    from gpusim.sim.servers import SharedTensorCore

    env = simpy.Environment()
    return env, SharedTensorCore(env, "tensor", sync_rate=WarpRate(H200_TABLE))


def _finish(jobs: list[tuple[float, tuple[int, ...], float]]) -> list[float]:
    """(issue ns, warps per SMSP, full-rate work ns) mma.sync jobs, each by its own warps; finish times."""
    env, core = _sync_core()
    out = [0.0] * len(jobs)

    def issue(i: int, at: float, warps: tuple[int, ...], work: float):
        yield env.timeout(at)
        yield core.submit(work, f"cta{i}", "mma", cap=1.0, smsp_warps=warps)
        out[i] = env.now

    for i, job in enumerate(jobs):
        env.process(issue(i, *job))
    env.run()
    return out


def test_warps_issuing_alone_run_at_the_one_warp_rate() -> None:
    assert _finish([(0.0, (1, 1, 1, 1), 100.0)]) == [pytest.approx(100.0 / H200_TABLE[1])]
    assert _finish([(0.0, (2, 2, 2, 2), 100.0)]) == [pytest.approx(100.0 / H200_TABLE[2])]


def test_two_ctas_issuing_together_share_the_two_warp_rate() -> None:
    """FA2's two CTAs per SM, both in their GEMMs: 2 warps per SMSP, together at 0.8148 of the peak."""
    both = _finish([(0.0, (1, 1, 1, 1), 100.0), (0.0, (1, 1, 1, 1), 100.0)])
    assert both == [pytest.approx(200.0 / H200_TABLE[2])] * 2


def test_a_cta_that_starts_issuing_later_is_not_queued_behind_the_first() -> None:
    """mma.sync interleaves at instruction granularity: the second CTA's MMAs start at once and the
    first one slows from the alone rate to its share of the shared one."""
    a, b = _finish([(0.0, (1, 1, 1, 1), 100.0), (50.0, (1, 1, 1, 1), 100.0)])
    done_alone = 50.0 * H200_TABLE[1]  # work the first did before the second arrived
    shared = H200_TABLE[2] / 2
    assert a == pytest.approx(50.0 + (100.0 - done_alone) / shared)
    assert b == pytest.approx(a + (100.0 - (a - 50.0) * shared) / H200_TABLE[1])
    assert b < 50.0 + 100.0 / H200_TABLE[1] + 100.0 / H200_TABLE[1]  # not served after the first


@given(st.lists(st.tuples(st.floats(0.0, 200.0), st.sampled_from([(1, 1, 1, 1), (2, 2, 2, 2), (1, 0, 0, 0)]),
                          st.floats(1.0, 300.0)), min_size=1, max_size=5))  # fmt: skip
def test_shared_mma_sync_stays_within_the_tables_bounds(jobs) -> None:
    """The core never delivers more than the peak (all the work takes at least its full-rate time after
    the first issue) and never stalls (it ends within the work at the slowest rate in the table, a lone
    warp on one sub-partition, after the last issue); no job ends before its work at the peak."""
    finish = _finish(jobs)
    total = sum(work for _, _, work in jobs)
    first, last = min(at for at, _, _ in jobs), max(at for at, _, _ in jobs)
    assert max(finish) >= first + total * (1 - 1e-9)
    assert max(finish) <= last + total / (H200_TABLE[1] / 4) * (1 + 1e-9)
    for (at, _, work), end in zip(jobs, finish, strict=True):
        assert end >= at + work * (1 - 1e-9)


def test_fa2_forward_on_h200_is_slower_than_with_a_static_count() -> None:
    """FA2's warps alternate between their GEMMs and the softmax: counted only while issuing (the
    ``mma_sync_issuing`` mechanism), the two CTAs of an SM are often one warp per SMSP, so the forward
    takes longer than at the static 2-warp rate and no longer than at the one-warp rate."""
    arch = gpusim.load_arch("h200", costs="datasheet")
    problem = {"batch": 2, "heads": 16, "seqlen_q": 2048, "seqlen_kv": 2048, "head_dim": 128}
    dynamic = gpusim.predict("attn_fa2_fwd", arch, costs="datasheet", attribute=False, **problem).time_us
    static = gpusim.predict("attn_fa2_fwd", arch, costs="datasheet", model="-mma_sync_issuing", attribute=False,
                            **problem).time_us  # fmt: skip
    off = gpusim.predict("attn_fa2_fwd", arch, costs="datasheet", model="-mma_sync_warps", attribute=False,
                         **problem).time_us  # fmt: skip
    assert static <= off / H200_TABLE[2] * 1.001
    assert static < dynamic < off / H200_TABLE[1]


def test_a_wgmma_group_beside_mma_sync_that_takes_the_whole_core_waits_for_it() -> None:
    """Eight warps per SMSP issuing mma.sync take the whole core (the table's 1.0): a batched group issued
    beside them gets nothing until they finish, then runs at the full rate (no division by a zero rate)."""
    env, core = _sync_core()
    ends: dict[str, float] = {}

    def issue(name: str, **kwargs):
        yield core.submit(100.0, name, name, **kwargs)
        ends[name] = env.now

    env.process(issue("sync", smsp_warps=(8, 8, 8, 8)))
    env.process(issue("wgmma"))
    env.run()
    assert ends == {"sync": pytest.approx(100.0), "wgmma": pytest.approx(200.0)}
