"""Deadlocks the schedule itself guarantees are reported before simulating, however large the kernel."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import gpusim
from gpusim.api import default_problem, load_arch, reference_arch
from gpusim.arch import Arch
from gpusim.errors import DeadlockError, GpusimError
from gpusim.schedule.balance import check_balance
from gpusim.schedule.check import check_schedule
from gpusim.schedule.ir import Schedule
from gpusim.schedule.load import builtin_schedule_names, load_schedule, read_spec
from gpusim.sim.engine import simulate
from gpusim.sim.untimed import Replay

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


# ---- producer / consumer balance per work unit (gpusim/schedule/balance.py) ----------------------------------

PRODUCER = """\
  producer:
    warps: 1
    regs: PRODUCER_REGS
    program:
    - tiles: {{}}
      do:
      - for: {{k: [k_begin, {stop}]}}
        do:
        - acquire: ab
        - tma_load: {{buf: ab, bytes: rows * BK * elem_bytes, operand: A, multicast: CLUSTER_N}}
        - tma_load: {{buf: ab, bytes: cols * BK * elem_bytes, operand: B}}
{after}"""
MAINLOOP_END = "        - release: {buf: ab, keep: 0}\n"
EPILOGUE = "      - turn: epi_turn\n        do:\n"
TILE_END = "          with: {count: BM * BN // (EPI_M * EPI_N)}\n"


def _pingpong(tmp_path: Path, name: str, *, stop: str = "k_end", after_producer: str = "",
              after_mainloop: str = "", before_epilogue: str = "", after_tile: str = "",
              barriers: str = "") -> Path:  # fmt: skip
    """The ping-pong GEMM with its producer written out (k-tiles ``[k_begin, stop)``) and statements added."""
    text = (SCHEDULES / "gemm_ws_pingpong.yaml").read_text().replace("gemm_ws_pingpong", name, 1)
    start, end = text.index("  producer:\n"), text.index("  math:\n")
    text = text[:start] + PRODUCER.format(stop=stop, after=after_producer) + text[end:]
    for anchor, extra in (
        (MAINLOOP_END, after_mainloop),
        (EPILOGUE, before_epilogue),
        (TILE_END, after_tile),
    ):
        assert text.count(anchor) == 1
        text = text.replace(anchor, anchor + extra)
    text = text.replace("barriers:\n", "barriers:\n" + barriers, 1)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a simulation starts: the deadlock must be refused by the static check."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the simulation started: the static check let the deadlock through")

    monkeypatch.setattr("gpusim.sim.engine.plan_work", refuse)


SIZES = pytest.mark.parametrize("size", [8192, 65536])


@SIZES
def test_one_wait_more_than_the_producer_fills_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    path = _pingpong(tmp_path, "extra_wait", after_mainloop="        - wait: {buf: ab, at: {k: KT}}\n")
    kt = size // 64
    with pytest.raises(DeadlockError) as err:
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)
    assert (
        f"ring 'ab': role math waits {kt + 1} times per tile, role producer fills it {kt} times per tile"
        in str(err.value)
    )
    assert f"waits for stage {{'k': {kt}}} of the tile, which no role fills" in str(err.value)
    assert "roles.math.program[0].tiles.do[0].turn.do[3].wait" in str(err.value)


@SIZES
def test_waiting_again_for_a_released_stage_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    path = _pingpong(tmp_path, "wait_again", after_mainloop="        - wait: {buf: ab, at: {k: KT - 1}}\n")
    with pytest.raises(DeadlockError, match=r"stage \{'k': \d+\} of the tile, which it already released"):
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)


@SIZES
def test_a_producer_loop_one_short_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    path = _pingpong(tmp_path, "short_producer", stop="k_end - 1")
    kt = size // 64
    with pytest.raises(DeadlockError, match=f"role math waits {kt} times per tile, role producer fills it "
                                            f"{kt - 1} times per tile"):  # fmt: skip
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)


def _fed_when_k_fills_the_ring(tmp_path: Path) -> Path:
    """An epilogue that waits for a signal the producer gives only when the k-tiles fill whole rounds of
    the ring (KT a multiple of STAGES)."""
    return _pingpong(
        tmp_path,
        "whole_rounds",
        barriers="  k_done: {kind: event, count: 1}\n",
        after_producer="      - arrive: k_done\n        if: KT % STAGES == 0\n",
        before_epilogue="        - wait: {bar: k_done}\n",
    )


@SIZES
def test_an_epilogue_waiting_for_a_signal_never_given_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    path = _fed_when_k_fills_the_ring(tmp_path)
    assert (size // 64) % 6 != 0
    with pytest.raises(DeadlockError, match=r"event barrier 'k_done' completes a tile after 1 arrivals, but the "
                                            r"roles arrive 0 times per tile; role math waits"):  # fmt: skip
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)


def test_the_same_signal_given_runs(tmp_path: Path) -> None:
    path = _fed_when_k_fills_the_ring(tmp_path)
    assert gpusim.predict(str(path), "h100", M=1024, N=1024, K=6 * 64, attribute=False).time_us > 0


@SIZES
def test_a_barrier_phase_left_open_after_the_last_tile_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    """Both math warpgroups sync on an 8-warp barrier after each of their tiles: on a CTA with an odd
    number of tiles the last sync has no partner, at the very end of the kernel."""
    path = _pingpong(tmp_path, "tile_sync", **MUTATIONS["tile_sync"])
    units = (size // 128) * (size // 256)  # 1x2 clusters of 128x128 tiles over 66 cluster slots of the h100
    odd = units // 66 if units // 66 % 2 else units // 66 + 1
    with pytest.raises(DeadlockError, match=rf"named barrier 'tile_done' completes a phase every 8 warps, but a CTA "
                                            rf"that runs {odd} work units brings it {4 * odd} warps \(math\[0\] syncs "
                                            rf"{odd // 2 + 1} times with 4 warps, math\[1\] syncs {odd // 2} times"):  # fmt: skip
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)


@SIZES
def test_a_producer_filling_a_stage_no_consumer_takes_is_refused_before_simulating(
    tmp_path: Path, size: int, no_simulation: None
) -> None:
    """One empty turn of the ring more per tile than the consumers take: after six tiles no stage is free."""
    path = _pingpong(tmp_path, "long_producer", **MUTATIONS["long_producer"])
    kt = size // 64
    with pytest.raises(DeadlockError, match=rf"ring 'ab': role producer fills it {kt + 1} times per tile, but 1 of "
                                            rf"those stages \(the first \{{'k': {kt}\}}\) are never released by math; "
                                            r"each stays full for good, so a CTA that runs \d+ work units runs out of "
                                            r"the ring's 6 stages"):  # fmt: skip
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)


def test_a_final_barrier_phase_nobody_completes_is_refused_before_simulating(
    tmp_path: Path, no_simulation: None
) -> None:
    """After their last tiles both math warpgroups sync on an 8-warp barrier, and the first once more:
    that third sync waits for a partner that never comes, at the very end of the kernel."""
    path = _pingpong(tmp_path, "final_sync", **MUTATIONS["final_sync"])
    with pytest.raises(DeadlockError, match=r"named barrier 'final' completes a phase every 8 warps, but a CTA "
                                            r"that runs \d+ work units brings it 12 warps \(math\[0\] syncs 2 times"):  # fmt: skip
        gpusim.predict(str(path), "h100", M=65536, N=65536, K=65536, attribute=False)


def test_a_barrier_reached_by_roles_of_different_sizes_is_left_to_the_simulation(tmp_path: Path) -> None:
    """One producer warp and both math warpgroups (9 warps) at an 8-warp barrier after their last tiles:
    the last arrival overshoots the phase and nobody waits, so the check must say nothing (it runs)."""
    path = _pingpong(tmp_path, "final_sync_9", **MUTATIONS["final_sync_9"])
    assert gpusim.predict(str(path), "h100", M=512, N=512, K=448, attribute=False).time_us > 0


def test_the_same_barrier_with_an_even_number_of_tiles_everywhere_runs(tmp_path: Path) -> None:
    path = _pingpong(tmp_path, "tile_sync", **MUTATIONS["tile_sync"])
    assert gpusim.predict(str(path), "h100", M=11 * 128, N=12 * 256, K=512, attribute=False).time_us > 0


MUTATIONS: dict[str, dict[str, str]] = {
    "extra_wait": {"after_mainloop": "        - wait: {buf: ab, at: {k: KT}}\n"},
    "wait_again": {"after_mainloop": "        - wait: {buf: ab, at: {k: KT - 1}}\n"},
    "short_producer": {"stop": "k_end - 1"},
    "whole_rounds": {"barriers": "  k_done: {kind: event, count: 1}\n",
                     "after_producer": "      - arrive: k_done\n        if: KT % STAGES == 0\n",
                     "before_epilogue": "        - wait: {bar: k_done}\n"},
    "tile_sync": {"barriers": "  tile_done: {kind: named, warps: 8}\n", "after_tile": "      - sync: tile_done\n"},
    "final_sync": {"barriers": "  final: {kind: named, warps: 8}\n",
                   "after_tile": "    - sync: final\n    - sync: final\n      if: r == 0\n"},
    "final_sync_9": {"barriers": "  final: {kind: named, warps: 8}\n", "after_producer": "    - sync: final\n",
                     "after_tile": "    - sync: final\n"},
    "long_producer": {"after_producer": "      - for: {k: [k_end, k_end + 1]}\n        do:\n        - acquire: ab\n"},
}  # fmt: skip
PROBLEMS = {"long_producer": {"M": 2048, "N": 2048, "K": 448}}
"""Problems where each mutation deadlocks (the others: M = N = 512, K = 448)."""


def _without_the_balance_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpusim.schedule.check.check_balance", lambda *_: frozenset())
    off = Replay(None, False, 0, 0, 0, "cannot_follow")  # the replay switched off: it never decides
    monkeypatch.setattr("gpusim.sim.engine.check_untimed", lambda *_, **__: off)


@pytest.mark.parametrize("name", sorted(set(MUTATIONS) - {"final_sync_9"}))
def test_what_the_check_refuses_the_simulation_finds_deadlocked(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The static claims agree with the simulator: each refused mutation, simulated, deadlocks."""
    path = _pingpong(tmp_path, name, **MUTATIONS[name])
    problem = PROBLEMS.get(name, {"M": 512, "N": 512, "K": 448})
    with pytest.raises(DeadlockError, match="found before simulating"):
        gpusim.predict(str(path), "h100", attribute=False, **problem)
    _without_the_balance_check(monkeypatch)
    with pytest.raises(DeadlockError, match=r"deadlock at t=[\d.]+ us; blocked roles"):
        gpusim.predict(str(path), "h100", attribute=False, **problem)


