"""auto:gemm and the directions kernel engineers know, on every generation's GEMM path."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.autotune import MAX_SIMULATIONS, search_gemm
from gpusim.costs import with_costs
from gpusim.errors import InputError
from gpusim.schedule.load import load_schedule

NATIVE_UNIT = {
    "v100": "gemm_sync",
    "a100": ("gemm_sync", "gemm_cp_async"),
    "h100": "gemm_ws",
    "b200": "gemm_tcgen05",
}


@pytest.mark.parametrize("arch_id", ["v100", "a100", "h100", "b200"])
def test_small_m_is_memory_bound_and_large_square_compute_bound(arch_id: str) -> None:
    """M=32 streams B from HBM (the best configuration's verdict names HBM); 4096³ keeps the tensor cores
    >= 75% busy within 1.25x of the FLOP bound."""
    arch = load_arch(arch_id)
    problem = {"M": 32, "N": 8192, "K": 8192, "dtype": "fp16"}
    # on v100 / a100 the 8-simulation budget stops at a split-K pick ~13% slower and tail-bound; the
    # exhaustive search is cheap there (small tiles, few SMs), so the verdict is checked on its pick
    budget = None if arch_id in ("v100", "a100") else MAX_SIMULATIONS
    pick, _ = search_gemm(with_costs(arch, "datasheet"), problem, max_simulations=budget)
    assert pick.choice is not None
    small = predict(pick.choice["schedule"], arch, costs="datasheet", **problem, **pick.choice["params"])
    assert "HBM" in small.verdict, small.verdict
    assert small.utilization["hbm"] >= 0.6
    large, tried = search_gemm(arch, {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16"})
    assert large.utilization["tensor"] >= 0.75
    assert large.time_us <= 1.25 * large.roofline_us
    assert large.choice is not None and large.choice["schedule"].startswith(NATIVE_UNIT[arch_id])
    assert len(tried) >= 2 and all(c.origin for c in tried)  # every candidate named by its library origin


def test_auto_reports_its_choice_and_refuses_schedule_parameters() -> None:
    """The JSON names the chosen schedule and parameters; --set of a tile parameter is refused."""
    proc = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", "auto:gemm", "--arch", "h100", "--set", "M=1024",
         "--set", "N=1024", "--set", "K=1024"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "auto choice" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", "auto:gemm", "--set", "BN=64"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "only the problem" in bad.stderr and "Traceback" not in bad.stderr


def test_split_k_helps_a_gemm_with_few_tiles() -> None:
    """512x512x32768 has 8 output tiles for 132 SMs: splitting K four ways is much faster."""
    h100 = load_arch("h100")
    problem = {"M": 512, "N": 512, "K": 32768}

    def time_us(splits: int) -> float:
        sched = load_schedule("gemm_ws_cooperative", h100, {**problem, "SPLITS": splits})
        return predict(sched, h100, costs="datasheet", attribute=False).time_us

    assert time_us(4) < 0.5 * time_us(1)


# Measured maxima of large square BF16/FP16 GEMMs (cuBLAS via PyTorch), with their sources; see
# ../shared/measured. The model is not fitted to them: these bound how far datasheet costs land.
MEASURED_MAXIMA = [
    ("gemm_sync", "v100", "fp16", 97.36,
     "zzc0721/torch-performance-test-data issue #140: Tesla V100-SXM2-16GB torch.mm fp16 N=8192"),
    ("gemm_cp_async", "a100", "bf16", 271.2,
     "stas00/ml-engineering compute/accelerator/README.md MAMF table: A100 SXM bf16 271.2 TFLOPS"),
    ("gemm_ws_pingpong", "h100", "bf16", 797.51,
     "zzc0721/torch-performance-test-data issue #79: H100 80GB HBM3 (SXM) torch.mm bf16 N=8192"),
    ("gemm_tcgen05", "b200", "bf16", 1745.0,
     "stas00/ml-engineering compute/accelerator/README.md MAMF table: B200 SXM bf16 1745 TFLOPS"),
]  # fmt: skip


@pytest.mark.parametrize(("schedule", "arch_id", "dtype", "measured_tflops", "source"), MEASURED_MAXIMA)
def test_native_square_gemm_in_plausible_band_of_measured(
    schedule: str, arch_id: str, dtype: str, measured_tflops: float, source: str
) -> None:
    """8192³ on each generation's native schedule (defaults) lands within 0.7x-1.3x of the measured maximum."""
    arch = load_arch(arch_id)
    sched = load_schedule(schedule, arch, {"M": 8192, "N": 8192, "K": 8192, "dtype": dtype})
    predicted = predict(sched, arch, costs="datasheet", attribute=False).tflops
    assert 0.7 * measured_tflops <= predicted <= 1.3 * measured_tflops, (predicted, source)


def test_auto_gemm_searches_the_tuner_space_in_bound_order() -> None:
    """auto:gemm's candidates are the tuner's (CUTLASS sm90 tiles with stages fitted); simulated ones
    never beat their lower bound, and pruned ones had a bound no better than the pick."""
    from gpusim.autotune import search

    h100 = load_arch("h100")
    best, tried = search(
        "auto:gemm", h100, {"M": 256, "N": 512, "K": 256, "dtype": "bf16"}, max_simulations=None
    )
    origins = {c.origin.split(" ")[2] for c in tried if c.origin.startswith("CUTLASS")}
    assert {"cooperative", "ping-pong", "multistage"} <= origins
    assert best.choice is not None and best.time_us == min(c.time_us for c in tried if c.time_us is not None)
    for c in tried:
        if c.time_us is not None:
            assert c.time_us >= float(c.note.split("lower bound ")[1].split(" ")[0]) - 1e-6
        if c.note.startswith("pruned"):
            assert float(c.note.split("lower bound ")[1].split(" ")[0]) >= best.time_us


def test_a_candidate_simulated_past_the_best_is_stopped_and_would_not_have_won() -> None:
    """A candidate is stopped once its simulated time plus its MMA FLOPs left at the chip's peak reach the
    best time so far (its kernel takes at least that long); simulated to its end, each would indeed have
    been no faster than the pick."""
    from gpusim.autotune import search
    from gpusim.summarize import predict_resolved

    h100 = load_arch("h100")
    problem = {"M": 256, "N": 512, "K": 256, "dtype": "bf16"}
    best, tried = search("auto:gemm", h100, problem, max_simulations=None)
    stopped = [c for c in tried if c.note.startswith("stopped: cannot finish before the best")]
    assert stopped and all(c.time_us is None for c in stopped)
    for c in stopped[:: max(1, len(stopped) // 6)]:
        sched = load_schedule(c.schedule, h100, {**problem, **c.params})
        assert predict_resolved(sched, h100, attribute=False).time_us >= best.time_us


@pytest.mark.parametrize("schedule", ["gemm_sync", "gemm_ws_cooperative"])
def test_split_k_workspace_counts_in_the_lower_bound_and_never_exceeds_the_simulation(schedule: str) -> None:
    """Split-K partials (fp32, written and read back through HBM) count in a candidate's lower bound
    (at least their bytes at the HBM bandwidth), and the bound stays below the simulated time."""
    from gpusim.autotune import lower_bound_us
    from gpusim.summarize import predict_resolved

    arch = load_arch("a100_pcie" if schedule == "gemm_sync" else "h100")
    bounds = []
    for splits in (1, 4, 8):
        sched = load_schedule(schedule, arch, {"M": 1024, "N": 1024, "K": 1024, "SPLITS": splits})
        bound = lower_bound_us(sched, arch, equal_units=True)
        assert bound <= predict_resolved(sched, arch, attribute=False).time_us
        partial_bytes = 2 * (splits - 1) * 1024 * 1024 * 4
        hbm_bytes_per_us = (
            arch.memory.hbm_bandwidth_bytes_per_s * arch.calibration.hbm_bandwidth_fraction / 1e6
        )
        assert bound >= partial_bytes / hbm_bytes_per_us
        bounds.append(bound)
    assert bounds[1] < bounds[2]


def test_budgeted_auto_gemm_does_not_spend_its_budget_on_deep_split_k() -> None:
    """1024^3 fp16 on A100 PCIe has 64 tiles of 128x128 for 108 SMs: splitting K 8 or 16 ways fills the
    waves but parks 28-60 MB of partials in HBM; the budgeted search must not pick such a split."""
    best, _ = search_gemm(load_arch("a100_pcie"), {"M": 1024, "N": 1024, "K": 1024, "dtype": "fp16"})
    assert best.choice is not None and best.choice["params"].get("SPLITS", 1) <= 2


def test_auto_gemm_budget_bounds_the_simulations() -> None:
    from gpusim.autotune import search

    best, tried = search("auto:gemm", load_arch("h100"), {"M": 256, "N": 512, "K": 256}, max_simulations=2)
    assert sum(c.time_us is not None for c in tried) <= 2
    assert best.choice is not None and best.choice["simulated"] <= 2


def test_auto_attention_predicts_the_best_flashattention_tile() -> None:
    """auto:attention on h100 searches FA3 and FA2 tiles and names its pick; seqlen_kv follows seqlen_q."""
    p = predict("auto:attention", "h100", costs="datasheet", batch=1, heads=2, seqlen_q=256, attribute=False)
    assert p.choice is not None and p.choice["schedule"] in ("attn_fa3_fwd", "attn_fa2_fwd")
    assert p.schedule == "auto:attention" and p.time_us > 0
    with pytest.raises(InputError, match="only the problem"):
        predict("auto:attention", "h100", BLOCK_M=128)


def _stopped(sched, arch, **kwargs) -> tuple[int, float]:
    """Events simulated and simulated time (us) when ``simulate(sched, arch, **kwargs)`` raised
    HorizonReached (its message says both)."""
    from gpusim.errors import HorizonReached
    from gpusim.sim.engine import simulate

    with pytest.raises(HorizonReached) as info:
        simulate(sched, arch, **kwargs)
    text = str(info.value)
    events = int(text.rsplit("after ", 1)[1].split(" events")[0].replace(",", ""))
    at_us = float(text.split("at t=", 1)[1].split(" us", 1)[0]) if "at t=" in text else float("nan")
    return events, at_us


def test_the_flops_left_stop_a_hopeless_candidate_sooner_and_never_a_winner() -> None:
    """The horizon with the chip's MMA peak: a GEMM that cannot finish before the horizon stops earlier
    than on simulated time alone; one that finishes before it is never stopped."""
    from gpusim.autotune import _peak_flops_per_us_per_sm
    from gpusim.sim.engine import simulate

    h100 = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", h100, {"M": 2048, "N": 2048, "K": 4096})
    kernel_ns = simulate(sched, h100).kernel_ns
    rate = _peak_flops_per_us_per_sm(sched, h100) * h100.sm_count / 1000.0
    assert sched.flops / rate < kernel_ns  # the peak bound is below the simulated time
    finished = simulate(sched, h100, horizon_ns=kernel_ns * 1.001, horizon_flops_per_ns=rate)
    assert finished.kernel_ns == kernel_ns

    with_rate, _ = _stopped(sched, h100, horizon_ns=kernel_ns * 0.9, horizon_flops_per_ns=rate)
    time_only, _ = _stopped(sched, h100, horizon_ns=kernel_ns * 0.9)
    assert with_rate < time_only


def test_auto_gemm_considers_stream_k_where_the_last_wave_is_nearly_empty() -> None:
    """1536x1536x2048 on h100 has 144 tiles of 128x128 for 132 SMs: whole tiles take two waves, the
    second 9% full. CUTLASS's heuristic splits that last wave (stream-K), and the search simulates the
    stream-K kernel and picks it over every data-parallel tile. At 8192^3 (31 waves) stream-K is not
    offered, nor for a grouped GEMM (the stream-K schedule has no groups)."""
    from gpusim.explore.spaces import gemm_space

    h100 = load_arch("h100")
    best, tried = search_gemm(with_costs(h100, "datasheet"), {"M": 1536, "N": 1536, "K": 2048})
    assert best.choice is not None and best.choice["schedule"] == "gemm_streamk", best.choice
    data_parallel = [c.time_us for c in tried if c.time_us is not None and c.schedule != "gemm_streamk"]
    assert data_parallel and best.time_us < min(data_parallel)
    assert not [
        c for c in gemm_space(h100, {"M": 8192, "N": 8192, "K": 8192}) if c.schedule == "gemm_streamk"
    ]
    grouped = gemm_space(h100, {"M": 1536, "N": 1536, "K": 2048, "groups": 2})
    assert not [c for c in grouped if c.schedule == "gemm_streamk"]


def test_blackwell_pick_is_tried_with_cluster_launch_control_where_edge_tiles_make_it_differ() -> None:
    """CUTLASS sm100 hands tiles out through cluster launch control; the search simulates the static round
    robin and, where edge tiles can make the orders differ, also its pick with CLC=1 (and keeps the faster)."""
    arch = with_costs(load_arch("b200"), "datasheet")
    edge, _ = search_gemm(arch, {"M": 1000, "N": 1000, "K": 512, "dtype": "bf16"})
    assert edge.choice is not None
    twins = [c for c in edge.choice["candidates"] if c["params"].get("CLC") == 1]
    assert len(twins) == 1 and "cluster launch control" in twins[0]["origin"], twins
    assert all(c["time_us"] is None or c["time_us"] >= edge.time_us for c in edge.choice["candidates"])
    even, _ = search_gemm(arch, {"M": 1024, "N": 1024, "K": 512, "dtype": "bf16"})
    assert even.choice is not None and not [c for c in even.choice["candidates"] if "CLC" in c["params"]]


@settings(max_examples=12, deadline=None)
@given(
    case=st.sampled_from(
        [
            ("h100", "gemm_ws_pingpong", {"BM": 128, "BN": 128}),
            ("h100", "gemm_ws_pingpong", {"BM": 64, "BN": 256, "STAGES": 4, "CLUSTER_N": 2}),
            ("h100", "gemm_ws_cooperative", {"BM": 256, "BN": 128, "CLUSTER_M": 2}),
            ("h800", "gemm_fp8_deepgemm", {}),
            ("a100", "gemm_cp_async", {}),
            ("b200", "gemm_tcgen05", {}),
        ]
    ),
    m=st.integers(200, 2600),
    n=st.integers(200, 2600),
    k=st.sampled_from([256, 1000, 2048]),
)
def test_the_busiest_groups_work_left_never_stops_a_candidate_that_finishes_in_time(
    case: tuple[str, str, dict[str, int]], m: int, n: int, k: int
) -> None:
    """The per-group horizon (every unit issues the same MMA work; the group with the most left bounds
    the end) and the operand bytes left at the L2's bandwidth: over problems with edge tiles and partial
    waves, a GEMM that finishes before the horizon is never stopped (its L2 reads are at least the
    bound), and one that cannot stops no later than with the chip-wide count."""
    from gpusim.autotune import _peak_flops_per_us_per_sm, operand_read_bytes
    from gpusim.sim.engine import simulate

    arch_id, name, params = case
    arch = load_arch(arch_id)
    problem = {"M": m, "N": n, "K": k, **({"dtype": "fp8_e4m3"} if "fp8" in name else {})}
    sched = load_schedule(name, arch, {**problem, **params})
    kernel_ns = simulate(sched, arch, replay="none").kernel_ns
    rate = _peak_flops_per_us_per_sm(sched, arch) * arch.sm_count / 1000.0
    finished = simulate(sched, arch, horizon_ns=kernel_ns * 1.0001, horizon_flops_per_ns=rate,
                        horizon_equal_units=True, horizon_l2_read_bytes=operand_read_bytes(sched),
                        replay="none")  # fmt: skip
    assert finished.kernel_ns == kernel_ns
    assert finished.net.l2_read_bytes >= operand_read_bytes(sched) * (1 - 1e-9)

    per_group, chip_wide = (
        _stopped(sched, arch, horizon_ns=kernel_ns * 0.8, horizon_flops_per_ns=rate, horizon_equal_units=equal,
                 replay="none")[0]
        for equal in (True, False)
    )  # fmt: skip
    assert per_group <= chip_wide


def test_the_busiest_groups_work_left_stops_a_partial_wave_gemm_sooner() -> None:
    """2500x2300 in 128x128 tiles is 360 tiles on 132 SMs: 96 SMs run three, 36 run two. The chip-wide
    count of FLOPs left spreads the third wave over every SM; the busiest groups' count does not."""
    from gpusim.autotune import _peak_flops_per_us_per_sm
    from gpusim.sim.engine import simulate

    h100 = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", h100, {"M": 2500, "N": 2300, "K": 1000})
    kernel_ns = simulate(sched, h100, replay="none").kernel_ns
    rate = _peak_flops_per_us_per_sm(sched, h100) * h100.sm_count / 1000.0
    stopped_at = [
        _stopped(sched, h100, horizon_ns=kernel_ns * 0.8, horizon_flops_per_ns=rate, horizon_equal_units=equal,
                 replay="none")[1]
        for equal in (False, True)
    ]  # fmt: skip
    assert stopped_at[1] < stopped_at[0] * 0.75, stopped_at


@settings(max_examples=10, deadline=None)
@given(
    arch_dtype=st.sampled_from([("h100", "bf16"), ("a100", "fp16"), ("b200", "bf16"), ("h800", "fp8_e4m3"),
                                ("v100", "fp16"), ("h100", "tf32"), ("a100", "fp32"), ("b200", "fp8_e4m3")]),
    m=st.integers(100, 1500),
    n=st.integers(100, 1500),
    k=st.integers(64, 1500),
    pick=st.integers(0, 10_000),
)  # fmt: skip
def test_every_gemm_candidate_reads_at_least_its_operand_bound_through_l2(
    arch_dtype: tuple[str, str], m: int, n: int, k: int, pick: int
) -> None:
    """``operand_read_bytes``, which a search's horizon divides by the L2's bandwidth, is a lower bound on
    the L2 reads of every GEMM candidate the search may simulate (any schedule, tile, cluster, split)."""
    from gpusim.autotune import operand_read_bytes
    from gpusim.errors import ScheduleRefused
    from gpusim.explore.spaces import space_for
    from gpusim.explore.tune import resolve_candidate
    from gpusim.sim.engine import simulate

    arch_id, dtype = arch_dtype
    arch = load_arch(arch_id)
    problem = {"M": m, "N": n, "K": k, "dtype": dtype}
    legal = [
        r
        for c in space_for("auto:gemm", arch, problem)
        if not isinstance(r := resolve_candidate(c, arch, problem), str)
    ]
    _, sched = legal[pick % len(legal)]
    try:
        run = simulate(sched, arch, replay="none")
    except ScheduleRefused:
        return
    assert run.net.l2_read_bytes >= operand_read_bytes(sched) * (1 - 1e-9) > 0
