"""A program that never waits is stopped by the work limit, and a signal stops every role of a running
simulation at once (its exception, raised in one role, would only fail that role's simpy process)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import gpusim
from gpusim.errors import SimulationLimitExceeded
from gpusim.schedule.load import schedules_dir
from gpusim.sim.limits import MIN_OPS_PER_STEP, WorkBudget, stop_simulations

LOOP = "      - for: {a: ARRAYS_READ}\n"


def _stream_with_loop(tmp_path: Path, loop: str) -> Path:
    text = (schedules_dir() / "stream.yaml").read_text()
    assert LOOP in text
    path = tmp_path / "runaway.yaml"
    path.write_text(text.replace(LOOP, loop))
    return path


@pytest.mark.parametrize(
    "loop",
    [
        "      - for: {a: 10**12}\n",
        "      - for: {b: 10**12}\n        do:\n        - ldg: {bytes: 4}\n          if: op == 'none'\n"
        + LOOP,
    ],
    ids=["async-loads", "guarded-off-body"],
)
def test_a_loop_that_never_waits_stops_at_the_work_limit(tmp_path: Path, loop: str) -> None:
    path = _stream_with_loop(tmp_path, loop)
    with pytest.raises(SimulationLimitExceeded) as info:
        gpusim.predict(str(path), "h100", max_events=100_000, costs="datasheet")
    message = str(info.value)
    assert f"{MIN_OPS_PER_STEP:,} program operations without waiting" in message
    assert "runaway.yaml" in message and "--max-events" in message and "\n" not in message


def test_the_per_step_bound_grows_with_the_event_limit() -> None:
    assert WorkBudget(None).per_step > 10**15
    assert WorkBudget(1_000).per_step == MIN_OPS_PER_STEP
    assert WorkBudget(5_000_000).per_step == 100_000
    assert WorkBudget(50_000_000).per_step == 1_000_000


def test_stop_simulations_ends_a_running_simulation_with_the_signal_exception() -> None:
    """What Ctrl-C and SIGTERM do on the command line (gpusim.cli_guard): the simulation ends within
    its current step, whichever role is running, with no result."""
    done = threading.Event()

    def keep_stopping() -> None:  # until the simulation has started (planning and the pre-check come first)
        while not done.wait(0.2):
            stop_simulations(KeyboardInterrupt)

    stopper = threading.Thread(target=keep_stopping, daemon=True)
    stopper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            gpusim.predict("gemm_ws_pingpong", "h100", M=16384, N=16384, K=16384, exact=True,
                           costs="datasheet")  # fmt: skip
    finally:
        done.set()
        stopper.join()
