"""The untimed replay (gpusim/sim/untimed.py) names deadlocks at the end of large kernels before simulating,
and never refuses a schedule the simulation completes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from late_deadlocks import last_unit_guard, mutants, pingpong_event_cycle

import gpusim
from gpusim.api import _resolve_schedule, load_arch
from gpusim.errors import DeadlockError
from gpusim.schedule.ir import Schedule
from gpusim.sim.scheduler import plan_work
from gpusim.sim.untimed import replay

SCHEDULES = Path(__file__).resolve().parent.parent / "schedules"


def _cycle(sched: Schedule, wait_before: str, arrive_after: str) -> Schedule:
    """The cycle mutant whose wait comes before the statement at ``wait_before`` and whose arrival after the
    one at ``arrive_after`` (schedule paths, without the file)."""
    for label, mutant in mutants(sched, max_cycles=10_000):
        head, _, tail = label.partition(", arrive after ")
        if label.startswith("cycle") and head.endswith(wait_before) and tail.endswith(arrive_after):
            return mutant
    raise AssertionError(f"no cycle mutant {wait_before} / {arrive_after}")


MATH_WAIT = "roles.math.program[0].tiles.do[0].turn.do[0].for.do[0].wait"
PRODUCER_ACQUIRE = "roles.producer.program[0].tiles.do[0].for.do[0].acquire"


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if simulated CTAs are built: the deadlock must be named before any event."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the simulation started: the untimed replay let the deadlock through")

    monkeypatch.setattr("gpusim.sim.engine._Builder.build_group", refuse)


@pytest.mark.parametrize("size", [8192, 32768])
def test_a_wait_cycle_in_the_last_tile_of_a_huge_pingpong_gemm_is_named_before_simulating(
    size: int, no_simulation: None
) -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": size, "N": size, "K": size})
    # in the last unit, math waits before its first k-tile for the signal the producer gives after its last
    # acquire, which needs math to have released the unit's first k-tiles (more k-tiles than stages)
    mutant = _cycle(sched, MATH_WAIT, PRODUCER_ACQUIRE)
    found = replay(mutant, arch, plan_work(mutant, arch))
    assert found.deadlock is not None and found.decided
    kt = size // 64
    # at most 8 units (of at most 12 statements per k-tile on each of the 2 CTAs) per distinct slot,
    # whatever the number of units (about 1,000 per slot at 32768^3): the periods in between are jumped
    assert found.steps < 8 * kt * 12 * 2 * found.runs
    assert "deadlock found before simulating" in found.deadlock
    assert "event 'late_signal' for tile" in found.deadlock
    assert "acquire 'ab': waiting for an empty stage" in found.deadlock
    assert "\n" not in found.deadlock


def test_with_the_replay_first_the_late_deadlock_is_named_before_building_any_cta(
    no_simulation: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gpusim.sim.engine.UNTIMED_REPLAY_AFTER_EVENTS", 0)
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 16384, "N": 16384, "K": 16384})
    mutant = _cycle(sched, MATH_WAIT, PRODUCER_ACQUIRE)
    with pytest.raises(DeadlockError, match=r"deadlock found before simulating .* blocked roles: .*producer"):
        gpusim.sim.engine.simulate(mutant, arch)
    assert DeadlockError("x").exit_code == 4


def test_a_long_simulation_replays_once_and_names_the_late_deadlock_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An early replay that runs out of its budget is repeated in full once the simulation passes
    UNTIMED_REPLAY_AFTER_EVENTS: the late cycle of a 16384^3 GEMM is named at that point."""
    monkeypatch.setattr("gpusim.sim.engine.UNTIMED_REPLAY_AFTER_EVENTS", 2000)
    monkeypatch.setattr("gpusim.sim.engine.EARLY_REPLAY_STEPS", 1000)
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 16384, "N": 16384, "K": 16384})
    mutant = _cycle(sched, MATH_WAIT, PRODUCER_ACQUIRE)
    with pytest.raises(
        DeadlockError, match=r"deadlock found after 2,000 simulated events .* blocked roles: "
    ):
        gpusim.sim.engine.simulate(mutant, arch)


