"""Fast-forward against the exact event-by-event run: every shipped schedule, random problems and parameters.

The fast-forward skips whole periods only after seeing the state repeat, so the two runs must agree
on the time and on every utilization and byte counter (within 0.5%; in practice to float noise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_golden import PROBLEMS as GOLDEN_PROBLEMS

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import GpusimError, SimulationLimitExceeded
from gpusim.report.trace import trace_events
from gpusim.schedule.load import _read_spec, builtin_schedule_names, load_schedule, schedule_path
from gpusim.sim.engine import simulate
from gpusim.sim.hardware import issued_tensor_flops
from gpusim.sim.limits import HOPELESS_FACTOR, hopeless
from gpusim.sim.scheduler import plan_work
from gpusim.summarize import summarize

SCHEDULES = Path(__file__).resolve().parent.parent / "schedules"

TOLERANCE = 0.005

# Problems with long loops but few tiles: the fast-forward has periods to skip and each run stays small.
PROBLEMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "gemm_sync": st.fixed_dictionaries(
        {
            "M": st.sampled_from([256, 384, 1000]),
            "N": st.sampled_from([256, 512]),
            "K": st.sampled_from([2048, 4096, 4000]),
        }
    ),
    "gemm_cp_async": st.fixed_dictionaries(
        {
            "M": st.sampled_from([512, 1000]),
            "N": st.sampled_from([512, 768]),
            "K": st.sampled_from([2048, 4096]),
            "STAGES": st.sampled_from([3, 4]),
        }
    ),
    "gemm_ws_pingpong": st.fixed_dictionaries(
        {
            "M": st.sampled_from([512, 1024, 1000]),
            "N": st.sampled_from([512, 1024]),
            "K": st.sampled_from([4096, 8192, 6000]),
            "STAGES": st.sampled_from([4, 6, 7]),
        }
    ),
    "gemm_ws_cooperative": st.fixed_dictionaries(
        {
            "M": st.sampled_from([512, 1024]),
            "N": st.sampled_from([512, 1024, 1000]),
            "K": st.sampled_from([4096, 8192]),
            "STAGES": st.sampled_from([4, 5]),
        }
    ),
    "gemm_tcgen05": st.fixed_dictionaries(
        {
            "M": st.sampled_from([512, 1024]),
            "N": st.sampled_from([512, 1024]),
            "K": st.sampled_from([4096, 8192]),
        }
    ),
    "gemm_fp8_deepgemm": st.fixed_dictionaries(
        {
            "M": st.sampled_from([512, 1024]),
            "N": st.sampled_from([512, 1024]),
            "K": st.sampled_from([4096, 8192]),
        }
    ),
    "gemm_fp8_deepgemm_sm100": st.one_of(
        st.fixed_dictionaries(
            {
                "M": st.sampled_from([128, 512, 1000]),
                "N": st.sampled_from([512, 1024]),
                "K": st.sampled_from([4096, 8192, 6000]),
            }
        ),
        st.fixed_dictionaries(
            {
                "groups": st.sampled_from([2, 4]),
                "layout": st.sampled_from(["contiguous", "masked"]),
                "M": st.sampled_from([256, 512]),
                "masked_m": st.sampled_from([100, 256]),
                "N": st.sampled_from([512, 768]),
                "K": st.sampled_from([2048, 4096]),
            }
        ),
    ),
    "attn_fa2_fwd": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([2048, 4096, 3000]),
            "causal": st.booleans(),
        }
    ),
    "attn_fa2_bwd": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([2048, 4096]),
            "causal": st.booleans(),
        }
    ),
    "attn_fa3_fwd": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([4096, 8192, 5000]),
            "head_dim": st.sampled_from([64, 128, 256]),
            "causal": st.booleans(),
        }
    ),
    "attn_fa4_fwd": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([4096, 8192]),
            "causal": st.booleans(),
        }
    ),
    "attn_fa4_bwd_hd256_dq": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([2048, 4096, 3000]),
            "causal": st.booleans(),
        }
    ),
    "attn_fa4_bwd_hd256_dkdv": st.fixed_dictionaries(
        {
            "batch": st.just(1),
            "heads": st.sampled_from([2, 4]),
            "heads_kv": st.sampled_from([1, 2]),
            "seqlen_q": st.sampled_from([2048, 3000]),
            "causal": st.booleans(),
        }
    ),
    "mla_decode_flashmla": st.fixed_dictionaries(
        {"batch": st.sampled_from([2, 4, 8]), "seqlen_kv": st.sampled_from([8192, 16384, 10000])}
    ),
    "mla_decode_flashmla_v1": st.fixed_dictionaries(
        {
            "batch": st.sampled_from([2, 4, 8]),
            "seqlen_q": st.sampled_from([1, 2]),
            "seqlen_kv": st.sampled_from([8192, 16384, 10000]),
        }
    ),
    "mla_decode_flashmla_sparse_fp8": st.fixed_dictionaries(
        {
            "batch": st.sampled_from([2, 4]),
            "topk": st.sampled_from([4096, 6000]),
            "seqlen_q": st.sampled_from([1, 2]),
            "CROSSOVER": st.sampled_from([0, 1]),
        }
    ),
    "stream": st.fixed_dictionaries({"bytes": st.sampled_from([2**24, 3 * 2**23, 2**25])}),
    "stream_l2": st.fixed_dictionaries(
        {"bytes": st.sampled_from([2**23, 48 * 2**20, 80 * 2**20]), "BLOCKS": st.sampled_from([2000, 3001])}
    ),
}


def _run(name: str, problem: dict[str, Any], exact: bool, record: bool = False):
    arch = load_arch(_read_spec(schedule_path(name)).reference_arch)
    return simulate(load_schedule(name, arch, problem), arch, exact=exact, record=record)


def _assert_agree(name: str, problem: dict[str, Any]) -> None:
    try:
        exact_run = _run(name, problem, exact=True)
    except GpusimError:
        return  # a refused combination is refused the same way either way; nothing to compare
    ff_run = _run(name, problem, exact=False)
    a, b = summarize(exact_run), summarize(ff_run)
    where = f"{name} {problem}: fast-forward vs exact"
    # a simulation class that gained a field the snapshot does not know turns the fast-forward off: the
    # runs then agree trivially, so that is a failure here, not a pass
    assert ff_run.fast_forward_off is None, f"{where}: {ff_run.fast_forward_off}"
    assert b.time_us == pytest.approx(a.time_us, rel=TOLERANCE), where
    for unit, value in a.utilization.items():
        assert b.utilization[unit] == pytest.approx(value, rel=TOLERANCE, abs=1e-4), f"{where}: {unit}"
    for counter in ("hbm_read_bytes", "hbm_write_bytes", "hbm_gbps", "l2_gbps", "tflops"):
        assert getattr(b, counter) == pytest.approx(getattr(a, counter), rel=TOLERANCE), f"{where}: {counter}"
    assert ff_run.events <= exact_run.events


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("gemm_ws_pingpong", {"M": 2048, "N": 2048, "K": 4096}),
        ("mla_decode_flashmla", {"batch": 32, "heads": 64, "seqlen_q": 3, "seqlen_kv": 2048}),
        ("gemm_streamk", {"M": 3072, "N": 2560, "K": 2048}),
    ],
)
def test_a_controller_that_sleeps_after_fruitless_snapshots_stays_exact(
    name: str, problem: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sleeping (no snapshots after a run of fruitless ones) only forgoes jumps: with the controller made
    to sleep after every second fruitless snapshot, runs still equal the exact ones, and do sleep."""
    from gpusim.sim import fastforward

    monkeypatch.setattr(fastforward, "_FRUITLESS_SNAPSHOTS", 2)
    monkeypatch.setattr(fastforward, "_FIRST_SLEEP", 1)
    monkeypatch.setattr(fastforward, "_MAX_SLEEP", 4)
    sleeps: list[int] = []
    fall_asleep = fastforward.FastForward._fall_asleep

    def counted(self: fastforward.FastForward) -> None:
        sleeps.append(self._sleep)
        fall_asleep(self)

    monkeypatch.setattr(fastforward.FastForward, "_fall_asleep", counted)
    _assert_agree(name, problem)
    assert sleeps


