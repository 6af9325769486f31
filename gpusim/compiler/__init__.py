"""Compiler ground truth: toolchain discovery, ptxas/cuobjdump/SASS readers, occupancy, and the
schedule-vs-build check. Nothing here needs a GPU; the toolchain is the optional ``cuda`` extra."""

from gpusim.compiler.build import BuildReport, KernelReport, compile_source, inspect_file, nvcc_arch
from gpusim.compiler.check import CheckReport, check_against_build
from gpusim.compiler.kernel_resources import KernelResources
from gpusim.compiler.occupancy import Occupancy, occupancy
from gpusim.compiler.parse_cuobjdump import parse_elf_info, parse_resource_usage
from gpusim.compiler.parse_ptxas import parse_ptxas_verbose
from gpusim.compiler.sass import Mix, parse_sass
from gpusim.compiler.toolchain import Toolchain, ToolchainMissing, find_toolchain, nvcc_and_includes

__all__ = [
    "BuildReport",
    "CheckReport",
    "KernelReport",
    "KernelResources",
    "Mix",
    "Occupancy",
    "Toolchain",
    "ToolchainMissing",
    "check_against_build",
    "compile_source",
    "find_toolchain",
    "inspect_file",
    "nvcc_and_includes",
    "nvcc_arch",
    "occupancy",
    "parse_elf_info",
    "parse_ptxas_verbose",
    "parse_resource_usage",
    "parse_sass",
]
