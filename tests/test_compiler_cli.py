"""gpusim resources / check on saved tool output, the missing-toolchain refusal and predict --resources
(no toolchain needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusim.arch import load_arch
from gpusim.compiler import toolchain
from gpusim.compiler.build import BuildReport, KernelReport
from gpusim.compiler.kernel_resources import KernelResources
from gpusim.compiler.with_build import schedule_with_build
from gpusim.errors import ScheduleRefused
from gpusim.schedule.load import load_schedule

FIXTURES = Path(__file__).parent / "fixtures" / "compiler"


def test_resources_of_saved_ptxas_text(run_cli) -> None:
    rc, out, err = run_cli(
        ["resources", FIXTURES / "cutlass_sm90_pingpong.ptxas.txt", "--arch", "sm_90a", "--json"]
    )
    assert rc == 0, err
    (data,) = json.loads(out)["kernels"]
    assert data["resources"]["registers_per_thread"] == 168
    assert data["resources"]["spills"] is False
    assert data["occupancy"] is None  # ptxas -v states no launch bounds
    assert "threads per CTA unknown" in data["occupancy_note"]


def test_resources_of_saved_sass_prints_loops(run_cli) -> None:
    rc, out, err = run_cli(
        ["resources", FIXTURES / "cutlass_sm90_pingpong.sass.txt", "--arch", "sm_90a", "--sass"]
    )
    assert rc == 0, err
    assert "HGMMA.64x128x16.F32.BF16" in out
    assert "innermost loops of" in out


def test_check_pingpong_against_saved_sass(run_cli) -> None:
    rc, out, err = run_cli(["check", "gemm_ws_pingpong", "--against", FIXTURES / "cutlass_sm90_pingpong.sass.txt",
                            "--arch", "sm_90a", "--json"])  # fmt: skip
    assert rc == 0, err
    rows = {r["what"]: r for r in json.loads(out)["rows"]}
    hgmma = rows["wgmma instructions per k-tile (role 'math')"]
    assert (hgmma["schedule"], hgmma["build"], hgmma["agrees"]) == (8, 8, True)
    assert rows["registers per thread, role 'math' (setmaxnreg)"]["build"] == 232
    assert rows["registers per thread, role 'producer' (setmaxnreg)"]["build"] == 40
    assert rows["pipeline stages (buffer 'ab')"]["build"] == 6


def test_unreadable_text_is_one_line(tmp_path: Path, run_cli) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("nothing to see\n")
    rc, _, err = run_cli(["resources", notes, "--arch", "sm_90a"])
    assert rc == 2
    assert err.strip().splitlines() == [f"gpusim: error: {notes}: not a CUDA build output gpusim reads (expected "
                                        "ptxas -v text, cuobjdump --dump-resource-usage, cuobjdump -sass or cuobjdump -elf output)"]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--arch", "sm_12"], "--arch sm_12: not an SM target nvcc builds"),
        (["--threads", "0"], "--threads 0: a CTA has 1 to 1024 threads"),
        (["--threads", "-128"], "--threads -128: a CTA has 1 to 1024 threads"),
        (["--threads", "100000"], "--threads 100000: a CTA has 1 to 1024 threads"),
        (["--maxrregcount", "-5"], "--maxrregcount -5: expected 1 to 255 registers per thread"),
    ],
)
def test_build_options_no_launch_or_build_can_have_are_refused(
    options: list[str], expected: str, run_cli
) -> None:
    rc, _, err = run_cli(["resources", FIXTURES / "cutlass_sm90_pingpong.ptxas.txt", *options])
    assert rc == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"gpusim: error: {expected}")


def test_missing_toolchain_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    monkeypatch.setattr(toolchain, "_wheel_root", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    toolchain.find_toolchain.cache_clear()
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n")
    monkeypatch.setattr("sys.argv", ["gpusim", "resources", str(source), "--arch", "sm_90a"])
    from gpusim.cli import main

    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        toolchain.find_toolchain.cache_clear()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        'gpusim: error: the CUDA toolchain (nvcc) is not installed; pip install "gpusim[cuda]"'
    ]


def _build(regs: int, smem: int, setmaxnreg: tuple[int, ...] = (), spills: int = 0) -> BuildReport:
    res = KernelResources("k", "sm_90a", regs, name="k", dynamic_smem_bytes=smem, max_threads_per_cta=384,
                          warpgroup_registers=setmaxnreg, spill_store_bytes=spills, spill_load_bytes=spills)  # fmt: skip
    return BuildReport("k.cubin", "sm_90a", [KernelReport(res)])


def test_predict_with_build_takes_its_registers_and_warns_on_spills() -> None:
    h100 = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", h100, {})
    built, warnings = schedule_with_build(sched, h100, _build(168, 214016, (232, 24)))
    assert built.roles["producer"].regs == 24
    assert built.roles["math"].regs == 232
    assert warnings == []
    _, warnings = schedule_with_build(sched, h100, _build(168, 214016, (232, 40), spills=16))
    assert warnings and "spills: 16 bytes spill stores" in warnings[0]


def test_predict_with_build_refuses_fewer_ctas_than_the_schedule_launches() -> None:
    a100 = load_arch("a100")
    sched = load_schedule("gemm_sync", a100, {"CTAS_PER_SM": 2, "REGS": 96})
    res = KernelResources("k", "sm_80", 225, name="k", dynamic_smem_bytes=49152, max_threads_per_cta=256)
    with pytest.raises(ScheduleRefused, match=r"allows 1 CTA\(s\) per SM \(registers: 225 registers"):
        schedule_with_build(sched, a100, BuildReport("k.cubin", "sm_80", [KernelReport(res)]))


def test_check_tcgen05_2cta_against_saved_build_text(run_cli) -> None:
    rc, out, err = run_cli(["check", "gemm_tcgen05", "--against", FIXTURES / "cutlass_sm100_2cta.sass.txt",
                            "--arch", "sm_100a", "--json"])  # fmt: skip
    assert rc == 0, err
    rows = {r["what"]: r for r in json.loads(out)["rows"]}
    umma = rows["tcgen05 instructions per k-tile (role 'mma')"]
    assert (umma["schedule"], umma["build"], umma["agrees"]) == (4, 4, True)  # 256x256x64 / m256n256k16
    assert rows["pipeline stages (buffer 'ab')"]["build"] == 6


def test_resources_of_the_2cta_cubin_text() -> None:
    from gpusim.compiler.parse_cuobjdump import apply_elf_info, parse_elf_info, parse_resource_usage

    (kernel,) = parse_resource_usage(
        (FIXTURES / "cutlass_sm100_2cta.resource_usage.txt").read_text(), "sm_100a"
    )
    kernel = apply_elf_info(kernel, parse_elf_info((FIXTURES / "cutlass_sm100_2cta.elf.txt").read_text()))
    assert (kernel.arch, kernel.registers_per_thread, kernel.barriers, kernel.max_threads_per_cta) == (
        "sm_100a", 110, 7, 256,
    )  # fmt: skip


def test_measure_kernels_rows_are_in_the_measurement_format(tmp_path: Path) -> None:
    """A measure-kernels row has every column, names its data and GPU, and reads back as a measurement."""
    import csv

    from gpusim.calibrate.measurements import COLUMNS, read_measurements
    from gpusim.compiler.launch import Measurement

    row = Measurement(
        "stream.cu", "h200", "stream", "fp32", {"bytes": 1 << 30}, 513.0, {"gpu": "NVIDIA H200"}
    ).row()
    assert tuple(row) == COLUMNS
    path = tmp_path / "kernels.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    (m,) = read_measurements([path])
    assert (m.schedule, m.value) == ("stream", 513.0)
    assert m.params["bytes"] == 1 << 30 or m.params["bytes"] == str(1 << 30)
    assert m.params["data"] == "zeros" and m.params["gpu"] == "NVIDIA H200"


def test_measure_kernels_rows_carry_the_builds_schedule_overrides() -> None:
    """A reference kernel built with plain shared-memory tiles (or as a 2-CTA GEMM) is predicted that way."""
    from gpusim.compiler.launch import Measurement

    row = Measurement("gemm_cp_async.cu", "h200", "gemm_cp_async", "bf16", {"M": 1024, "N": 1024, "K": 1024},
                      100.0, {"gpu": "NVIDIA H200"}, {"SMEM_LAYOUT": "plain"}).row()  # fmt: skip
    assert row["params"].startswith("SMEM_LAYOUT=plain;data=zeros;gpu=NVIDIA H200")


def test_measure_kernels_only_names_an_unknown_kernel(run_cli) -> None:
    rc, _, err = run_cli(["measure-kernels", "--only", "gemm_sync,nope"])
    assert rc == 2
    assert "no reference kernel nope" in err and "gemm_sync" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--only", ",,"], "names no kernel"),
        (["--iters", "0"], "expected a count from 1"),
        (["--iters", "1000000000"], "expected a count from 1"),
        (["--out", "rows.txt"], "unknown extension"),
        (["--out", "/nonexistent-dir/rows.csv"], "does not exist"),
    ],
)
def test_measure_kernels_refuses_bad_options_before_any_work(run_cli, args: list[str], expected: str) -> None:
    """Options are checked before the GPU is looked for, so the same line comes with or without one."""
    rc, _, err = run_cli(["measure-kernels", *args])
    assert rc == 2
    assert expected in err and "GPU" not in err and len(err.strip().splitlines()) == 1


def test_measure_refuses_an_unwritable_out_before_timing(run_cli) -> None:
    rc, _, err = run_cli(["measure", "--out", "/nonexistent-dir/rows.csv"])
    assert rc == 2 and "does not exist" in err


def test_measure_kernels_refuses_a_build_dir_that_is_a_file(tmp_path: Path, run_cli) -> None:
    a_file = tmp_path / "build"
    a_file.write_text("")
    rc, _, err = run_cli(["measure-kernels", "--build-dir", str(a_file)])
    assert rc == 2 and "not a directory" in err and "GPU" not in err


def test_measure_kernels_build_dir_may_be_new_but_not_under_a_file(tmp_path: Path, run_cli) -> None:
    """A missing --build-dir passes (it is created as mkdir -p; the unknown kernel stops the run after the
    check, with or without a GPU); one under a file is refused."""
    rc, _, err = run_cli(
        ["measure-kernels", "--build-dir", str(tmp_path / "new" / "deeper"), "--only", "nope"]
    )
    assert rc == 2 and "build-dir" not in err and "no reference kernel nope" in err
    a_file = tmp_path / "plain"
    a_file.write_text("")
    rc, _, err = run_cli(["measure-kernels", "--build-dir", str(a_file / "sub")])
    assert rc == 2 and "is not a directory" in err and "GPU" not in err
