"""The microbenchmark kernels (kernels/micro/) compile with ptxas for their targets, without spills or
ptxas performance warnings, and export every kernel the catalog launches. Skipped without nvcc."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.calibrate.micro.build import build_all, sources_for
from gpusim.calibrate.micro.catalog import VARIANTS
from gpusim.calibrate.micro.derive import CLOCK_SAMPLES, WGMMA_SLOTS
from gpusim.compiler.elf_symbols import read_u32_symbols
from gpusim.compiler.toolchain import toolchain_available

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not toolchain_available(), reason='needs the CUDA toolchain: pip install "gpusim[cuda]"'
    ),
]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_micro_sources_build_for_target(target: str, tmp_path: Path) -> None:
    builds = build_all(target, tmp_path)
    assert sorted(builds) == sorted(sources_for(target))
    assert ("wgmma_bench.cu" in builds) == (target == "sm_90a")
    for source, build in builds.items():
        assert build.cubin.is_file() and build.target == target
        assert not build.notes, f"{source}: {build.notes}"  # no wgmma serialization, no injected fences
        wanted = {
            v.kernel for v in VARIANTS if v.source == source and (target == "sm_90a" or not v.needs_wgmma)
        }
        assert wanted <= set(build.registers), f"{source}: kernels missing from the build"
        symbols = read_u32_symbols(build.cubin.read_bytes())
        assert "gpusim_micro_smem_bytes" in symbols
        if source == "wgmma_bench.cu":  # 128 fp32 accumulators at N=256 fit under 3 warpgroups' 168
            assert max(build.registers.values()) <= 168
            assert symbols["gpusim_micro_max_threads"] == 128 * WGMMA_SLOTS
        if source == "tensor_clock.cu":
            assert symbols["gpusim_micro_samples"] == CLOCK_SAMPLES
