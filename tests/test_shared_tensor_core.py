"""The shared tensor core: MMA groups in flight progress together (processor sharing among issuers)."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import predict
from gpusim.sim.servers import FifoServer, SharedTensorCore
from gpusim.sim.spanlog import SpanLog


def _run(jobs: list[tuple[float, str, float]], cap: float = 1.0) -> tuple[dict[int, float], SharedTensorCore]:
    """Submit (arrival ns, owner, work ns) jobs; return each job's finish time and the core."""
    env = simpy.Environment()
    core = SharedTensorCore(env, "tensor", spans=SpanLog())
    finish: dict[int, float] = {}

    def issue(i: int, at: float, owner: str, work: float):
        yield env.timeout(at)
        yield core.submit(work, owner, label=f"job{i}", cap=cap)
        finish[i] = env.now

    for i, (at, owner, work) in enumerate(jobs):
        env.process(issue(i, at, owner, work))
    env.run()
    return finish, core


def test_two_warpgroups_that_issue_together_finish_together() -> None:
    finish, core = _run([(0.0, "wg0", 100.0), (0.0, "wg1", 100.0)])
    assert finish[0] == pytest.approx(200.0) and finish[1] == pytest.approx(200.0)
    assert core.busy_ns == pytest.approx(200.0)


def test_one_issuer_is_served_in_order() -> None:
    finish, _ = _run([(0.0, "wg0", 100.0), (0.0, "wg0", 50.0)])
    assert finish[0] == pytest.approx(100.0) and finish[1] == pytest.approx(150.0)


def test_a_group_issued_later_waits_behind_the_queued_ones() -> None:
    """Ping-pong: the second warpgroup issues after the first one's groups are queued, so it runs after."""
    finish, _ = _run([(0.0, "wg0", 100.0), (50.0, "wg1", 20.0)])
    assert finish[0] == pytest.approx(100.0)
    assert finish[1] == pytest.approx(120.0)


def test_groups_issued_together_interleave_and_the_smaller_ends_first() -> None:
    # 80 and 40 ns of work issued at once: both at half rate until the 40 is done at 80 ns
    finish, _ = _run([(0.0, "wg0", 80.0), (0.0, "wg1", 40.0)])
    assert finish[1] == pytest.approx(80.0)
    assert finish[0] == pytest.approx(120.0)


def test_each_issuer_keeps_its_order_inside_a_batch() -> None:
    # S then PV from each of two warpgroups at once: the S GEMMs interleave, then the PV GEMMs
    finish, _ = _run([(0.0, "wg0", 30.0), (0.0, "wg0", 10.0), (0.0, "wg1", 30.0), (0.0, "wg1", 10.0)])
    assert finish[0] == pytest.approx(60.0) and finish[2] == pytest.approx(60.0)
    assert finish[1] == pytest.approx(80.0) and finish[3] == pytest.approx(80.0)


def test_a_capped_issuer_leaves_the_rest_to_others() -> None:
    # one warp's mma.sync drives a quarter of the core: alone it takes four times its work
    finish, core = _run([(0.0, "w0", 10.0)], cap=0.25)
    assert finish[0] == pytest.approx(40.0)
    assert core.busy_ns == pytest.approx(10.0)


def test_spans_are_the_busy_intervals() -> None:
    _, core = _run([(0.0, "wg0", 10.0), (0.0, "wg1", 10.0), (100.0, "wg0", 5.0)])
    assert list(core.spans.intervals()) == [(0.0, 20.0), (100.0, 105.0)]  # type: ignore[union-attr]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 500, allow_nan=False),
            st.sampled_from(["wg0", "wg1", "wg2"]),
            st.floats(0.5, 200, allow_nan=False),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_sharing_conserves_work_like_a_fifo_server(jobs: list[tuple[float, str, float]]) -> None:
    """Processor sharing is work-conserving: the same busy time and the same last finish as a FIFO
    server fed the same groups, and no group finishes before its own work could be done."""
    finish, core = _run(jobs)
    env = simpy.Environment()
    fifo = FifoServer(env, "tensor", 1.0)
    last = 0.0
    for at, _owner, work in sorted(jobs, key=lambda j: j[0]):
        _, end = fifo.reserve(work, earliest_ns=at)
        last = max(last, end)
    assert core.busy_ns == pytest.approx(sum(w for _, _, w in jobs), rel=1e-9)
    assert max(finish.values()) == pytest.approx(last, rel=1e-9, abs=1e-9)
    for i, (at, _owner, work) in enumerate(jobs):
        assert finish[i] >= at + work - 1e-6


def test_the_mechanism_can_be_switched_off() -> None:
    """Two math warpgroups that issue together (the cooperative GEMM): sharing the tensor core makes
    neither finish early, so the kernel is no faster than with a FIFO tensor core."""
    shared = predict("gemm_ws_cooperative", "h100", costs="datasheet", M=2048, N=2048, K=1024)
    fifo = predict("gemm_ws_cooperative", "h100", costs="datasheet", model="-shared_tensor", M=2048, N=2048,
                   K=1024)  # fmt: skip
    assert "shared_tensor" in shared.model and "shared_tensor" not in fifo.model
    assert shared.time_us >= fifo.time_us * (1 - 1e-9)
    assert shared.utilization["tensor"] == pytest.approx(fifo.utilization["tensor"] * fifo.time_us / shared.time_us,
                                                         abs=2e-4)  # fmt: skip
