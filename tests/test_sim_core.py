"""Core simulator behaviour: determinism, physics bounds, deadlock reports, refusals with numbers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import DeadlockError, ScheduleRefused
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate

H100 = load_arch("h100")


def _predict(name: str, arch=H100, **overrides):
    return predict(name, arch, costs="datasheet", attribute=False, **overrides)


def test_same_input_gives_identical_output() -> None:
    """Two runs of the same prediction agree bit for bit."""
    a = _predict("gemm_ws_pingpong", M=2048, N=2048, K=1024).to_dict()
    b = _predict("gemm_ws_pingpong", M=2048, N=2048, K=1024).to_dict()
    a.pop("sim"), b.pop("sim")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@settings(max_examples=12, deadline=None)
@given(
    m=st.sampled_from([256, 1024, 3072, 4096]),
    n=st.sampled_from([256, 1024, 2048, 4096]),
    k=st.sampled_from([128, 512, 2048]),
)
def test_time_never_below_roofline_and_hbm_at_least_compulsory(m: int, n: int, k: int) -> None:
    """Time >= max(FLOPs / dense peak, compulsory bytes / HBM bandwidth); HBM reads >= inputs read once."""
    p = _predict("gemm_ws_pingpong", M=m, N=n, K=k)
    assert p.time_us >= p.roofline_us * (1 - 1e-9)
    compulsory_reads = (m * k + n * k) * 2
    assert p.hbm_read_bytes >= compulsory_reads * (1 - 1e-6)


@settings(max_examples=6, deadline=None)
@given(scale=st.sampled_from([1.1, 1.5, 2.0]), size=st.sampled_from([1024, 2048]))
def test_more_bandwidth_or_clock_never_slower(scale: float, size: int) -> None:
    """Raising HBM bandwidth or the SM clock never makes a kernel slower."""
    base = _predict("gemm_ws_pingpong", M=size, N=size, K=size).time_us
    mem = H100.memory.model_copy(
        update={"hbm_bandwidth_bytes_per_s": H100.memory.hbm_bandwidth_bytes_per_s * scale}
    )
    faster_mem = H100.model_copy(update={"memory": mem})
    assert _predict("gemm_ws_pingpong", arch=faster_mem, M=size, N=size, K=size).time_us <= base * (1 + 1e-9)
    cal = H100.calibration.model_copy(update={"sustained_clock_mhz": H100.clocks.tensor_clock_mhz * scale})
    faster_clock = H100.model_copy(update={"calibration": cal})
    assert _predict("gemm_ws_pingpong", arch=faster_clock, M=size, N=size, K=size).time_us <= base * (
        1 + 1e-9
    )


@settings(max_examples=6, deadline=None)
@given(factor=st.sampled_from([0.25, 0.5, 2.0, 4.0]))
def test_hbm_bytes_fall_when_l2_reuse_rises(factor: float) -> None:
    """A larger L2 keeps more panels between waves: HBM reads never rise with L2 capacity."""
    size = {"M": 8192, "N": 8192, "K": 2048}

    def hbm_reads(l2_bytes: float) -> float:
        arch = H100.model_copy(update={"memory": H100.memory.model_copy(update={"l2_size_bytes": l2_bytes})})
        return simulate(load_schedule("gemm_ws_pingpong", arch, size), arch).net.hbm_read_bytes

    small, large = sorted([H100.memory.l2_size_bytes, H100.memory.l2_size_bytes * factor])
    assert hbm_reads(large) <= hbm_reads(small) * (1 + 1e-9)


def test_tma_multicast_lowers_l2_traffic() -> None:
    """Multicasting A over a 1x2 cluster halves A's L2->SM reads."""
    with_mc = simulate(load_schedule("gemm_ws_pingpong", H100, {"M": 4096, "N": 4096, "K": 1024}), H100)
    without = simulate(
        load_schedule("gemm_ws_pingpong", H100, {"M": 4096, "N": 4096, "K": 1024, "CLUSTER_N": 1}), H100
    )
    assert with_mc.net.l2_read_bytes < 0.8 * without.net.l2_read_bytes


def test_more_stages_help_until_shared_memory_runs_out() -> None:
    """Stages 2 -> 4 speed up the mainloop; 8 stages of 32 KiB do not fit and are refused with numbers."""
    t2 = _predict("gemm_ws_pingpong", M=4096, N=4096, K=4096, STAGES=2).time_us
    t4 = _predict("gemm_ws_pingpong", M=4096, N=4096, K=4096, STAGES=4).time_us
    assert t4 < t2
    with pytest.raises(ScheduleRefused, match=r"KiB shared memory per CTA, h100 allows 227 KiB"):
        _predict("gemm_ws_pingpong", STAGES=8)


DEADLOCK = """
schedule: deadlock_demo
reference_arch: h100
problem: {M: 256, N: 256, K: 256, dtype: bf16}
params: {KT: 4}
launch:
  grid: {m: 2}
buffers:
  ab: {space: smem, stages: 2, bytes: 1024, protocol: tma->threads}
roles:
  producer:
    warps: 1
    program:
    - tiles: {}
      do:
      - for: {k: KT - 1}
        do:
        - acquire: ab
        - tma_load: {buf: ab, bytes: 1024}
  consumer:
    warps: 4
    program:
    - tiles: {}
      do:
      - for: {k: KT}
        do:
        - wait: ab
        - release: ab
"""