def test_jumps_land_at_most_their_budget_of_chunks_and_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """A jump adds the skipped periods' chunk-buffer landings one by one (a buffer keeps every landed
    tag), so their total is bounded: past the budget, jumps are cut to the landings left or not taken,
    which only forgoes jumps (a 16M-token FlashMLA decode grew to 22 GB without it)."""
    from gpusim.sim import fastforward

    problem = {"batch": 16, "seqlen_kv": 8192}
    unbounded = _run("mla_decode_flashmla", problem, exact=False)
    budget = 100
    monkeypatch.setattr(fastforward, "MAX_JUMP_LANDINGS", budget)
    controllers: list[fastforward.FastForward] = []
    jump = fastforward.FastForward._jump

    def counted(self: fastforward.FastForward, *args: Any) -> None:
        controllers.append(self)
        jump(self, *args)

    monkeypatch.setattr(fastforward.FastForward, "_jump", counted)
    _assert_agree("mla_decode_flashmla", problem)
    bounded = _run("mla_decode_flashmla", problem, exact=False)
    assert 0 < controllers[-1].jump_landings <= budget
    assert bounded.skipped_events < unbounded.skipped_events  # some jump was cut


def test_kept_reads_stay_within_their_budget_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``MAX_KEPT_READS`` the oldest checkpoints are forgotten with their reads: fewer jumps, same answer."""
    from gpusim.sim import fastforward

    problem = {"M": 8192, "N": 8192, "K": 1024}  # tile-level periods (8 waves of L2 misses) over ~3,700 reads
    unbounded = _run("gemm_ws_pingpong", problem, exact=False)
    budget = 300
    monkeypatch.setattr(fastforward, "MAX_KEPT_READS", budget)
    kept: list[int] = []
    trim = fastforward.FastForward._trim_logs

    def counted(self: fastforward.FastForward) -> None:
        trim(self)
        kept.append(sum(len(log) for _, log in self._logs))

    monkeypatch.setattr(fastforward.FastForward, "_trim_logs", counted)
    _assert_agree("gemm_ws_pingpong", problem)
    bounded = _run("gemm_ws_pingpong", problem, exact=False)
    assert kept and max(kept) <= budget
    assert bounded.skipped_events < unbounded.skipped_events  # a long period was forgone


def _strategy(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """The schedule's random problems; a schedule without its own strategy yet runs its golden problem."""
    if name in PROBLEMS:
        return PROBLEMS[name]
    return st.just(GOLDEN_PROBLEMS.get(name, {}))


