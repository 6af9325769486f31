"""The reference kernels on a real GPU through cuda-python (``gpu``: skipped without one)."""

from __future__ import annotations

import math

import pytest

from gpusim.compiler.catalog import REFERENCE_KERNELS
from gpusim.compiler.launch import arch_of_device, measure_kernel
from gpusim.compiler.toolchain import toolchain_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.cuda,
    pytest.mark.skipif(not toolchain_available(), reason="no toolchain"),
]


def test_arch_of_device_names() -> None:
    assert arch_of_device("NVIDIA H100 80GB HBM3") == "h100"
    assert arch_of_device("NVIDIA H100 PCIe") == "h100_pcie"
    assert arch_of_device("NVIDIA H200") == "h200"
    assert arch_of_device("NVIDIA A100-SXM4-80GB") == "a100"


@pytest.mark.parametrize("file", ["gemm_sync.cu", "gemm_cp_async.cu", "stream.cu", "softmax.cu"])
def test_plain_kernels_run_and_take_time(file: str) -> None:
    kernel = next(k for k in REFERENCE_KERNELS if k.file == file)
    problem = {"gemm_sync.cu": {"M": 1024, "N": 1024, "K": 1024}, "gemm_cp_async.cu": {"M": 1024, "N": 1024, "K": 1024},
               "stream.cu": {"bytes": 1 << 26}, "softmax.cu": {"rows": 4096}}[file]  # fmt: skip
    result = measure_kernel(kernel, problem, iters=3)
    assert math.isfinite(result.time_us) and result.time_us > 0
    assert result.row()["metric"] == "time"
