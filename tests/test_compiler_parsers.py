"""Parsers of ptxas -v, cuobjdump and SASS text, on saved output of real builds (no toolchain needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.arch import load_arch
from gpusim.compiler.demangle import short_name
from gpusim.compiler.kernel_resources import KernelResources
from gpusim.compiler.occupancy import occupancy
from gpusim.compiler.parse_cuobjdump import (
    apply_elf_info,
    parse_elf_info,
    parse_resource_usage,
    require_text_kind,
)
from gpusim.compiler.parse_ptxas import parse_ptxas_verbose
from gpusim.compiler.sass import instruction_class, opcode_key, parse_sass
from gpusim.errors import InputError, ScheduleRefused

FIXTURES = Path(__file__).parent / "fixtures" / "compiler"

PTXAS_TWO_KERNELS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN2ns2tkILi3EEEvPf' for 'sm_90a'
ptxas info    : Function properties for _ZN2ns2tkILi3EEEvPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 19.016 ms
ptxas info    : Function properties for helper
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function '_Z3redPfPKfi' for 'sm_90a'
ptxas info    : Function properties for _Z3redPfPKfi
    256 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 256 bytes cumulative stack size, 4096 bytes smem, 548 bytes cmem[0]
"""


def test_ptxas_verbose_reads_each_entry_and_skips_device_functions() -> None:
    tk, red = parse_ptxas_verbose(PTXAS_TWO_KERNELS)
    assert (tk.mangled_name, tk.arch, tk.registers_per_thread, tk.barriers, tk.static_smem_bytes) == (
        "_ZN2ns2tkILi3EEEvPf", "sm_90a", 8, 0, 0,
    )  # fmt: skip
    assert (red.registers_per_thread, red.barriers, red.static_smem_bytes, red.constant_bytes) == (
        80,
        1,
        4096,
        548,
    )
    assert (red.stack_frame_bytes, red.spill_store_bytes, red.spill_load_bytes) == (256, 12, 20)
    assert red.spills and not tk.spills
    assert "spills: 12 bytes spill stores, 20 bytes spill loads at 80 registers" in (
        red.spill_warning() or ""
    )


def test_ptxas_of_the_cutlass_pingpong_build() -> None:
    (kernel,) = parse_ptxas_verbose((FIXTURES / "cutlass_sm90_pingpong.ptxas.txt").read_text())
    assert kernel.registers_per_thread == 168
    assert kernel.barriers == 2
    assert not kernel.spills


def test_maxrregcount_overridden_by_launch_bounds_is_read_as_no_spill() -> None:
    (kernel,) = parse_ptxas_verbose((FIXTURES / "gemm_sync_maxrreg32.sm_80.ptxas.txt").read_text())
    assert (kernel.mangled_name, kernel.arch, kernel.registers_per_thread, kernel.spills) == (
        "gemm_sync",
        "sm_80",
        225,
        False,
    )


def test_ptxas_without_entries_is_one_line_error() -> None:
    with pytest.raises(InputError, match="no 'Compiling entry function'"):
        parse_ptxas_verbose("ptxas info    : 0 bytes gmem\n")


def test_resource_usage_and_elf_info_of_the_pingpong_cubin() -> None:
    (kernel,) = parse_resource_usage(
        (FIXTURES / "cutlass_sm90_pingpong.resource_usage.txt").read_text(), "sm_90a"
    )
    info = parse_elf_info((FIXTURES / "cutlass_sm90_pingpong.elf.txt").read_text())
    assert info.arch == "sm_90a"
    kernel = apply_elf_info(kernel, info)
    assert kernel.registers_per_thread == 168
    assert kernel.barriers == 2
    assert kernel.max_threads_per_cta == 384  # 3 warpgroups: producer + 2 consumers
    assert kernel.max_registers == 168
    assert kernel.static_smem_bytes == 0  # all of it is dynamic; the 1 KiB the cubin counts is the runtime's