def test_by_default_the_late_deadlock_of_a_16384_cubed_gemm_is_named_before_simulating(
    no_simulation: None,
) -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 16384, "N": 16384, "K": 16384})
    mutant = _cycle(sched, MATH_WAIT, PRODUCER_ACQUIRE)
    with pytest.raises(DeadlockError, match=r"deadlock found before simulating .* blocked roles: .*producer"):
        gpusim.sim.engine.simulate(mutant, arch)


def test_a_completed_early_replay_is_not_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = gpusim.sim.engine.check_untimed

    def counting(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("gpusim.sim.engine.check_untimed", counting)
    monkeypatch.setattr("gpusim.sim.engine.UNTIMED_REPLAY_AFTER_EVENTS", 100)
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 4096, "N": 4096, "K": 1024})
    gpusim.sim.engine.simulate(sched, arch)
    assert calls == [1]


def test_fa3_reading_the_previous_tiles_event_still_jumps_whole_periods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FA3's producer waits for the previous m-block's O (``at: {tile: tile - 1}``): the replay shifts the
    event's arrivals with a jump, so a 128k sequence is decided in a few units per run."""
    arch = load_arch("h100")
    sched = _resolve_schedule(
        "attn_fa3_fwd", arch, {"batch": 1, "heads": 16, "seqlen_q": 131072, "head_dim": 128}
    )
    plan = plan_work(sched, arch)
    found = replay(sched, arch, plan)
    assert found.decided and found.deadlock is None
    assert len(plan.groups[0].slots[0]) > 100
    monkeypatch.setattr("gpusim.sim.untimed._event_tile_window", lambda *_: None)  # no jumps
    assert not replay(sched, arch, plan, max_steps=5 * found.steps).decided


@pytest.mark.parametrize(
    ("text", "offset"),
    [("tile", 0), ("tile - 1", -1), ("tile + 2", 2), ("3 + tile", 3), ("tile * 2", None), ("tile - n", None),
     ("tile % 2", None), ("1 - tile", None)],
)  # fmt: skip
def test_tile_offsets_the_replay_can_shift(text: str, offset: int | None) -> None:
    from gpusim.sim.untimed import _name_offset

    assert _name_offset(text, "tile") == offset


FAMILIES = [
    ("gemm_ws_cooperative", "h100", {"M": 8192, "N": 8192, "K": 8192}),
    ("gemm_streamk", "h100", {"M": 4096, "N": 4096, "K": 4096}),
    ("attn_fa3_fwd", "h100", {"batch": 4, "heads": 16, "seqlen_q": 4096, "seqlen_kv": 4096, "head_dim": 128}),
    ("attn_fa3_fwd", "h100",
     {"batch": 2, "heads": 8, "seqlen_q": 2048, "seqlen_kv": 2048, "head_dim": 128, "causal": 1}),
    ("gemm_tcgen05", "b200", {"M": 8192, "N": 8192, "K": 8192}),
    ("attn_decode_splitkv", "h100", {}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "arch_id", "problem"), FAMILIES)
def test_a_missing_signal_in_the_last_unit_is_named_before_simulating(
    name: str, arch_id: str, problem: dict
) -> None:
    """In the last unit, the first role waits on a signal that nobody gives (a cycle mutant whose arrival
    sits in a loop the unit never runs, or a wait with no arrival): the replay names it, in every family."""
    arch = load_arch(arch_id)
    sched = _resolve_schedule(name, arch, problem)
    named = 0
    for label, mutant in mutants(sched, max_cycles=6):
        if not label.startswith("cycle"):
            continue
        found = replay(mutant, arch, plan_work(mutant, arch))
        named += found.deadlock is not None
        if named:
            break
    assert named >= 1, f"{name}: no cycle mutant named"


