"""Compiler ground truth: toolchain discovery, ptxas/cuobjdump/SASS readers, occupancy, and the
schedule-vs-build check. Nothing here needs a GPU; the toolchain is the optional ``cuda`` extra.

Names are imported on first use, so ``gpusim --help`` does not load the readers."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "BuildReport": "build", "KernelReport": "build", "compile_source": "build", "inspect_file": "build",
    "nvcc_arch": "build", "CheckReport": "check", "check_against_build": "check",
    "KernelResources": "kernel_resources", "Occupancy": "occupancy", "occupancy": "occupancy",
    "parse_elf_info": "parse_cuobjdump", "parse_resource_usage": "parse_cuobjdump",
    "parse_ptxas_verbose": "parse_ptxas", "Mix": "sass", "parse_sass": "sass", "Toolchain": "toolchain",
    "ToolchainMissing": "toolchain", "find_toolchain": "toolchain", "nvcc_and_includes": "toolchain",
    "schedule_with_build": "with_build",
}  # fmt: skip
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gpusim.compiler' has no attribute '{name}'")
    return getattr(import_module(f"gpusim.compiler.{_EXPORTS[name]}"), name)