@pytest.mark.parametrize("name", builtin_schedule_names())
def test_fast_forward_agrees_with_exact(name: str) -> None:
    """Random problems and parameters of every shipped schedule."""

    @settings(max_examples=3)
    @given(_strategy(name))
    def check(problem: dict[str, Any]) -> None:
        _assert_agree(name, problem)

    check()


def test_random_strategies_name_shipped_schedules() -> None:
    assert set(PROBLEMS) <= set(builtin_schedule_names())


def test_fast_forward_skips_periods_and_the_trace_draws_them() -> None:
    """A long mainloop is fast-forwarded; the recorded trace keeps the detailed periods and draws the
    skipped spans on their own track."""
    problem = {"M": 512, "N": 512, "K": 16384}
    run = _run("gemm_ws_pingpong", problem, exact=False, record=True)
    exact_run = _run("gemm_ws_pingpong", problem, exact=True)
    assert run.jumps and run.events < exact_run.events / 3
    events = trace_events(run)
    skipped = [e for e in events if e.get("cat") == "fast-forward"]
    assert len(skipped) == len(run.jumps)
    assert any(e.get("cat") == "role" for e in events)
    assert run.kernel_ns == pytest.approx(exact_run.kernel_ns, rel=1e-9)


def test_work_limit_counts_events_not_seconds() -> None:
    """Past its event limit a simulation stops with the limit's name, the same on any machine."""
    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"M": 1024, "N": 1024, "K": 4096})
    with pytest.raises(SimulationLimitExceeded, match=r"work limit of 500 events.*--max-events"):
        simulate(sched, arch, exact=True, max_events=500)
    assert SimulationLimitExceeded.exit_code == 5