def test_resource_usage_with_fatbin_headers_takes_each_arch() -> None:
    text = """
Fatbin elf code:
================
arch = sm_80
Resource usage:
 Function k:
  REG:40 STACK:0 SHARED:4096 LOCAL:0 CONSTANT[0]:372 TEXTURE:0 SURFACE:0 SAMPLER:0
Fatbin elf code:
================
arch = sm_90a
Resource usage:
 Function k:
  REG:38 STACK:16 SHARED:5120 LOCAL:8 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
    a, b = parse_resource_usage(text)
    assert (a.arch, a.registers_per_thread, a.static_smem_bytes) == ("sm_80", 40, 4096)
    assert (b.arch, b.registers_per_thread, b.stack_frame_bytes, b.local_bytes) == ("sm_90a", 38, 16, 8)


def test_saved_text_kinds_are_recognised_and_others_refused(tmp_path: Path) -> None:
    assert require_text_kind(PTXAS_TWO_KERNELS, "x") == "ptxas"
    assert require_text_kind((FIXTURES / "cutlass_sm90_pingpong.sass.txt").read_text(), "x") == "sass"
    with pytest.raises(InputError, match=r"^notes.txt: not a CUDA build output"):
        require_text_kind("hello", "notes.txt")


@pytest.mark.parametrize(
    ("opcode", "klass", "key"),
    [
        ("HGMMA.64x128x16.F32.BF16", "tensor", "HGMMA.64x128x16.F32.BF16"),
        ("UTCHMMA", "tensor", "UTCHMMA"),
        ("MUFU.EX2", "sfu", "MUFU.EX2"),
        ("UTMALDG.2D.MULTICAST", "tma", "UTMALDG"),
        ("LDSM.16.M88.4", "shared", "LDSM"),
        ("SYNCS.PHASECHK.TRANS64.TRYWAIT", "barrier", "SYNCS"),
        ("FFMA.FTZ", "fp32", "FFMA"),
        ("F2FP.BF16.F32.PACK_AB", "conversion", "F2FP"),
        ("LDGSTS.E.BYPASS.128", "memory", "LDGSTS"),
        ("STL.64", "local", "STL"),
        ("IMAD.WIDE", "integer", "IMAD"),
        ("S2R", "other", "S2R"),
    ],
)
def test_instruction_classes(opcode: str, klass: str, key: str) -> None:
    assert instruction_class(opcode) == klass
    assert opcode_key(opcode) == key


def test_pingpong_sass_mainloop_and_setmaxnreg() -> None:
    (function,) = parse_sass((FIXTURES / "cutlass_sm90_pingpong.sass.txt").read_text())
    assert function.arch == "sm_90a"
    assert sorted(function.setmaxnreg()) == [40, 232]
    assert function.mix.count("HGMMA.64x128x16") >= 8
    compute = [loop for loop in function.innermost_loops() if not loop.is_wait]
    mainloop = max(compute, key=lambda loop: loop.mix.count("HGMMA"))
    assert mainloop.mix.count("HGMMA") == 8  # 128x128x64 per consumer warpgroup / 64x128x16
    assert mainloop.mix.classes["barrier"] >= 2
    assert any(loop.is_wait for loop in function.innermost_loops())  # mbarrier try-wait spin loops
    producer = [loop for loop in compute if loop.mix.count("UTMALDG")]
    assert producer


def test_loops_from_backward_branches() -> None:
    text = """
	.target	sm_90a
		Function : k
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   FFMA R2, R2, R3, R4 ;
        /*0020*/                   MUFU.EX2 R2, R2 ;
        /*0030*/               @P0 BRA 0x10 ;
        /*0040*/                   FADD R2, R2, R3 ;
        /*0050*/               @P1 BRA 0x0 ;
        /*0060*/                   EXIT ;
"""
    (function,) = parse_sass(text)
    assert [(loop.start, loop.end) for loop in function.loops()] == [(0x0, 0x50), (0x10, 0x30)]
    (inner,) = function.innermost_loops()
    assert (inner.start, inner.end) == (0x10, 0x30)
    assert inner.mix.classes == {"sfu": 1, "fp32": 1, "control": 1}


def test_softmax_sass_has_one_ex2_per_element() -> None:
    (function,) = parse_sass((FIXTURES / "softmax.sm_90a.sass.txt").read_text())
    # COLS=1024 over 32 lanes: 32 elements per lane, each one MUFU.EX2 (exp2f), plus one MUFU.RCP
    assert function.mix.count("MUFU.EX2") == 32
    assert function.local_access_bytes() == (0, 0)


def test_occupancy_binding_limits() -> None:
    h100 = load_arch("h100")
    pingpong = KernelResources("k", "sm_90a", 168, dynamic_smem_bytes=214016, max_threads_per_cta=384)
    occ = occupancy(pingpong, h100)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.binding) == (1, 12, "registers and shared_memory")
    assert occ.limits["shared_memory"] == 1
    small = KernelResources("s", "sm_90a", 32, static_smem_bytes=0, max_threads_per_cta=128)
    occ = occupancy(small, h100)
    assert (occ.ctas_per_sm, occ.binding) == (16, "registers and warps")
    smem_bound = KernelResources("m", "sm_90a", 32, dynamic_smem_bytes=100 * 1024, max_threads_per_cta=128)
    assert occupancy(smem_bound, h100).binding == "shared_memory"
    with pytest.raises(ScheduleRefused, match="KiB shared memory per CTA"):
        occupancy(
            KernelResources("x", "sm_90a", 32, dynamic_smem_bytes=240 * 1024, max_threads_per_cta=128), h100
        )
    with pytest.raises(ScheduleRefused, match="threads per CTA unknown"):
        occupancy(KernelResources("y", "sm_90a", 32), h100)


def test_mangled_names_that_no_demangler_reads_show_identifiers() -> None:
    (function,) = parse_sass((FIXTURES / "cutlass_sm90_pingpong.sass.txt").read_text())
    name = short_name(function.name)
    assert "MainloopSm90TmaGmmaWarpSpecialized" in name and "KernelTmaWarpSpecializedPingpong" in name
