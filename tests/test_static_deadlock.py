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


def _pingpong(tmp_path: Path, name: str, *, stop: str = "k_end", after_producer: str = "",
              after_mainloop: str = "", before_epilogue: str = "", barriers: str = "") -> Path:  # fmt: skip
    """The ping-pong GEMM with its producer written out (k-tiles ``[k_begin, stop)``) and statements added."""
    text = (SCHEDULES / "gemm_ws_pingpong.yaml").read_text().replace("gemm_ws_pingpong", name, 1)
    start, end = text.index("  producer:\n"), text.index("  math:\n")
    text = text[:start] + PRODUCER.format(stop=stop, after=after_producer) + text[end:]
    for anchor, extra in ((MAINLOOP_END, after_mainloop), (EPILOGUE, before_epilogue)):
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
    assert f"ring 'ab': role math waits {kt + 1} times per tile, role producer fills it {kt} times per tile" in str(
        err.value
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