def test_a_simulation_that_cannot_finish_within_its_limit_stops_early() -> None:
    """Work done so far projects the events a run needs: far past the limit, it stops at a check (every
    25th of the limit) with the projection; within the margin, it runs to the limit as before."""
    arch = load_arch("h100")
    big = load_schedule("gemm_ws_pingpong", arch, {"M": 16384, "N": 16384, "K": 16384})
    with pytest.raises(SimulationLimitExceeded, match=r"stopped early: .* done in [0-9,]+ events, about .* events in "
                       r"all, past its work limit of 5,000 events.*--max-events"):  # fmt: skip
        simulate(big, arch, exact=True, max_events=5_000)
    sched = load_schedule("gemm_ws_pingpong", arch, {"M": 8192, "N": 8192, "K": 8192})
    with pytest.raises(SimulationLimitExceeded) as info:
        simulate(sched, arch, exact=True, max_events=20_000)
    assert "stopped early" not in str(info.value)
    assert "work limit of 20,000 events" in str(info.value)


def test_long_attention_is_judged_by_its_flops_not_by_its_re_read_bytes() -> None:
    """Causal attention re-reads K/V, so its HBM bytes run ahead of its work; the projection reads its
    tensor FLOPs and stops a 64k-token causal FA3 that cannot finish in 50,000 events at the first
    check."""
    arch = load_arch("h100")
    sched = load_schedule("attn_fa3_fwd", arch, {"batch": 1, "heads": 16, "seqlen_q": 65536, "causal": 1})
    with pytest.raises(SimulationLimitExceeded, match=r"stopped early: [0-9.e-]+% of the schedule's work done in "
                       r"2,000 events"):  # fmt: skip
        simulate(sched, arch, max_events=50_000)


@pytest.mark.parametrize("name", sorted(GOLDEN_PROBLEMS))
def test_every_schedule_issues_at_least_its_flops(name: str) -> None:
    """The early stop measures progress by tensor FLOPs issued over the schedule's FLOPs: a schedule that
    issued fewer than it counts would look slower than it is and could be stopped falsely."""
    run = predict(name, record=True, attribute=False, **GOLDEN_PROBLEMS[name]).timeline
    issued = issued_tensor_flops(run.sms)
    if run.sched.flops > 0 and issued > 0:
        assert issued >= run.sched.flops * (1 - 1e-9), f"{name}: {issued:.4g} of {run.sched.flops:.4g} FLOPs"


def test_the_projection_only_judges_measurable_progress() -> None:
    """No judgement before any work is measurable, after all of it, or within the margin."""
    assert hopeless(1_000, 5_000, 0.0) is None
    assert hopeless(1_000, 5_000, 1.0) is None
    assert hopeless(1_000, 5_000, 1_000 / (HOPELESS_FACTOR * 5_000)) is None
    assert hopeless(1_000, 5_000, 0.9 * 1_000 / (HOPELESS_FACTOR * 5_000)) is not None


def test_a_horizon_stops_the_simulation_once_simulated_time_reaches_it() -> None:
    """simulate(horizon_ns=...) stops as soon as the kernel is known to take at least that long, and
    changes nothing when the kernel ends before it."""
    from gpusim.errors import HorizonReached

    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"M": 1024, "N": 1024, "K": 4096})
    full = simulate(sched, arch)
    with pytest.raises(HorizonReached):
        simulate(sched, arch, horizon_ns=full.kernel_ns / 2)
    assert simulate(sched, arch, horizon_ns=full.kernel_ns * 1.01).kernel_ns == full.kernel_ns