SHIPPED = [
    ("gemm_ws_pingpong", "h100"), ("gemm_ws_cooperative", "h100"), ("gemm_tcgen05", "b200"),
    ("gemm_fp8_deepgemm", "h800"), ("gemm_cp_async", "a100"), ("gemm_sync", "v100"), ("gemm_streamk", "h100"),
]  # fmt: skip


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    case=st.sampled_from(SHIPPED),
    m=st.integers(1, 48).map(lambda x: 128 * x),
    n=st.integers(1, 48).map(lambda x: 128 * x),
    k=st.integers(1, 32).map(lambda x: 64 * x),
)
def test_the_replay_never_refuses_a_shipped_gemm(case: tuple[str, str], m: int, n: int, k: int) -> None:
    name, arch_id = case
    arch = load_arch(arch_id)
    sched = _resolve_schedule(name, arch, {"M": m, "N": n, "K": k})
    found = replay(sched, arch, plan_work(sched, arch))
    assert found.deadlock is None, found.deadlock


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(["attn_fa3_fwd", "attn_fa2_fwd", "attn_fa4_fwd"]),
    seqlen=st.integers(1, 24).map(lambda x: 128 * x),
    heads=st.integers(1, 8),
    causal=st.integers(0, 1),
)
def test_the_replay_never_refuses_a_shipped_attention(
    name: str, seqlen: int, heads: int, causal: int
) -> None:
    arch = load_arch({"attn_fa2_fwd": "a100", "attn_fa4_fwd": "b200"}.get(name, "h100"))
    problem = {
        "batch": 1,
        "heads": heads,
        "seqlen_q": seqlen,
        "seqlen_kv": seqlen,
        "head_dim": 128,
        "causal": causal,
    }
    sched = _resolve_schedule(name, arch, problem)
    found = replay(sched, arch, plan_work(sched, arch))
    assert found.deadlock is None, found.deadlock


def test_the_last_unit_guard_names_the_grid_corner() -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 1024, "N": 512, "K": 512})
    assert last_unit_guard(sched) == "m == 7 and n == 3"


def test_what_the_replay_refuses_the_simulation_never_completes() -> None:
    """Soundness over a sample of late mutants (bench/deadlock_mutations.py runs them all: 0 false refusals
    in 416): each one the replay refuses, simulated with both checks off, does not complete."""
    from unittest.mock import patch

    from gpusim.errors import GpusimError
    from gpusim.sim.engine import simulate

    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 2048, "N": 2048, "K": 512})
    refused = 0
    for _, mutant in list(mutants(sched, max_cycles=8))[::2]:
        if replay(mutant, arch, plan_work(mutant, arch)).deadlock is None:
            continue
        refused += 1
        with (
            patch("gpusim.schedule.check.check_balance"),
            patch("gpusim.sim.engine.check_untimed"),
            pytest.raises(GpusimError),
        ):
            simulate(mutant, arch)
    assert refused >= 2


