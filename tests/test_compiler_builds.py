"""Compile the reference kernels with the PyPI CUDA toolchain (the ``cuda`` extra) and check what gpusim
reads from each cubin against ptxas -v of the same build. Skipped without the toolchain.

The CUTLASS builds take minutes each on 2 cores; they run only with GPUSIM_CUTLASS_BUILDS=1:

    GPUSIM_CUTLASS_BUILDS=1 .venv/bin/pytest -m slow tests/test_compiler_builds.py
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpusim.arch import load_arch
from gpusim.compiler.build import compile_source, inspect_cubin, inspect_file
from gpusim.compiler.catalog import REFERENCE_KERNELS, ReferenceKernel
from gpusim.compiler.check import check_against_build
from gpusim.compiler.parse_ptxas import parse_ptxas_verbose
from gpusim.compiler.toolchain import find_toolchain, toolchain_available
from gpusim.schedule.load import load_schedule, parse_override

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not toolchain_available(), reason='needs the CUDA toolchain: pip install "gpusim[cuda]"'
    ),
]
CUTLASS_BUILDS = os.environ.get("GPUSIM_CUTLASS_BUILDS") == "1"
PLAIN = [k for k in REFERENCE_KERNELS if not k.cutlass]
CUTLASS = [k for k in REFERENCE_KERNELS if k.cutlass]


def _cross_check(kernel: ReferenceKernel, tmp_path: Path) -> None:
    cubin, log, _, _ = compile_source(kernel.path, kernel.arch, (), tmp_path)
    from_ptxas = {k.mangled_name: k for k in parse_ptxas_verbose(log)}
    from_cubin = inspect_cubin(cubin, kernel.arch)
    assert {k.resources.mangled_name for k in from_cubin} == set(from_ptxas)
    for report in from_cubin:
        cubin_res, ptxas_res = report.resources, from_ptxas[report.resources.mangled_name]
        assert cubin_res.arch == ptxas_res.arch == kernel.arch
        assert cubin_res.registers_per_thread == ptxas_res.registers_per_thread
        assert cubin_res.static_smem_bytes == ptxas_res.static_smem_bytes
        assert cubin_res.barriers == ptxas_res.barriers
        assert cubin_res.stack_frame_bytes == ptxas_res.stack_frame_bytes
        # no local arrays in these kernels: the SASS's local stores are ptxas's spill stores
        assert cubin_res.local_store_bytes == ptxas_res.spill_store_bytes
        assert cubin_res.local_load_bytes == ptxas_res.spill_load_bytes
        assert cubin_res.max_threads_per_cta


@pytest.mark.parametrize("kernel", PLAIN, ids=[k.file for k in PLAIN])
def test_cubin_resources_match_ptxas(kernel: ReferenceKernel, tmp_path: Path) -> None:
    _cross_check(kernel, tmp_path)


def test_resources_json_matches_ptxas_lines(run_cli, tmp_path: Path) -> None:
    kernel = next(k for k in PLAIN if k.file == "gemm_cp_async.cu")
    rc, out, err = run_cli(["resources", kernel.path, "--arch", kernel.arch, "--json"])
    assert rc == 0, err
    (data,) = json.loads(out)["kernels"]
    res = data["resources"]
    nvcc = find_toolchain().nvcc
    done = subprocess.run([str(nvcc), f"-arch={kernel.arch}", "-cubin", "-Xptxas", "-v", "-std=c++17", "-DNDEBUG",
                           "--expt-relaxed-constexpr", str(kernel.path), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (ptxas,) = parse_ptxas_verbose(done.stdout + done.stderr)
    assert res["registers_per_thread"] == ptxas.registers_per_thread
    assert res["static_smem_bytes"] == ptxas.static_smem_bytes
    assert (res["spill_store_bytes"], res["spill_load_bytes"]) == (
        ptxas.spill_store_bytes,
        ptxas.spill_load_bytes,
    )
    assert res["dynamic_smem_bytes"] == 3 * (128 + 256) * 64 * 2  # the kernel's own gpusim_dynamic_smem_bytes
    assert data["occupancy"]["ctas_per_sm"] == 1
    assert data["sass"]["classes"]["tensor"] > 0


def test_maxrregcount_32_is_reported_as_spilling(run_cli) -> None:
    kernel = next(k for k in PLAIN if k.file == "softmax.cu")
    rc, out, err = run_cli(["resources", kernel.path, "--arch", "sm_90a", "--maxrregcount", "32", "--json"])
    assert rc == 0, err
    (data,) = json.loads(out)["kernels"]
    assert data["resources"]["registers_per_thread"] <= 32
    assert data["resources"]["spills"] is True
    assert data["resources"]["spill_store_bytes"] > 0
    assert "spills" in data["warning"]
    rc, out, err = run_cli(["resources", kernel.path, "--arch", "sm_90a", "--maxrregcount", "32"])
    assert rc == 0
    assert "gpusim: warning: row_softmax (sm_90a) spills:" in err


def test_fatbin_cubins_by_arch(tmp_path: Path, run_cli) -> None:
    kernel = next(k for k in PLAIN if k.file == "stream.cu")
    fatbin = tmp_path / "stream.fatbin"
    subprocess.run([str(find_toolchain().nvcc), "-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                    "arch=compute_90a,code=sm_90a", str(kernel.path), "-o", str(fatbin)], check=True)  # fmt: skip
    for arch in ("sm_80", "sm_90a"):
        report = inspect_file(fatbin, arch)
        assert {k.name for k in report.kernels} == {"stream_copy", "stream_triad"}
        assert all(k.resources.arch == arch for k in report.kernels)
    rc, _, err = run_cli(["resources", fatbin, "--arch", "sm_100a"])
    assert rc == 2
    assert err.strip().splitlines() == [
        f"gpusim: error: {fatbin}: no cubin for sm_100a (embedded cubins: sm_80, sm_90a)"
    ]


def test_check_gemm_sync_against_its_build(run_cli) -> None:
    kernel = next(k for k in PLAIN if k.file == "gemm_sync.cu")
    rc, out, err = run_cli(["check", "gemm_sync", "--set", "dtype=fp16", "--against", kernel.path, "--arch", "sm_80", "--json"])  # fmt: skip
    assert rc == 0, err
    rows = {r["what"]: r for r in json.loads(out)["rows"]}
    assert rows["mma_sync instructions per k-tile (role 'warps')"]["build"] == 64
    assert rows["mma_sync instructions per k-tile (role 'warps')"]["agrees"] is True
    assert rows["mma_sync instruction shape (m, n, k)"]["build"] == [16, 8, 16]
    assert rows["shared memory per CTA (bytes)"]["build"] == 2 * (128 + 256) * 32 * 2
    assert rows["threads per CTA"]["agrees"] is True


def test_nvcc_error_is_one_line(tmp_path: Path, run_cli) -> None:
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k() { undeclared_thing(); }\n")
    rc, _, err = run_cli(["resources", bad, "--arch", "sm_90a"])
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert "bad.cu: nvcc: failed" in err and "undeclared_thing" in err


@pytest.mark.slow
@pytest.mark.skipif(not CUTLASS_BUILDS, reason="CUTLASS builds take minutes: set GPUSIM_CUTLASS_BUILDS=1")
@pytest.mark.parametrize("kernel", CUTLASS, ids=[k.file for k in CUTLASS])
def test_cutlass_builds_against_their_schedules(kernel: ReferenceKernel, tmp_path: Path) -> None:
    _cross_check(kernel, tmp_path)
    arch = load_arch(kernel.arch)
    assert kernel.schedule is not None
    sched = load_schedule(
        kernel.schedule, arch, dict(parse_override(f"{k}={v}") for k, v in kernel.sets.items())
    )
    report = check_against_build(sched, arch, inspect_file(kernel.path, kernel.arch))
    rows = {r.what.split(" (")[0]: r for r in report.rows}
    tensor = next(r for w, r in rows.items() if "instructions per k-tile" in w)
    assert tensor.agrees, tensor
