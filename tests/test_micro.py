"""gpusim measure --micro without a GPU: the catalog, the derivations from synthetic kernel records,
the rows, the constants a microbenchmark CSV identifies and how gpusim calibrate holds them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpusim.arch import load_arch
from gpusim.calibrate.fit import calibrate, micro_fixed
from gpusim.calibrate.measurements import COLUMNS, read_measurements
from gpusim.calibrate.micro.catalog import SOURCES, VARIANTS, Variant, variants_for
from gpusim.calibrate.micro.constants import identify
from gpusim.calibrate.micro.derive import (
    CLOCK_SAMPLES,
    RECORD_WORDS,
    WGMMA_SLOTS,
    Quantity,
    TimedOut,
    derive,
)
from gpusim.calibrate.micro.gen_wgmma import header_path, header_text
from gpusim.calibrate.micro.rows import quantity_row, write_rows
from gpusim.calibrate.report import micro_text
from gpusim.calibrate.validate import precheck
from gpusim.compiler.catalog import kernels_dir
from gpusim.compiler.toolchain import toolchain_available
from gpusim.errors import InputError

BY_NAME = {v.name: v for v in VARIANTS}
ENV = {"gpu": "synthetic test GPU", "sms": 132, "date": "2026-01-01T00:00:00Z", "command": "test"}


def test_catalog_is_consistent() -> None:
    assert len(BY_NAME) == len(VARIANTS)
    for v in VARIANTS:
        assert v.source in SOURCES and (kernels_dir() / "micro" / v.source).is_file()
        assert v.settles.startswith("G") and v.threads % 32 == 0 and v.threads <= 1024
        if v.source == "wgmma_bench.cu":
            assert v.threads <= 384 and v.threads % 128 == 0  # kMaxWarpgroups
    assert not [v for v in variants_for("sm_80") if v.needs_wgmma]
    hopper = variants_for("sm_90a")
    assert {v.experiment for v in hopper} == {"wgmma", "wgmma_overlap", "operand_path", "mma_sync", "tensor_clock",
                                              "l2_bandwidth", "l2_clock", "sync_latency", "pipes", "l2_atomics"}  # fmt: skip
    assert not [v for v in hopper if v.name.startswith("tensor_clock_mma_sync")]
    assert {v.experiment for v in variants_for("sm_90a", "mma_sync,l2_read_1sm")} == {
        "mma_sync",
        "l2_bandwidth",
    }


def test_wgmma_header_is_what_the_generator_writes() -> None:
    assert header_path().read_text(encoding="utf-8") == header_text()


def _wgmma_records(v: Variant, cycles: int, mma_work: int, side_work: int, flags: int = 0) -> np.ndarray:
    r = np.zeros((2, WGMMA_SLOTS, RECORD_WORDS), dtype=np.uint64)
    for cta in range(2):
        for slot in range(v.args["mma_wgs"] + 1):
            r[cta, slot, :4] = (1000, 1000 + cycles, 50, 50 + cycles // 2)  # 2 cycles per ns: 2000 MHz
        r[cta, : v.args["mma_wgs"], 4] = mma_work
        r[cta, v.args["mma_wgs"], 4] = side_work
        r[cta, v.args["mma_wgs"], 6] = flags
    return r


def test_derive_wgmma_beside_ex2() -> None:
    v = BY_NAME["wgmma_ss_n128_beside_ex2"]
    qs = {q.metric: q for q in derive(v, _wgmma_records(v, 1_000_000, 7000, 8_000_000))}
    flop = 7000 * 2 * 64 * 16 * 128
    assert qs["tensor_flops_per_clk_per_sm"].value == pytest.approx(flop / 1e6)
    assert qs["tensor_flops_per_clk_per_sm"].extra["clock_mhz"] == pytest.approx(2000.0)
    assert qs["ex2_per_clk_per_sm"].value == pytest.approx(8.0)


def test_a_timed_out_side_loop_is_not_a_measurement() -> None:
    v = BY_NAME["wgmma_ss_n128_beside_bulk"]
    with pytest.raises(TimedOut):
        derive(v, _wgmma_records(v, 1000, 10, 10, flags=1))


def test_derive_tensor_clock_steady_window() -> None:
    v = BY_NAME["tensor_clock_wgmma_random"]
    records = np.zeros((3, RECORD_WORDS), dtype=np.uint64)
    records[:, :4] = (0, 3_000_000_000, 0, 2_000_000_000)
    records[:, 4] = 1000
    records[:, 6] = 10  # samples taken
    samples = np.zeros((3, CLOCK_SAMPLES, 2), dtype=np.uint64)
    for k in range(10):  # first window at 1980 MHz, then 1500 MHz
        samples[:, k] = (k * 1_500_000 + (480_000 if k else 0), k * 1_000_000)
    qs = derive(v, records, samples)
    steady = next(q for q in qs if q.metric == "sm_clock_mhz" and q.extra.get("window") == "steady")
    first = next(q for q in qs if q.metric == "sm_clock_mhz" and q.extra.get("window") == "first")
    assert steady.value == pytest.approx(1500.0)
    assert first.value == pytest.approx(1980.0)


def test_derive_l2_clock_over_the_settled_half() -> None:
    """Readers that pull 40 B/ns per SM at 1,900 MHz for the first half and 34 B/ns at 1,650 MHz after: the
    steady figures are the second half's, per SM and for the chip."""
    v = BY_NAME["l2_clock_random"]
    ctas, chunk = 4, v.args["chunk_bytes"]
    records = np.zeros((ctas, 2, RECORD_WORDS), dtype=np.uint64)
    records[:, 0, 6] = 10  # samples taken
    records[:, 1, :4] = (0, 1_650_000, 0, 1_000_000)
    records[:, 1, 4] = 1000  # wgmma instructions
    samples = np.zeros((ctas, CLOCK_SAMPLES, 3), dtype=np.uint64)
    ns_per_window = 200_000
    cycles = passes = 0.0
    for k in range(10):
        fast = k < 5
        samples[:, k] = (round(cycles), (k + 1) * ns_per_window, round(passes))
        cycles += ns_per_window * (1.9 if fast else 1.65)
        passes += ns_per_window * (40.0 if fast else 34.0) / chunk
    qs = {(q.metric, q.role): q for q in derive(v, records.reshape(ctas, -1), samples)}
    assert qs[("sm_clock_mhz", "sm")].value == pytest.approx(1650.0, rel=1e-4)
    assert qs[("l2_bytes_per_ns_per_sm", "sm")].value == pytest.approx(34.0, rel=1e-3)
    assert qs[("l2_bytes_per_clk_per_sm", "sm")].value == pytest.approx(34.0 / 1.65, rel=1e-3)
    assert qs[("memory_bandwidth", "chip")].value == pytest.approx(4 * 34.0, rel=1e-3)
    wgmma_flop = 1000 * 2 * 64 * 16 * 128  # 1,000 m64n128k16
    assert qs[("tensor_flops_per_clk_per_sm", "mma")].value == pytest.approx(wgmma_flop / 1_650_000)
    idle = derive(BY_NAME["l2_clock_idle"], records.reshape(ctas, -1), samples)
    assert "tensor_flops_per_clk_per_sm" not in {q.metric for q in idle}