def test_a_field_the_snapshot_does_not_know_turns_the_fast_forward_off() -> None:
    """Every Stage field is declared once (slot or occupant); an undeclared one is reported, not skipped."""
    import dataclasses

    from gpusim.sim.fastforward import _KNOWN_FIELDS, unknown_state
    from gpusim.sim.sync import Stage

    assert _KNOWN_FIELDS[Stage] == {f.name for f in dataclasses.fields(Stage)}
    stage = Stage(0)
    assert unknown_state([stage]) is None

    class Grown:
        def __init__(self) -> None:
            self.index, self.novel = 0, 1

    _KNOWN_FIELDS[Grown] = frozenset({"index"})
    try:
        assert "novel" in (unknown_state([Grown()]) or "")
    finally:
        del _KNOWN_FIELDS[Grown]


def test_a_billion_k_iterations_fast_forward_in_few_events() -> None:
    """The mainloop's periods are checked without walking every skipped period (cost grows with tiles)."""
    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"M": 256, "N": 256, "K": 1_000_000_000})
    run = simulate(sched, arch, max_events=200_000)
    assert run.jumps and run.skipped_events > 500_000 * run.events


def test_a_loop_of_10_to_the_12_iterations_past_its_guards_is_checked_by_bisection(tmp_path: Path) -> None:
    """A mainloop bound far past the k-tiles its guards allow (`for: {k: [0, 10**12]}` in CUTLASS 2.x's
    MmaPipelined): every jump checks that the guard `k + 1 < k_end` stays false over the skipped
    periods, which used to take one evaluation per period (hours); interval bisection proves it in a
    few dozen. The kernel is absurd, the prediction finishes."""
    parts = SCHEDULES / "parts"
    warps = (
        (parts / "gemm_warps.yaml").read_text().replace("for: {k: [k_begin, k_end]}", "for: {k: [0, 10**12]}")
    )
    (tmp_path / "warps.yaml").write_text(warps)
    mma = (
        (parts / "gemm_mma_sync.yaml").read_text().replace("extends: parts/gemm_warps", "extends: warps.yaml")
    )
    (tmp_path / "mma.yaml").write_text(mma)
    sync = (
        (SCHEDULES / "gemm_sync.yaml")
        .read_text()
        .replace("extends: parts/gemm_mma_sync", "extends: mma.yaml")
    )
    (tmp_path / "gemm_sync.yaml").write_text(sync)
    arch = load_arch("v100")
    sched = load_schedule(str(tmp_path / "gemm_sync.yaml"), arch, {"M": 256, "N": 256, "K": 256})
    run = simulate(sched, arch, max_events=200_000)
    assert run.jumps and run.skipped_events > 10**9


def test_tile_level_periods_are_found_across_mainloop_jumps() -> None:
    """8192^3 ping-pong: whole tiles are skipped, not only k-iterations inside each tile (the mainloop
    jumps keep the tile loop's checkpoints); the count is simulated work, the same on any machine."""
    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"M": 8192, "N": 8192, "K": 8192})
    run = simulate(sched, arch)
    assert run.events < 15_000 < run.skipped_events


def test_a_kernel_that_never_uses_a_unit_still_fast_forwards() -> None:
    """CUDA-core SGEMM never touches the tensor core: the idle core's last update time is not state
    (it used to grow with the clock in every snapshot, so no period ever matched and 10240^3 fp32 ran
    past the work limit)."""
    arch = load_arch("a100")
    sched = load_schedule("gemm_simt_fp32", arch, {"M": 1024, "N": 1024, "K": 4096, "dtype": "fp32"})
    run = simulate(sched, arch)
    exact_run = simulate(sched, arch, exact=True)
    assert run.jumps and run.events < exact_run.events / 10
    assert run.kernel_ns == pytest.approx(exact_run.kernel_ns, rel=1e-9)