# ---- no false alarms: the check fires only where the simulation deadlocks too --------------------------------

PROBLEM_VALUES = {
    "M": st.integers(1, 70_000), "N": st.integers(1, 70_000), "K": st.integers(1, 70_000),
    "batch": st.integers(1, 16), "heads": st.sampled_from([1, 2, 8, 16, 32]),
    "seqlen_q": st.integers(1, 70_000), "seqlen_kv": st.integers(1, 70_000),
    "head_dim": st.sampled_from([64, 96, 128, 192, 256]), "causal": st.sampled_from([0, 1]),
    "bytes": st.integers(1, 2**32),
}  # fmt: skip
PARAM_VALUES = {
    "STAGES": st.integers(1, 8), "SPLITS": st.integers(1, 5), "CLUSTER_N": st.sampled_from([1, 2]),
    "CLUSTER_M": st.sampled_from([1, 2]), "PAIR": st.sampled_from([0, 1]), "ACC_STAGES": st.sampled_from([1, 2]),
    "PINGPONG": st.sampled_from([0, 1]), "INTRA_OVERLAP": st.sampled_from([0, 1]), "BN": st.sampled_from([64, 128, 256]),
    "Q_STAGE": st.sampled_from([1, 2]), "STAGES_Q": st.sampled_from([1, 2]), "STAGES_DO": st.sampled_from([1, 2]),
}  # fmt: skip
SHIPPED = builtin_schedule_names()