def test_derive_l2_per_sm_and_chip() -> None:
    v = BY_NAME["l2_read_all_sms_distinct_90kib"]
    records = np.zeros((4, RECORD_WORDS), dtype=np.uint64)
    records[:, :4] = (0, 1_000_000, 0, 500_000)
    records[:, 4] = 32_000_000
    qs = {q.metric: q for q in derive(v, records)}
    assert qs["l2_bytes_per_clk_per_sm"].value == pytest.approx(32.0)
    assert qs["memory_bandwidth"].value == pytest.approx(4 * 32e6 / 5e5)  # GB/s = bytes / ns
    assert qs["memory_bandwidth"].extra["bytes_moved"] == 4 * 32_000_000


def test_derive_sync_rounds_and_hand_offs() -> None:
    records = np.zeros((3, RECORD_WORDS), dtype=np.uint64)
    records[:, :4] = (0, 2_000_000, 0, 1_000_000)
    records[:, 4] = 50_000
    (round_,) = derive(BY_NAME["sync_bar_round_4w"], records)
    assert (round_.metric, round_.value) == ("barrier_round_cycles", pytest.approx(40.0))  # cycles per round
    (handoff,) = derive(BY_NAME["sync_mbarrier_handoff"], records)
    # two hand-offs per iteration
    assert (handoff.metric, handoff.value) == ("mbarrier_wake_cycles", pytest.approx(20.0))
    assert handoff.extra["clock_mhz"] == pytest.approx(2000.0)
    records[1, 6] = 1  # a wait loop hit its deadline: not a measurement
    with pytest.raises(TimedOut):
        derive(BY_NAME["sync_mbarrier_handoff"], records)


