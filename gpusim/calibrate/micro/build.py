"""Compile the microbenchmark sources (kernels/micro/) for one SM target with the CUDA toolchain.

One nvcc run per source (the variants of a source are its kernels and runtime arguments), in parallel
threads. A build that spills registers is refused: a spilling benchmark times local memory, not the
unit it is meant to measure.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gpusim.calibrate.micro.catalog import SOURCES, WGMMA_ONLY_SOURCES
from gpusim.compiler.build import compile_source, nvcc_arch
from gpusim.compiler.catalog import kernels_dir
from gpusim.compiler.parse_ptxas import parse_ptxas_verbose
from gpusim.errors import InputError


@dataclass(frozen=True)
class MicroBuild:
    """One compiled source: its cubin and what ptxas said per kernel."""

    source: str
    target: str
    cubin: Path
    registers: dict[str, int]
    """Registers per thread by kernel name."""
    compile_s: float
    notes: tuple[str, ...] = ()
    """ptxas warnings and performance notes (e.g. wgmma serialization, injected warpgroup.arrive)."""


def micro_dir() -> Path:
    """kernels/micro/ (inside the wheel, or the source tree)."""
    return kernels_dir() / "micro"


def sources_for(target: str) -> list[str]:
    """The sources that build for ``target`` (wgmma_bench.cu only for sm_90a)."""
    return [s for s in SOURCES if s not in WGMMA_ONLY_SOURCES or target.startswith("sm_90")]


def build_one(source: str, target: str, out_dir: Path) -> MicroBuild:
    """Compile one source; InputError (one line) on a compile error or a spilling kernel."""
    target = nvcc_arch(target)
    cubin, log, _, seconds = compile_source(micro_dir() / source, target, ("-lineinfo",), out_dir)
    kernels = parse_ptxas_verbose(log)
    for k in kernels:
        if k.spills:
            raise InputError(f"kernels/micro/{source} ({target}): {k.name or k.mangled_name} spills "
                             f"{k.spill_store_bytes} bytes at {k.registers_per_thread} registers")  # fmt: skip
    return MicroBuild(
        source, target, cubin, {k.mangled_name: k.registers_per_thread for k in kernels}, seconds
    )


def build_all(target: str, out_dir: Path) -> dict[str, MicroBuild]:
    """Every source that builds for ``target``, compiled in parallel; by source name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = sources_for(nvcc_arch(target))
    with ThreadPoolExecutor(max_workers=len(sources)) as pool:
        builds = list(pool.map(lambda s: build_one(s, target, out_dir), sources))
    return {b.source: b for b in builds}
