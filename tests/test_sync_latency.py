"""The ``sync_latency`` mechanism (engine-fidelity G12): a warp resumes the arch's wake-up time after a
barrier completes, named barriers for every participant, mbarriers for the waiters that blocked."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.api import load_arch, predict
from gpusim.arch import Arch
from gpusim.errors import InputError
from gpusim.mechanisms import in_effect, with_model
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate

ROUNDS = 6
CUDA_ELEMS = 4096

# Two roles meet at a named barrier every round; then one waits (blocked) for the stage the other commits
# after slow CUDA-core work, releases it and does a little work of its own, arriving last at the next
# round: one named-barrier round and one blocked mbarrier wait per round on the critical path.
SCHEDULE = f"""
schedule: sync_demo
reference_arch: h100
problem: {{M: 64, N: 64, K: 64, dtype: bf16}}
launch:
  grid: {{m: 1}}
buffers:
  x: {{space: smem, stages: 1, bytes: 1024, protocol: threads->threads}}
barriers:
  meet: {{kind: named, warps: 8}}
mixes:
  slow: {{fp32: 8}}
  fast: {{fp32: 1}}
roles:
  a:
    warps: 4
    program:
    - tiles: {{}}
      do:
      - for: {{k: {ROUNDS}}}
        do:
        - sync: meet
        - cuda: {{mix: slow, elems: {CUDA_ELEMS}}}
        - acquire: x
        - commit: x
  b:
    warps: 4
    program:
    - tiles: {{}}
      do:
      - for: {{k: {ROUNDS}}}
        do:
        - sync: meet
        - wait: x
        - release: x
        - cuda: {{mix: fast, elems: {CUDA_ELEMS}}}
"""


def _arch(barrier: float | None, mbarrier: float | None, model: str | None = "+sync_latency") -> Arch:
    base = load_arch("h100", costs="datasheet")
    sm = base.sm.model_copy(update={"barrier_wake_cycles": barrier, "mbarrier_wake_cycles": mbarrier})
    return with_model(base.model_copy(update={"sm": sm}), model)


def _time_ns(tmp_path: Path, arch: Arch, exact: bool = False) -> float:
    path = tmp_path / "sync_demo.yaml"
    path.write_text(SCHEDULE)
    return simulate(load_schedule(str(path), arch), arch, exact=exact).kernel_ns


def test_off_changes_nothing_and_an_arch_without_the_times_is_refused(tmp_path: Path) -> None:
    plain = _time_ns(tmp_path, _arch(None, None, model=None))
    assert _time_ns(tmp_path, _arch(40, 40, model=None)) == plain  # measured, but the mechanism is off
    assert in_effect("sync_latency", _arch(40, None))
    assert not in_effect("sync_latency", _arch(40, 40, model=None))
    with pytest.raises(
        InputError, match=r"no sm.barrier_wake_cycles or sm.mbarrier_wake_cycles .* --only sync_latency"
    ):
        _arch(None, None)


def test_each_round_costs_the_wake_up_times(tmp_path: Path) -> None:
    arch = _arch(None, None, model=None)
    ghz = arch.sustained_clock_mhz / 1000
    plain = _time_ns(tmp_path, arch)
    named = _time_ns(tmp_path, _arch(50, None)) - plain
    both = _time_ns(tmp_path, _arch(50, 20)) - plain
    # every round: the named barrier's 50 cycles (the role that completes it pays them too), then the
    # waiting role resumes 20 cycles after the stage it blocked on is committed
    assert named == pytest.approx(ROUNDS * 50 / ghz, rel=1e-9)
    assert both == pytest.approx(ROUNDS * (50 + 20) / ghz, rel=1e-9)


def test_fast_forward_stays_exact(tmp_path: Path) -> None:
    arch = _arch(37, 23)
    assert _time_ns(tmp_path, arch) == pytest.approx(_time_ns(tmp_path, arch, exact=True), rel=1e-12)


@pytest.mark.parametrize(
    ("schedule", "arch_id", "problem"),
    [
        ("mla_decode_flashmla", "h800", {}),
        ("attn_fa2_fwd", "a100", {"batch": 1, "heads": 16, "seqlen_q": 2048}),
        ("gemm_ws_pingpong", "h100", {"M": 2048, "N": 2048, "K": 2048}),
    ],
)
def test_shipped_schedules_slow_down_monotonically_and_fast_forward_agrees(
    schedule: str, arch_id: str, problem: dict
) -> None:
    times = []
    for cycles in (None, 30, 120):
        base = load_arch(arch_id, costs="datasheet")
        sm = base.sm.model_copy(update={"barrier_wake_cycles": cycles, "mbarrier_wake_cycles": cycles})
        arch = with_model(base.model_copy(update={"sm": sm}), "+sync_latency" if cycles else None)
        fast = predict(schedule, arch, costs="datasheet", attribute=False, **problem)
        exact = predict(schedule, arch, costs="datasheet", attribute=False, exact=True, **problem)
        assert fast.time_us == pytest.approx(exact.time_us, rel=5e-3)
        times.append(fast.time_us)
    assert times[0] <= times[1] <= times[2]
    assert times[2] > times[0]


def test_a_negative_wake_up_time_is_refused() -> None:
    base = load_arch("h100", costs="datasheet")
    data = base.model_dump()
    data["sm"]["barrier_wake_cycles"] = -3
    with pytest.raises(InputError, match="barrier_wake_cycles"):
        Arch(**data)


def test_the_cli_refuses_it_on_an_arch_without_the_times_in_one_line() -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "gpusim", "predict", "gemm_ws_pingpong", "--arch", "h100",
                           "--model", "+sync_latency"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sm.barrier_wake_cycles" in lines[0] and "Traceback" not in proc.stderr
