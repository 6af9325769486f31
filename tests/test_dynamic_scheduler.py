"""The dynamic_persistent scheduler: a tile counter hands units out at run time (FlashAttention-3's
causal scheduler, Blackwell's cluster launch control)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import InputError
from gpusim.schedule.load import load_schedule, schedules_dir
from gpusim.sim.engine import simulate
from gpusim.sim.hardware import issued_tensor_flops
from gpusim.sim.scheduler import plan_work
from gpusim.sim.tilequeue import ClusterTiles, DynamicUnits, TileQueue

CAUSAL = {"batch": 2, "heads": 8, "seqlen_q": 2048, "causal": 1}


def test_the_counter_hands_every_unit_out_once_in_launch_order() -> None:
    """Two clusters asking in turn get consecutive units of the launch order; each unit's wave is its
    launch index over the slots; the counter runs dry after the last unit."""
    h100 = load_arch("h100")
    plan = plan_work(load_schedule("attn_fa3_fwd", h100, CAUSAL), h100)
    assert plan.dynamic
    queue = TileQueue(plan)
    a, b = ClusterTiles(queue), ClusterTiles(queue)
    ua, ub = DynamicUnits(a, 0), DynamicUnits(b, 0)
    assert ua[0] == plan.slot_lists[0][0][0] and ub[0] == plan.slot_lists[1][0][0]
    assert ua.wave(0) == ub.wave(0) == 0
    taken = 2
    while ua.reach(len(ua)):
        taken += 1
    assert taken == queue.total == sum(len(s) for s in plan.slot_lists)
    assert ua.wave(len(ua) - 1) == (queue.total - 1) // queue.num_slots
    assert not ub.reach(1) and len(ub) == 1


def test_causal_fa3_takes_its_m_blocks_from_the_counter_and_runs_each_once() -> None:
    """Causal FA3 (DynamicPersistentTileScheduler) simulates every SM alone and runs every unit exactly
    once: the tensor FLOPs issued are those of the round-robin plan. Its fast-forward (inside units only) agrees with the
    exact run."""
    h100 = load_arch("h100")
    sched = load_schedule("attn_fa3_fwd", h100, CAUSAL)
    assert sched.launch.scheduler == "dynamic_persistent"
    run = simulate(sched, h100)
    assert len(run.sms) == h100.sm_count and all(sm.weight == 1 for sm in run.sms)
    static = simulate(
        load_schedule("attn_fa3_fwd", h100, {**CAUSAL, "TILE_SCHEDULER": "static_persistent"}), h100
    )
    assert not static.plan.dynamic
    issued = [issued_tensor_flops(r.sms) for r in (run, static)]
    assert issued[0] == pytest.approx(issued[1], rel=1e-12)  # the same units, dealt differently
    exact = simulate(sched, h100, exact=True)
    assert run.kernel_ns == pytest.approx(exact.kernel_ns, rel=1e-9)
    non_causal = load_schedule("attn_fa3_fwd", h100, {**CAUSAL, "causal": 0})
    assert non_causal.launch.scheduler == "static_persistent"


def test_the_counter_balances_causal_m_blocks_better_than_round_robin() -> None:
    """Longest m-blocks first, handed to whichever CTA is free, leave less idle time at the end than the
    same order dealt round robin (FA3's reason for the dynamic scheduler)."""
    dynamic = predict("attn_fa3_fwd", "h100", costs="datasheet", attribute=False, **CAUSAL)
    static = predict("attn_fa3_fwd", "h100", costs="datasheet", attribute=False,
                     TILE_SCHEDULER="static_persistent", **CAUSAL)  # fmt: skip
    assert dynamic.time_us < static.time_us


def test_alike_units_keep_the_grouped_static_plan() -> None:
    """When every unit behaves alike, the counter hands them out in round-robin order: the plan stays
    grouped and static, and CLC=1 predicts what CLC=0 does."""
    b200 = load_arch("b200")
    problem = {"M": 4096, "N": 4096, "K": 1024}
    sched = load_schedule("gemm_tcgen05", b200, {**problem, "CLC": 1})
    assert sched.launch.scheduler == "dynamic_persistent" and not plan_work(sched, b200).dynamic
    with_clc = predict("gemm_tcgen05", "b200", costs="datasheet", attribute=False, CLC=1, **problem)
    without = predict("gemm_tcgen05", "b200", costs="datasheet", attribute=False, **problem)
    assert with_clc.time_us == without.time_us


def test_a_dynamic_scheduler_needs_a_persistent_launch(tmp_path: Path) -> None:
    text = (schedules_dir() / "stream.yaml").read_text()
    path = tmp_path / "stream_dynamic.yaml"
    path.write_text(text.replace("kind: static_persistent", "kind: dynamic_persistent").replace(
        "persistent: true", "persistent: false"))  # fmt: skip
    with pytest.raises(InputError, match="dynamic_persistent hands units to persistent CTAs"):
        load_schedule(str(path), load_arch("h100"), {})
    typo = tmp_path / "stream_typo.yaml"
    typo.write_text(text.replace("kind: static_persistent", "kind: dynamic_persistant"))
    with pytest.raises(InputError, match="did you mean 'dynamic_persistent'"):
        load_schedule(str(typo), load_arch("h100"), {})


FA2_CAUSAL = {"batch": 1, "heads": 8, "seqlen_q": 2048, "seqlen_kv": 2048, "head_dim": 128, "causal": 1}


def test_a_non_persistent_grid_is_dispatched_where_its_units_loop_differently() -> None:
    """The hardware block scheduler hands a grid's next CTA to the slot that frees up: causal FA2 (a query
    block's KV loop grows with its index) is dispatched; non-causal FA2 and a GEMM with edge tiles (the
    same k-loop in every tile) keep the static round robin."""
    from gpusim.mechanisms import with_model

    h200 = load_arch("h200")  # on by default
    assert plan_work(load_schedule("attn_fa2_fwd", h200, FA2_CAUSAL), h200).dynamic
    assert not plan_work(load_schedule("attn_fa2_fwd", h200, {**FA2_CAUSAL, "causal": 0}), h200).dynamic
    edge = load_schedule("gemm_cp_async", h200, {"M": 1000, "N": 3000, "K": 512})
    assert not plan_work(edge, h200).dynamic
    static = with_model(load_arch("h200"), "-grid_dispatch")  # the mechanism off: round robin
    assert not plan_work(load_schedule("attn_fa2_fwd", static, FA2_CAUSAL), static).dynamic


def test_dispatch_spreads_long_ctas_that_round_robin_piles_onto_some_slots(monkeypatch) -> None:
    """Causal FA2 with 16 query blocks per head over 264 slots: round robin gives slot s the blocks s,
    s + 8, ... (mod 16) of successive heads, so some slots get only long ones; dispatch (``grid_dispatch``)
    balances them, so the kernel ends sooner, and its fast-forward agrees with the exact simulation; with
    loops that do not differ the mechanism keeps round robin."""
    import gpusim.sim.scheduler as scheduler

    h200 = load_arch("h200")
    problem = {**FA2_CAUSAL, "heads": 40}
    on = "+grid_dispatch"
    dispatched = predict("attn_fa2_fwd", h200, costs="datasheet", model=on, attribute=False, **problem)
    exact = predict("attn_fa2_fwd", h200, costs="datasheet", model=on, attribute=False, exact=True, **problem)
    assert dispatched.time_us == pytest.approx(exact.time_us, rel=5e-3)
    static = predict(
        "attn_fa2_fwd", h200, costs="datasheet", model="-grid_dispatch", attribute=False, **problem
    )
    monkeypatch.setattr(scheduler, "_loop_counts_differ", lambda *_: False)
    assert predict("attn_fa2_fwd", h200, costs="datasheet", model=on, attribute=False, **problem).time_us == (
        static.time_us
    )
    assert dispatched.time_us < static.time_us * 0.97
    assert dispatched.tflops > static.tflops