def test_derive_pipes_counts_every_result() -> None:
    records = np.zeros((2, RECORD_WORDS), dtype=np.uint64)
    records[:, :4] = (0, 1_000_000, 0, 500_000)
    records[:, 4] = 16_000_000
    (q,) = derive(BY_NAME["pipes_ex2_cvt_bf16"], records)
    assert (q.metric, q.value, q.unit) == ("results_per_clk_per_sm", pytest.approx(16.0), "op/clk/SM")


# Synthetic microbenchmark results for h100, made up for the tests (never in data/).
SYNTHETIC = [
    ("wgmma_ss_n256", "tensor_flops_per_clk_per_sm", "mma", 3600.0, {}),
    ("wgmma_ss_n256_2wg", "tensor_flops_per_clk_per_sm", "mma", 3800.0, {}),
    ("wgmma_ss_n128", "tensor_flops_per_clk_per_sm", "mma", 3400.0, {}),
    ("wgmma_ss_n128_beside_ex2", "tensor_flops_per_clk_per_sm", "mma", 2720.0, {}),
    ("wgmma_ss_n128_beside_ex2", "ex2_per_clk_per_sm", "side", 6.4, {}),
    ("side_ex2", "ex2_per_clk_per_sm", "side", 16.0, {}),
    ("wgmma_ss_n128_beside_lds", "tensor_flops_per_clk_per_sm", "mma", 1700.0, {}),
    ("wgmma_ss_n128_beside_lds", "smem_bytes_per_clk_per_sm", "side", 60.0, {}),
    ("side_lds", "smem_bytes_per_clk_per_sm", "side", 120.0, {}),
    ("mma_sync_bf16_4w_per_smsp", "tensor_flops_per_clk_per_sm", "mma", 2500.0, {}),
    ("mma_sync_bf16_latency", "mma_latency_cycles", "mma", 30.0, {}),
    ("tensor_clock_wgmma_random", "sm_clock_mhz", "sm", 1650.0, {"window": "steady"}),
    ("tensor_clock_wgmma_random", "sm_clock_mhz", "sm", 1980.0, {"window": "first"}),
    ("tensor_clock_wgmma_random", "tensor_flops_per_clk_per_sm", "mma", 3700.0, {}),
    ("tensor_clock_wgmma_random", "board_power_w", "chip", 690.0, {}),
    ("tensor_clock_wgmma_zero", "sm_clock_mhz", "sm", 1980.0, {"window": "steady"}),
    ("l2_read_all_sms_distinct_90kib", "memory_bandwidth", "chip", 8500.0, {"bytes_moved": 10**9}),
    ("l2_read_1sm_same_90kib", "l2_bytes_per_clk_per_sm", "sm", 60.0, {}),
    ("l2_clock_zero", "sm_clock_mhz", "sm", 1900.0, {"window": "steady"}),
    ("l2_clock_zero", "l2_bytes_per_ns_per_sm", "sm", 40.0, {}),
    ("l2_clock_random", "sm_clock_mhz", "sm", 1650.0, {"window": "steady"}),
    ("l2_clock_random", "l2_bytes_per_ns_per_sm", "sm", 40.0 * 1650 / 1900, {}),
    ("side_bulk_1sm", "smem_bytes_per_clk_per_sm", "side", 90.0, {}),
    ("l2_red_same", "memory_bandwidth", "chip", 1200.0, {}),
    ("l2_store_distinct", "memory_bandwidth", "chip", 6000.0, {}),
    ("pipes_ex2", "results_per_clk_per_sm", "sm", 16.0, {}),
    ("pipes_cvt_bf16", "results_per_clk_per_sm", "sm", 16.0, {}),
    ("pipes_ex2_cvt_bf16", "results_per_clk_per_sm", "sm", 16.0, {}),
    ("pipes_fmnmx", "results_per_clk_per_sm", "sm", 64.0, {}),
    ("pipes_ex2_fmnmx", "results_per_clk_per_sm", "sm", 32.0, {}),
    ("sync_bar_round_4w", "barrier_round_cycles", "sm", 24.0, {}),
    ("sync_bar_handoff", "barrier_wake_cycles", "sm", 31.0, {}),
    ("sync_mbarrier_handoff", "mbarrier_wake_cycles", "sm", 45.0, {}),
]


def _synthetic_csv(tmp_path: Path, arch: str = "h100") -> Path:
    rows = [quantity_row(BY_NAME[name], Quantity(metric, value, "u", role, extra), arch, ENV, 1.0)
            for name, metric, role, value, extra in SYNTHETIC]  # fmt: skip
    path = tmp_path / "micro_synthetic.csv"
    write_rows(path, rows)
    return path


