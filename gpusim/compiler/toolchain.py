"""Find the CUDA toolchain: nvcc, ptxas, cuobjdump and nvdisasm from the PyPI wheels (the ``cuda`` extra),
else from ``CUDA_HOME`` / ``CUDA_PATH``, else from ``PATH``; and the CUTLASS/CuTe headers of the
``nvidia-cutlass`` wheel. Other parts of gpusim (microbenchmarks, the launcher) reuse :func:`find_toolchain`."""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from gpusim.errors import InputError

INSTALL_HINT = 'pip install "gpusim[cuda]"'
_TOOLS = ("nvcc", "ptxas", "cuobjdump", "nvdisasm")


class ToolchainMissing(InputError):
    """The CUDA toolchain (or one of its tools) is not installed."""


@dataclass(frozen=True)
class Toolchain:
    """Paths of the CUDA tools and the include directories a reference-kernel build needs."""

    bin_dir: Path | None
    tools: dict[str, Path] = field(default_factory=dict)
    include_dirs: tuple[Path, ...] = ()
    """The CUDA headers (cuda_runtime.h, CCCL) when they are not already on nvcc's own search path."""
    cutlass_include_dirs: tuple[Path, ...] = ()
    """CUTLASS/CuTe headers (``cutlass_library/source/include`` and ``tools/util/include``), if installed."""

    @property
    def nvcc(self) -> Path:
        """The nvcc driver."""
        return self.tool("nvcc")

    def tool(self, name: str) -> Path:
        """The path of one tool, or a one-line :class:`ToolchainMissing` naming it."""
        path = self.tools.get(name)
        if path is None:
            raise ToolchainMissing(f"CUDA tool '{name}' not found; install the toolchain: {INSTALL_HINT}")
        return path

    def require_cutlass(self) -> tuple[Path, ...]:
        """The CUTLASS include directories, or a one-line error saying how to install them."""
        if not self.cutlass_include_dirs:
            raise ToolchainMissing(f"CUTLASS headers not found (the nvidia-cutlass wheel); {INSTALL_HINT}")
        return self.cutlass_include_dirs


def _wheel_root() -> Path | None:
    """The ``nvidia/cu*`` directory the nvidia-cuda-nvcc wheel installs into, if any."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for candidate in sorted(Path(location).glob("cu*"), reverse=True):
            if (candidate / "bin" / "nvcc").is_file():
                return candidate
        if (Path(location) / "cuda_nvcc" / "bin" / "nvcc").is_file():  # CUDA 12 wheel layout
            return Path(location) / "cuda_nvcc"
    return None


def _tools_in(bin_dir: Path) -> dict[str, Path]:
    return {name: bin_dir / name for name in _TOOLS if (bin_dir / name).is_file()}


def _cutlass_include_dirs() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or spec.origin is None:
        return ()
    source = Path(spec.origin).parent / "source"
    dirs = (source / "include", source / "tools" / "util" / "include")
    return tuple(d for d in dirs if d.is_dir()) if (source / "include" / "cutlass").is_dir() else ()


@cache
def find_toolchain() -> Toolchain:
    """The CUDA toolchain gpusim uses, or a :class:`ToolchainMissing` error (one line) without nvcc."""
    root = _wheel_root()
    bin_dir: Path | None = None
    tools: dict[str, Path] = {}
    include_dirs: tuple[Path, ...] = ()
    if root is not None:
        bin_dir = root / "bin"
        tools = _tools_in(bin_dir)
        include_dirs = tuple(d for d in (root / "include",) if d.is_dir())
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if "nvcc" not in tools and home and (Path(home) / "bin" / "nvcc").is_file():
            bin_dir = Path(home) / "bin"
            tools = _tools_in(bin_dir)
    if "nvcc" not in tools:
        found = shutil.which("nvcc")
        if found:
            bin_dir = Path(found).resolve().parent
            tools = _tools_in(bin_dir)
    if bin_dir is not None:  # cuobjdump and nvdisasm come in their own wheels, next to nvcc
        for name in _TOOLS:
            if name not in tools and (which := shutil.which(name)):
                tools[name] = Path(which)
    if "nvcc" not in tools:
        raise ToolchainMissing(f"the CUDA toolchain (nvcc) is not installed; {INSTALL_HINT}")
    return Toolchain(bin_dir, tools, include_dirs, _cutlass_include_dirs())


def toolchain_available() -> bool:
    """Whether nvcc, ptxas and cuobjdump are all installed (tests skip compile tests otherwise)."""
    try:
        tools = find_toolchain().tools
    except ToolchainMissing:
        return False
    return all(name in tools for name in ("nvcc", "ptxas", "cuobjdump"))


def nvcc_and_includes() -> tuple[Path, tuple[Path, ...]]:
    """The nvcc path and every include directory a kernel build needs (CUDA, then CUTLASS when present)."""
    chain = find_toolchain()
    return chain.nvcc, chain.include_dirs + chain.cutlass_include_dirs