def test_deadlock_is_reported_not_hung(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A consumer waiting on a stage never produced is reported with the blocked role, within a second
    (by the simulator here: the balance check that names it before simulating is switched off)."""
    path = tmp_path / "deadlock_demo.yaml"
    path.write_text(DEADLOCK)
    with monkeypatch.context() as patched:
        patched.setattr("gpusim.schedule.check.check_balance", lambda *_: frozenset())
        start = time.perf_counter()
        with pytest.raises(
            DeadlockError, match=r"blocked roles: consumer .*waiting for stage \{'tile': 0, 'k': 3\}"
        ):
            simulate(load_schedule(str(path), H100), H100)
    assert time.perf_counter() - start < 1.0
    proc = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", str(path), "--arch", "h100"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 4  # deadlock
    assert "deadlock" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "pattern", "status"),
    [
        (["gemm_ws_pingpong", "--set", "BN=256"], "h100 allows 227 KiB per block", 3),
        (["gemm_ws_pingpong", "--arch", "a100", "--set", "STAGES=4"], "wgmma does not exist on a100", 3),
        (["gemm_ws_pingpong", "--set", "STAGS=4"], "unknown parameter 'STAGS'; did you mean 'STAGES'", 2),
        (["gemm_ws_pingpong", "--set", "BM=BQ"], "unknown symbol 'BQ'", 2),
        (["gemm_pingpong", "--arch", "h100"], "did you mean 'gemm_ws_pingpong'", 2),
        (
            ["gemm_ws_pingpong", "--set", "MATH_REGS=264"],
            "asks 264 registers per thread > 256 (setmaxnreg",
            3,
        ),
        (["attn_fa2_fwd", "--arch", "a100", "--set", "REGS=256"], "asks 256 registers per thread > 255\n", 3),
        (
            ["gemm_ws_pingpong", "--set", "MATH_REGS=248"],
            "needs 68,608 registers per CTA > 65,536 per block",
            3,
        ),
        (["gemm_tcgen05", "--arch", "h100"], "tcgen05 does not exist on h100", 3),
    ],
)
def test_refusals_are_one_line_with_their_exit_status(args: list[str], pattern: str, status: int) -> None:
    """Refusals (exit 3) and bad requests (exit 2): one clear line on stderr, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "gpusim", "predict", *args], capture_output=True, text=True)
    assert proc.returncode == status, proc.stderr
    assert pattern in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_op_typo_suggests_the_closest(tmp_path: Path) -> None:
    """A YAML typo in an op name is refused with the closest op."""
    path = tmp_path / "typo.yaml"
    path.write_text(DEADLOCK.replace("- acquire: ab", "- aquire: ab"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "unknown op 'aquire'; did you mean 'acquire'?" in proc.stderr


def test_predict_json_and_trace(tmp_path: Path) -> None:
    """--json has the documented keys; --trace writes a Chrome trace with complete events and counters."""
    trace = tmp_path / "t.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", "gemm_ws_pingpong", "--set", "M=1024", "--set", "N=1024",
         "--json", "--trace", str(trace)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    data = json.loads(proc.stdout)
    for key in ("time_us", "tflops", "hbm_gbps", "utilization", "bottleneck", "costs"):
        assert key in data
    assert {"tensor", "tma", "lsu", "fp32", "sfu", "hbm", "l2"} <= set(data["utilization"])
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" for e in events) and any(
        e["ph"] == "C" and e["name"] == "HBM GB/s" for e in events
    )
    tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"tensor", "lsu"} <= tracks and any(t.startswith("role producer") for t in tracks)
    assert any(t.startswith("role math") for t in tracks)
    last: dict[tuple[int, int], float] = {}
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e)
        if e["ph"] == "X":
            key = (e["pid"], e["tid"])
            assert e["ts"] >= last.get(key, 0.0) and e["dur"] >= 0
            last[key] = e["ts"]
        if e["ph"] != "M":
            assert "ts" in e


def test_trace_counters_stages_and_flows(tmp_path: Path) -> None:
    """The richer trace: L2 hit rate and stages-in-use counters, stage tracks, and flow arrows whose
    start (stage full) and end (the consumer's wait) pair up by id; timestamps monotone per track."""
    trace = tmp_path / "t.json"
    subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", "gemm_ws_pingpong", "--set", "M=1024", "--set", "N=1024",
         "--set", "K=1024", "--json", "--trace", str(trace)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    events = json.loads(trace.read_text())["traceEvents"]
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"HBM GB/s", "L2 GB/s", "L2 hit rate %", "smem stages in use: ab"} <= counters
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e)
        if e["ph"] == "C":
            assert isinstance(e["args"], dict) and e["args"]
        if e["ph"] in ("s", "f"):
            assert "id" in e and "ts" in e
    hit = [e["args"]["hit %"] for e in events if e["name"] == "L2 hit rate %"]
    assert hit and all(0 <= h <= 100 for h in hit)
    stages = [e["args"]["stages"] for e in events if e["name"] == "smem stages in use: ab"]
    assert max(stages) <= 6 and min(stages) >= 0
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    for fid, s in starts.items():
        assert abs(ends[fid]["ts"] - s["ts"]) < 1e-3  # the wait ends when the stage becomes full
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert any(n.startswith("smem ab[0]") for n in names)
    last: dict[tuple[int, int, str], float] = {}
    for e in events:
        if e["ph"] == "M":
            continue
        key = (e["pid"], e["tid"], e["name"] if e["ph"] == "C" else e["ph"])
        assert e["ts"] >= last.get(key, 0.0) - 1e-9
        last[key] = e["ts"]