def test_rows_are_in_the_measurement_format_and_skipped_by_validate(tmp_path: Path) -> None:
    rows = read_measurements([_synthetic_csv(tmp_path)])
    assert len(rows) == len(SYNTHETIC)
    header = (tmp_path / "micro_synthetic.csv").read_text().splitlines()[0]
    assert header == ",".join(COLUMNS)
    for m in rows:
        assert m.error is None and m.schedule.startswith("micro:")
        assert m.params["gpu"] == "synthetic test GPU" and m.params["date"].startswith("2026")
        assert (precheck(m) or "").startswith("unmapped: microbenchmark")


def test_identify_maps_each_constant(tmp_path: Path) -> None:
    h100 = load_arch("h100")
    c = {k.name: k for k in identify(read_measurements([_synthetic_csv(tmp_path)]), h100)}
    assert c["tensor_issue_efficiency"].value == pytest.approx(3800.0 / 4096)  # best SS at N=256
    assert c["tensor_issue_efficiency"].maps_to == "calibration.tensor_issue_efficiency"
    assert c["wgmma_efficiency_ss_n128"].value == pytest.approx(3400.0 / 4096)
    assert c["overlap_ss_n128_beside_ex2"].value == pytest.approx(2720 / 3400 + 6.4 / 16 - 1)  # 0.2
    assert c["overlap_ss_n128_beside_lds"].value == pytest.approx(0.0)  # 0.5 + 0.5 - 1: taking turns
    n128_bytes = 2048 + 32 * 128
    assert c["smem_total_ss_n128_beside_lds"].value == pytest.approx(60 + 1700 / (2048 * 128) * n128_bytes)
    assert c["mma_sync_rate_4w_per_smsp"].value == 2500.0
    assert c["mma_sync_latency_cycles"].maps_to == "tensor_cores.mma_sync.latency_cycles"
    assert c["sustained_clock_mhz"].value == 1650.0
    assert c["clock_zero_data_mhz"].value == 1980.0
    assert c["tma_bytes_per_clk_1sm"].value == 90.0
    assert c["l2_bandwidth_fraction"].value == pytest.approx(8500e9 / h100.memory.l2_bandwidth_bytes_per_s)
    pj = (690 - h100.power.static_power_w) / (3700 * 132 * 1650e6) * 1e12
    assert c["tensor_pj_per_flop_at_clock"].value == pytest.approx(pj)
    # bytes per ns fell with the clock: the L2 delivers per clock
    assert c["l2_clock_exponent"].value == pytest.approx(1.0, abs=1e-4)
    assert "l2_clock" in c["l2_clock_exponent"].maps_to
    assert c["barrier_wake_cycles"].value == 24.0
    assert c["barrier_wake_cycles"].maps_to == "sm.barrier_wake_cycles"
    assert c["mbarrier_wake_cycles"].value == 45.0
    assert c["mbarrier_wake_cycles"].maps_to == "sm.mbarrier_wake_cycles"
    assert c["barrier_handoff_cycles"].value == 31.0
    # ex2 and the bf16 packing at 16 each, 16 together: one pipe; ex2 with FMNMX at twice ex2's 16: two
    assert c["cvt_bf16_shares_mufu"].value == pytest.approx(1.0)
    assert c["fmnmx_shares_mufu"].value == pytest.approx(0.0)
    assert "cvt_e4m3_shares_mufu" not in c  # its rows are missing
    assert c["red_same_gbs"].value == 1200.0 and "0.20 of plain stores" in c["red_same_gbs"].how
    assert "red_distinct_gbs" not in c
    assert identify(read_measurements([_synthetic_csv(tmp_path, "a100")]), h100) == []  # other archs' rows


def test_micro_fixed_respects_fit_and_power(tmp_path: Path) -> None:
    rows = read_measurements([_synthetic_csv(tmp_path)])
    h100 = load_arch("h100")
    fixed, report = micro_fixed(rows, h100, None)
    assert set(fixed) == {"tensor_issue_efficiency", "sustained_clock_mhz", "l2_bandwidth_fraction"}
    fixed, report = micro_fixed(rows, h100, ["sustained_clock_mhz"])
    assert "sustained_clock_mhz" not in fixed and "fitted" in report["notes"]["sustained_clock_mhz"]
    powered = h100.model_copy(update={"mechanisms": ["power", "shared_tensor"]})
    fixed, report = micro_fixed(rows, powered, None)
    assert "sustained_clock_mhz" not in fixed and "output" in report["notes"]["sustained_clock_mhz"]