def test_a_jump_moves_every_ring_credit_key_at_once() -> None:
    """Credits for stages k = 51..54 in flight, a jump of 2 periods of k += 1: each credit moves to k + 2.
    Renaming keys one by one let k = 51's credit overwrite k = 53's before that one moved (the
    false deadlock of gemm_fp8_deepgemm M=8192 N=4096 K=7168 groups=4 BN=160 CLUSTER_N=2 STAGE_ROUNDS=0,
    whose A multicast halves landed on the wrong stages)."""
    import simpy

    from gpusim.sim.fastforward import _Capture, _move_tokens
    from gpusim.sim.sync import StageRing, tag_key

    ring = StageRing(simpy.Environment(), "ab", 4, "tma", "threads", 1, lambda _tag: 1)
    credits = {51: 20480.0, 52: 37376.0, 53: 28928.0, 54: 37376.0}
    ring.credits = {tag_key({"tile": 47, "k": k}): b for k, b in credits.items()}
    capture = _Capture.__new__(_Capture)
    capture.struct, capture.values, capture.loops, capture.handles = [], [], [], []
    for key in sorted(ring.credits):
        capture.tag(dict(key), ("key", ring, key))
    deltas = [1 if name == "k" else 0 for name, _ in capture.loops]
    _move_tokens(capture.handles, deltas, periods=2)
    assert ring.credits == {tag_key({"tile": 47, "k": k + 2}): b for k, b in credits.items()}


def test_groups_that_never_repeat_together_stop_recording_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Causal attention: every SM group has its own K-loop lengths, so the chip-wide state never repeats.
    After a stretch of checkpoints without a full snapshot the kept snapshots are forgotten and reads are
    no longer recorded (they could only serve a match); the result stays the exact run's."""
    from gpusim.sim import engine
    from gpusim.sim.fastforward import _MAX_IDLE_CHECKPOINTS, FastForward

    made: list[Any] = []

    class Counting(FastForward):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.reads = self.recorded = 0
            made.append(self)

        def observe(self, *args: Any, **kwargs: Any) -> None:
            self.reads += 1
            self.recorded += self.logging
            super().observe(*args, **kwargs)

    monkeypatch.setattr(engine, "FastForward", Counting)
    problem = {"batch": 4, "heads": 16, "seqlen_q": 2048, "causal": 1}
    _assert_agree("attn_fa3_fwd", problem)
    ff = made[-1]
    assert not ff.jumps and ff.recorded < ff.reads
    assert ff._idle >= _MAX_IDLE_CHECKPOINTS and not ff._history and not ff.logging


def test_a_role_launch_forgets_snapshots_that_can_no_longer_match() -> None:
    """Every snapshot records how many roles were ever registered, so after a launch (a grid CTA) no kept
    snapshot can match: they are dropped and reads stop being recorded (FA2 causal 4x16x4096: recorded
    reads 210k -> 3.8k, the same result)."""
    from types import SimpleNamespace

    import simpy

    from gpusim.sim.fastforward import FastForward

    runner = SimpleNamespace(cta=SimpleNamespace(rings={}, chunks={}))

    ff = FastForward(simpy.Environment(), None, [], [])  # type: ignore[arg-type]
    ff._history[("loop",)] = [object()]  # type: ignore[list-item]
    ff.logging = True
    ff.add_runner(runner, object())  # type: ignore[arg-type]
    assert not ff._history and not ff.logging


def _guarded_in_the_mainloop(tmp_path: Path) -> Path:
    """Ping-pong whose producer arrives on an event after the last k-tile of the grid's last unit (a guard
    on the unit's coordinates inside the k-loop; nothing waits on it)."""
    from test_static_deadlock import _pingpong

    path = _pingpong(tmp_path, "guarded_mainloop", barriers="  late: {kind: event, count: 1}\n")
    text = path.read_text()
    acquire = "        - acquire: ab\n"
    last = "m == ceil_div(M, BM) - 1 and n == ceil_div(N, BN) - 1"
    path.write_text(
        text.replace(
            acquire, acquire + f"        - arrive: late\n          if: ({last}) and k == k_end - 1\n"
        )
    )
    return path