def test_the_power_models_later_simulations_do_not_replay_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the power model a prediction simulates the kernel at several clocks: the deadlock replay,
    which no clock changes, runs with the first only."""
    modes: list[str] = []
    real = gpusim.summarize.simulate

    def recording(*args: object, **kwargs: object) -> object:
        modes.append(str(kwargs.get("replay")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("gpusim.summarize.simulate", recording)
    prediction = gpusim.predict("gemm_ws_pingpong", "h800", M=2048, N=2048, K=2048, attribute=False)
    assert prediction.sim["power_simulations"] == len(modes) > 1
    assert modes == ["early"] + ["none"] * (len(modes) - 1)


def _causal_fa3(arch: Any) -> Any:
    return _resolve_schedule(
        "attn_fa3_fwd", arch, {"batch": 1, "heads": 8, "seqlen_q": 2048, "head_dim": 128, "causal": True}
    )


def test_a_late_replay_resumes_after_the_early_runs() -> None:
    """Causal attention has a distinct run per m-block mix: the early replay stops at its run cap, and a
    later replay resumed from it plays only the runs left and decides as a full replay does."""
    from gpusim.sim.untimed import MAX_STEPS

    arch = load_arch("h100")
    sched = _causal_fa3(arch)
    plan = plan_work(sched, arch)
    early = replay(sched, arch, plan, max_steps=200_000, max_runs=4)
    assert early.stopped == "run_cap" and early.runs == 4 and early.runs_total > 4 and not early.decided
    assert early.worth_repeating(MAX_STEPS)
    resumed = replay(sched, arch, plan, resume=early)
    full = replay(sched, arch, plan)
    assert resumed.decided and full.decided and resumed.deadlock is None
    assert (resumed.steps, resumed.runs) == (full.steps, full.runs)
    assert not early.worth_repeating(early.steps + 1)  # the runs left cannot fit: a late replay would give up


def test_a_late_replay_that_would_give_up_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = gpusim.sim.engine.check_untimed

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("resume"))
        return real(*args, **kwargs)

    monkeypatch.setattr("gpusim.sim.engine.check_untimed", counting)
    monkeypatch.setattr("gpusim.sim.engine.UNTIMED_REPLAY_AFTER_EVENTS", 100)
    arch = load_arch("h100")
    sched = _causal_fa3(arch)
    gpusim.sim.engine.simulate(sched, arch)
    assert len(calls) == 2 and calls[1] is not None and calls[1].stopped == "run_cap"  # resumed
    calls.clear()
    early = replay(sched, arch, plan_work(sched, arch), max_steps=200_000, max_runs=4)
    monkeypatch.setattr("gpusim.sim.engine.UNTIMED_MAX_STEPS", early.steps + 1)  # too few for the runs left
    gpusim.sim.engine.simulate(sched, arch)
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("wait_at", "arrive_at", "deadlocks"),
    [
        # the producer's last acquire needs k-tile KT-1-STAGES freed; math, waiting before it consumes
        # KT-STAGES, has freed only up to KT-STAGES-2
        ("k == KT - STAGES", "k == k_end - 1", True),
        # one acquire earlier, the stage it needs is free: no cycle
        ("k == KT - STAGES", "k == k_end - 2", False),
    ],
)
def test_a_cycle_deep_inside_the_k_loop_is_decided_with_the_loop_jumped(
    tmp_path: Path, wait_at: str, arrive_at: str, deadlocks: bool
) -> None:
    """The replay jumps periods of the k-loop (gpusim/sim/replayloops.py) only while the guards it read
    keep their values: a cycle a ring's depth before the end of a 2,048-k-tile unit is still found, and its
    harmless neighbour decided deadlock-free, in a few hundred statements; the simulation agrees."""
    text = (SCHEDULES / "gemm_ws_pingpong.yaml").read_text().replace("gemm_ws_pingpong", "deep_cycle", 1)
    path = tmp_path / "deep_cycle.yaml"
    path.write_text(pingpong_event_cycle(text, "deep", wait_at, arrive_at))
    arch = load_arch("h100")
    big = _resolve_schedule(str(path), arch, {"M": 1024, "N": 1024, "K": 131072})
    found = replay(big, arch, plan_work(big, arch))
    assert found.decided
    assert (found.deadlock is not None) == deadlocks
    assert found.steps < 2_000  # 2,048 k-tiles per unit: the loop was jumped
    if deadlocks:
        assert "event 'deep' for tile" in found.deadlock and "waiting for an empty stage" in found.deadlock
    from unittest.mock import patch

    from gpusim.sim.engine import simulate

    small = _resolve_schedule(str(path), arch, {"M": 1024, "N": 1024, "K": 2048})
    with patch("gpusim.schedule.check.check_balance"), patch("gpusim.sim.engine.check_untimed"):
        if deadlocks:
            with pytest.raises(DeadlockError):
                simulate(small, arch)
        else:
            simulate(small, arch)


@pytest.mark.parametrize(
    ("name", "arch_id"),
    [("gemm_ws_pingpong", "h100"), ("gemm_sync", "v100"), ("gemm_tcgen05", "b200")],
)  # a turnstile ping-pong; __syncthreads phases; a CTA pair's two producers on one ring
def test_loop_jumps_make_the_replay_independent_of_k(name: str, arch_id: str) -> None:
    """A unit's k-loop is jumped: the replay of a shipped GEMM runs about as many statements at K = 65536
    as at K = 4096, and decides the same way as a replay without loop jumps."""
    from unittest.mock import patch

    arch = load_arch(arch_id)
    steps = {}
    for k in (4096, 65536):
        sched = _resolve_schedule(name, arch, {"M": 4096, "N": 4096, "K": k})
        found = replay(sched, arch, plan_work(sched, arch))
        assert found.decided and found.deadlock is None
        steps[k] = found.steps
    assert steps[65536] <= steps[4096] + 200
    sched = _resolve_schedule(name, arch, {"M": 4096, "N": 4096, "K": 4096})
    with patch("gpusim.sim.untimed.LoopPeriods.after_sweep"):
        unjumped = replay(sched, arch, plan_work(sched, arch))
    assert unjumped.decided and unjumped.deadlock is None and unjumped.steps > 2 * steps[4096]