def test_calibrate_holds_the_measured_fields(tmp_path: Path) -> None:
    lines = [",".join(COLUMNS)]
    for i, mib in enumerate((64, 128)):
        nbytes = mib * 2**20
        us = 2 * nbytes / (0.85 * 3.35e12) * 1e6
        lines.append(f"src{i},h100,stream,fp32,,,,1,,,,,,time,{us:.3f},us,,op=copy;bytes={nbytes}")
    stream = tmp_path / "stream.csv"
    stream.write_text("\n".join(lines) + "\n")
    rows = read_measurements([stream, _synthetic_csv(tmp_path)])
    res = calibrate(rows, load_arch("h100"))
    cal = res["calibration"]
    assert cal["tensor_issue_efficiency"] == pytest.approx(3800 / 4096, abs=1e-4)
    assert cal["sustained_clock_mhz"] == pytest.approx(1650.0)
    assert "tensor_issue_efficiency" not in cal["provenance"]["fitted"]
    assert cal["provenance"]["micro"]["applied"]["sustained_clock_mhz"] == 1650.0
    text = "\n".join(micro_text(res["micro"]))
    assert "held fixed (measured, not fitted): tensor_issue_efficiency" in text
    assert "-> calibration.l2_bandwidth_fraction" in text
    off = calibrate(rows, load_arch("h100"), use_micro=False)
    assert off["micro"] == {} and off["calibration"]["tensor_issue_efficiency"] == 1.0


needs_toolchain = pytest.mark.skipif(
    not toolchain_available(), reason='needs the CUDA toolchain: pip install "gpusim[cuda]"'
)