@pytest.mark.parametrize("problem", [{"M": 8192, "N": 8192, "K": 1024}, {"M": 8192, "N": 4096, "K": 2048}])
def test_a_guard_on_the_units_coordinates_in_the_mainloop_agrees_with_exact(
    tmp_path: Path, problem: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard reads the unit's fields inside the k-loop: the k-level jumps log it as a summary, checked
    in every tile a tile-level jump skips (gpusim/sim/fastforward.py `_holds_summary`)."""
    import gpusim.sim.fastforward as fastforward

    checked: list[int] = []
    real = fastforward._holds_summary

    def counting(summary: tuple, d: dict[str, int], periods: int) -> int:
        checked.append(periods)
        return real(summary, d, periods)

    monkeypatch.setattr(fastforward, "_holds_summary", counting)
    path = _guarded_in_the_mainloop(tmp_path)
    arch = load_arch("h100")
    sched = load_schedule(str(path), arch, problem)
    exact_run, ff_run = simulate(sched, arch, exact=True), simulate(sched, arch)
    a, b = summarize(exact_run), summarize(ff_run)
    assert b.time_us == pytest.approx(a.time_us, rel=TOLERANCE)
    for unit, value in a.utilization.items():
        assert b.utilization[unit] == pytest.approx(value, rel=TOLERANCE, abs=1e-4), unit
    for counter in ("hbm_read_bytes", "hbm_write_bytes", "tflops"):
        assert getattr(b, counter) == pytest.approx(getattr(a, counter), rel=TOLERANCE), counter
    assert ff_run.events < exact_run.events * 0.7
    assert checked  # tile-level jumps checked the summaries


def test_work_in_the_middle_of_one_rows_mainloop_agrees_with_exact(tmp_path: Path) -> None:
    """A heavy CUDA-core op at one k-tile of the units at m = 5 (a guard on the unit's coordinates and the
    loop variable): whatever the jumps skip, the fast-forward agrees with exact, op included."""
    path = _guarded_in_the_mainloop(tmp_path)
    wait = "          - wait: ab\n"
    text = path.read_text()
    assert text.count(wait) == 1
    path.write_text(
        text.replace(
            wait,
            wait + "          - cuda: {mix: convert, elems: 4000000}\n            if: m == 5 and k == 9\n",
        )
    )
    arch = load_arch("h100")
    sched = load_schedule(str(path), arch, {"M": 8192, "N": 8192, "K": 1024})
    exact_run, ff_run = simulate(sched, arch, exact=True), simulate(sched, arch)
    a, b = summarize(exact_run), summarize(ff_run)
    assert b.time_us == pytest.approx(a.time_us, rel=TOLERANCE)
    assert b.utilization["fp32"] == pytest.approx(a.utilization["fp32"], rel=TOLERANCE, abs=1e-4)
    (tmp_path / "plain").mkdir()
    plain = summarize(simulate(load_schedule(str(_guarded_in_the_mainloop(tmp_path / "plain")), arch,
                                             {"M": 8192, "N": 8192, "K": 1024}), arch))  # fmt: skip
    assert a.time_us > plain.time_us * 1.001  # the op costs something the jump must not skip


def test_slots_whose_units_run_alike_are_one_group(tmp_path: Path) -> None:
    """The guard reads m and n, so every slot's units differ by coordinates, but in all slots but the one
    running the grid's last unit it is false throughout: those slots run alike and are simulated once."""
    path = _guarded_in_the_mainloop(tmp_path)
    arch = load_arch("h100")
    sched = load_schedule(str(path), arch, {"M": 8192, "N": 8192, "K": 1024})
    plan = plan_work(sched, arch)
    assert len(plan.groups) <= 3
    assert sum(g.weight for g in plan.groups) == 66


def test_a_role_that_never_waits_on_its_cp_async_queue_still_fast_forwards() -> None:
    """FA4's hd256 dK/dV kernel loads LSE and dPsum with cp.async completing on mbarriers: the load warp never
    drains its cp_async queue, whose completed head must not grow the state (no period would ever repeat)."""
    problem = {"batch": 1, "heads": 2, "seqlen_q": 8192}
    ff_run = _run("attn_fa4_bwd_hd256_dkdv", problem, exact=False)
    assert ff_run.skipped_events > ff_run.events
    _assert_agree("attn_fa4_bwd_hd256_dkdv", {"batch": 1, "heads": 1, "seqlen_q": 4096})