@st.composite
def _problems(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(st.sampled_from(SHIPPED))
    keys = [k for k in default_problem(name) if k in PROBLEM_VALUES]
    problem = (
        {k: draw(PROBLEM_VALUES[k]) for k in draw(st.lists(st.sampled_from(keys), unique=True))}
        if keys
        else {}
    )
    params = [p for p in read_spec(name).params if p in PARAM_VALUES]
    if params:
        problem.update(
            {p: draw(PARAM_VALUES[p]) for p in draw(st.lists(st.sampled_from(params), unique=True))}
        )
    return name, problem


def _statically_refused(sched: Schedule, arch: Arch) -> DeadlockError | None:
    try:
        check_schedule(sched, arch)
    except DeadlockError as err:
        return err
    except GpusimError:
        assume(False)
    return None


def _simulation_fails(sched: Schedule, arch: Arch) -> bool:
    """Whether the simulation, without the balance check, fails to complete (deadlocks, or stops on an
    error of the schedule such as a commit without an acquire)."""
    with patch("gpusim.schedule.check.check_balance", lambda *_: frozenset()):
        try:
            simulate(sched, arch)
        except GpusimError:
            return True
    return False


@given(_problems())
@settings(max_examples=40)
def test_shipped_schedules_are_never_refused_where_they_run(case: tuple[str, dict[str, object]]) -> None:
    """Shipped schedules at random sizes and parameters: the balance check never fires (were it to, the
    simulation would have to deadlock as well)."""
    name, problem = case
    arch = load_arch(reference_arch(name))
    try:
        sched = load_schedule(name, arch, problem)
    except GpusimError:
        assume(False)
    refused = _statically_refused(sched, arch)
    assert refused is None or _simulation_fails(sched, arch), f"{name} {problem}: {refused}"


def test_the_check_covers_the_warp_specialized_schedules() -> None:
    """What the property above exercises: the rings and event barriers the check replays in full."""
    covered = {}
    for name in (
        "gemm_ws_pingpong",
        "gemm_ws_cooperative",
        "gemm_tcgen05",
        "gemm_fp8_deepgemm",
        "attn_fa3_fwd",
    ):
        arch = load_arch(reference_arch(name))
        covered[name] = sorted(check_balance(load_schedule(name, arch, {})))
    assert covered == {
        "gemm_ws_pingpong": ["ab"],
        "gemm_ws_cooperative": ["ab"],
        "gemm_tcgen05": ["ab", "acc"],
        "gemm_fp8_deepgemm": ["ab"],
        "attn_fa3_fwd": ["k", "o_stored", "q", "v", "vt"],
    }


ROLE_LINE = re.compile(r"^ {4,}- (wait|acquire|release|commit|arrive|for)\b.*$", re.MULTILINE)
MUTATED = ["gemm_ws_pingpong", "gemm_tcgen05", "gemm_fp8_deepgemm", "attn_fa3_fwd", "attn_fa3_bwd", "attn_fa4_fwd",
           "attn_fa4_bwd", "attn_fa4_bwd_hd256_dq", "attn_fa4_bwd_hd256_dkdv", "attn_decode_splitkv"]  # fmt: skip
SMALL_PROBLEMS = {"gemm": {"M": 512, "N": 512, "K": 448}, "attn": {"batch": 1, "heads": 2, "seqlen_q": 384}}


@st.composite
def _mutated_schedules(draw: st.DrawFn) -> tuple[str, str]:
    """A warp-specialized schedule with one synchronisation line of a role program duplicated or deleted."""
    name = draw(st.sampled_from(MUTATED))
    text = (SCHEDULES / f"{name}.yaml").read_text()
    spot = draw(st.sampled_from(list(ROLE_LINE.finditer(text))))
    line = text[spot.start() : spot.end() + 1]
    edit = line + line if draw(st.booleans()) else ""
    return name, text[: spot.start()] + edit + text[spot.end() + 1 :]


@given(_mutated_schedules())
@settings(max_examples=30)
def test_the_check_never_refuses_a_mutation_the_simulation_runs(case: tuple[str, str]) -> None:
    """A line of a role program duplicated or deleted: whenever the check refuses the result, the
    simulation (without the check) deadlocks too."""
    name, text = case
    arch = load_arch(reference_arch(name))
    problem = (
        SMALL_PROBLEMS["gemm" if name.startswith("gemm") else "attn"] if name != "attn_decode_splitkv" else {}
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.yaml"
        path.write_text(text)
        try:
            sched = load_schedule(str(path), arch, problem)
        except GpusimError:
            assume(False)
        refused = _statically_refused(sched, arch)
        assert refused is None or _simulation_fails(sched, arch), str(refused)


def test_a_consumer_that_releases_a_stage_twice_gets_a_report_not_a_traceback(tmp_path: Path) -> None:
    """Found by the mutation sweep: FA4's epilogue waiting twice for the O staging buffer released it twice,
    which freed the ring slot twice and crashed a later commit (AttributeError); now a deadlock report."""
    text = (SCHEDULES / "attn_fa4_fwd.yaml").read_text()
    line = "        - wait: {buf: osm, at: {n: NB}}\n"
    assert text.count(line) == 1
    path = tmp_path / "attn_fa4_fwd.yaml"
    path.write_text(text.replace(line, line + line))
    with pytest.raises(DeadlockError, match=r"deadlock at t=.*\(waiting for stage .* of 'osm'"):
        gpusim.predict(str(path), "b200", batch=2, heads=16, seqlen_q=512, attribute=False)


def test_units_that_replay_alike_are_replayed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A guard true only in the grid's last unit (it reads ``m`` and ``n``) leaves two kinds of units: the
    balance check replays each role once per kind (the untimed replay's unit classes), not once per
    sampled unit."""
    import gpusim.schedule.balance as balance

    path = _pingpong(tmp_path, "last_unit_guard", barriers="  late: {kind: event, count: 1}\n",
                     before_epilogue="        - arrive: late\n          if: m == ceil_div(M, BM) - 1 and n == 0\n")  # fmt: skip
    made: list[balance._Replayer] = []
    real_init = balance._Replayer.__init__

    def keep(self: balance._Replayer, sched: Schedule) -> None:
        real_init(self, sched)
        made.append(self)

    monkeypatch.setattr(balance._Replayer, "__init__", keep)
    arch = load_arch("h100")
    sched = load_schedule(str(path), arch, {"M": 8192, "N": 8192, "K": 8192})
    check_balance(sched, arch)
    (replayer,) = made
    per_unit = [key for key in replayer.memo if "class" in key]
    assert len({key[-1] for key in per_unit}) == 2
    assert len(per_unit) <= 2 * 2 * 3  # two kinds of unit x two CTAs x (producer + two math replicas)