@pytest.mark.cuda
@needs_toolchain
def test_measure_micro_without_gpu_builds_then_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gpusim", "measure", "--micro", "--target", "sm_80", "--build-dir",
                           str(tmp_path), "--out", str(tmp_path / "m.csv")], capture_output=True, text=True, timeout=600)  # fmt: skip
    if proc.returncode == 0:
        pytest.skip("a GPU is present: the run itself is tested in test_micro_gpu.py")
    assert proc.returncode == 2, proc.stderr
    assert (
        len(proc.stderr.strip().splitlines()) == 1
        and "built 6 microbenchmark sources for sm_80" in proc.stderr
    )
    assert sorted(p.name for p in tmp_path.glob("*.cubin")) == [
        "l2_atomics.sm_80.cubin", "l2_bandwidth.sm_80.cubin", "mma_sync_bench.sm_80.cubin", "pipes.sm_80.cubin",
        "sync_latency.sm_80.cubin", "tensor_clock.sm_80.cubin"]  # fmt: skip
    assert not (tmp_path / "m.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["measure", "--only", "wgmma"], "need --micro"),
        (
            ["measure", "--micro", "--list", "--only", "nothing_like_this"],
            "no experiment or variant name matches",
        ),
        (
            ["measure", "--micro", "--list", "--only", "wgmma", "--target", "sm_80"],
            "no microbenchmark variant",
        ),
        (["measure", "--micro", "--quick"], "--quick applies to the standard set"),
        (["measure", "--micro", "--out", "x.txt"], ".csv"),
    ],
)
def test_measure_micro_usage_errors_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_measure_micro_list_needs_no_toolchain() -> None:
    proc = subprocess.run([sys.executable, "-m", "gpusim", "measure", "--micro", "--list", "--target", "sm_80"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == [v.name for v in variants_for("sm_80")]


@pytest.mark.parametrize(
    ("target", "only", "expected"),
    [
        ("sm_999", None, "--target sm_999: expected an SM target"),
        ("sm_70", None, "sm_80 to sm_121"),
        ("90a", None, "expected an SM target"),
        (None, "nope", "--only nope: no experiment or variant name matches"),
        (None, "wgmma,,zz", "--only zz"),
    ],
)
def test_bad_micro_requests_are_refused_before_any_build(
    target: str | None, only: str | None, expected: str
) -> None:
    from gpusim.calibrate.micro.catalog import check_request

    with pytest.raises(InputError, match=re.escape(expected)):
        check_request(target, only)


def test_good_micro_requests_pass() -> None:
    from gpusim.calibrate.micro.catalog import check_request

    for target, only in [
        ("sm_90a", "wgmma"),
        ("sm_80", "mma_sync,l2"),
        ("sm_100a", None),
        (None, "wgmma_ss_n64"),
    ]:
        check_request(target, only)


def test_the_measured_h200_file_identifies_the_constants_the_docs_quote() -> None:
    """data/measurements/micro_h200_20261204.csv (an H200 run, docs/microbenchmarks.md): every experiment
    returned rows, and the constants docs/microbenchmarks.md quotes follow from them."""
    path = Path(__file__).resolve().parent.parent / "data" / "measurements" / "micro_h200_20261204.csv"
    rows = read_measurements([path])
    assert {m.schedule for m in rows} == {f"micro:{e}" for e in
                                          ("wgmma", "wgmma_overlap", "operand_path", "mma_sync", "tensor_clock", "l2_bandwidth")}  # fmt: skip
    assert all((precheck(m) or "").startswith("unmapped: microbenchmark") for m in rows)
    c = {k.name: k.value for k in identify(rows, load_arch("h200"))}
    assert c["tensor_issue_efficiency"] == pytest.approx(
        1.0, abs=0.001
    )  # wgmma SS N=256 at the datasheet rate
    assert c["wgmma_efficiency_ss_n64"] == pytest.approx(0.81, abs=0.01)  # one warpgroup at N=64 cannot
    assert c["wgmma_efficiency_ss_n64_2wg"] == pytest.approx(1.0, abs=0.001)  # ... two can
    assert c["mma_sync_rate_8w_per_smsp"] == pytest.approx(2279, abs=1)  # 0.56 of wgmma
    assert c["mma_sync_latency_cycles"] == pytest.approx(79, abs=0.5)
    assert c["sustained_clock_mhz"] == pytest.approx(1633, abs=1)  # random bf16, board at 688 of 700 W
    assert 0.55 < c["overlap_ss_n128_beside_ffma"] < 0.65 and 0.65 < c["overlap_ss_n128_beside_ex2"] < 0.75
    assert c["l2_bandwidth_fraction"] == pytest.approx(0.847, abs=0.001)


class _FakeDevice:
    """Hands out addresses instead of device memory, so the argument lists can be built without a GPU."""

    sms = 132
    clock_mhz = 1980.0

    def __init__(self) -> None:
        self.next = 1 << 20

    def alloc(self, nbytes: int, fill: object = None) -> int:
        self.next += max(256, nbytes)
        return self.next


_KERNEL_INFO = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_KPARAM = re.compile(r"Ordinal\s*:\s*0x([0-9a-f]+)\s+Offset\s*:\s*0x[0-9a-f]+\s+Size\s*:\s*0x([0-9a-f]+)")


def _param_sizes(elf_text: str) -> dict[str, list[int]]:
    """Per kernel, its parameters' sizes in ordinal order (the EIATTR_KPARAM_INFO entries of ``cuobjdump -elf``)."""
    out: dict[str, dict[int, int]] = {}
    kernel = None
    for line in elf_text.splitlines():
        if m := _KERNEL_INFO.match(line):
            kernel = m.group(1)
            out.setdefault(kernel, {})
        elif line.startswith("."):
            kernel = None
        elif kernel is not None and (m := _KPARAM.search(line)):
            out[kernel][int(m.group(1), 16)] = int(m.group(2), 16)
    return {k: [sizes[i] for i in sorted(sizes)] for k, sizes in out.items()}


@pytest.mark.skipif(not toolchain_available(), reason="needs nvcc (pip install 'gpusim[cuda]')")
def test_every_variant_passes_the_arguments_its_compiled_kernel_takes(tmp_path: Path) -> None:
    """A launch whose argument list does not match the kernel's parameters would waste a GPU session: the
    sizes run.py passes, variant by variant, equal the compiled kernels' parameter sizes (sm_90a builds
    every source)."""
    import ctypes

    from gpusim.calibrate.micro.build import build_all
    from gpusim.calibrate.micro.run import kernel_args
    from gpusim.compiler.build import _cuobjdump
    from gpusim.compiler.toolchain import find_toolchain

    builds = build_all("sm_90a", tmp_path)
    params = {}
    for build in builds.values():
        params.update(_param_sizes(_cuobjdump(find_toolchain(), ["-elf"], build.cubin)))
    for v in variants_for("sm_90a"):
        args, _, out_words, _ = kernel_args(_FakeDevice(), v, 1 if v.one_sm else _FakeDevice.sms)
        assert v.kernel in params, f"{v.name}: no kernel {v.kernel} in {v.source}"
        assert [ctypes.sizeof(a) for a in args] == params[v.kernel], v.name
        assert out_words > 0
