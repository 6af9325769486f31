"""Time the project's reference kernels on the local GPU: the same sources `gpusim check` compares with
the schedules. Plain kernels are compiled to a cubin for the device's SM and launched with cuda-python's
driver API; CUTLASS kernels are compiled to a shared library whose ``gpusim_run_gemm`` (host code
through the CUTLASS device adapter, kernels/cutlass_gemm_runner.cuh) is called with ctypes.

Needs an NVIDIA GPU, its driver, cuda-python and the ``cuda`` extra; tests are marked ``gpu``."""

from __future__ import annotations

import ctypes
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.compiler.build import _run, compile_source
from gpusim.compiler.catalog import REFERENCE_KERNELS, ReferenceKernel
from gpusim.compiler.elf_symbols import read_u32_symbols
from gpusim.compiler.toolchain import find_toolchain
from gpusim.errors import GpusimError, InputError

_DEVICE_ARCHS = (("gb200", "gb200"), ("b300", "b300"), ("b200", "b200"), ("b100", "b100"), ("h200", "h200"),
                 ("h800", "h800"), ("h100 pcie", "h100_pcie"), ("h100", "h100"), ("h20", "h20"),
                 ("a100-pcie", "a100_pcie"), ("a100 pcie", "a100_pcie"), ("a100", "a100"), ("v100", "v100"))  # fmt: skip


@dataclass(frozen=True)
class Measurement:
    """One timed run in the measurement format's terms."""

    kernel: str
    arch: str
    schedule: str
    dtype: str
    problem: dict[str, int]
    time_us: float
    provenance: dict[str, str] = field(default_factory=dict)
    """The GPU's name, the driver's CUDA version, the date: written into ``params``."""
    sets: dict[str, str] = field(default_factory=dict)
    """The schedule overrides that describe this build (``ReferenceKernel.sets`` but the dtype, a
    column of its own): written into ``params``, so the row is predicted as the kernel was built."""

    def row(self) -> dict[str, Any]:
        """A row of data/measurements/*.csv (every column of the measurement format)."""
        from gpusim.calibrate.measurements import COLUMNS

        extra = {k: v for k, v in self.problem.items() if k not in {"M", "N", "K"}}
        params = {**extra, **self.sets, "data": "zeros", **self.provenance}
        if not self.schedule:
            params["unmapped"] = f"no gpusim schedule models kernels/{self.kernel}"
        row = {column: "" for column in COLUMNS}
        row.update(source=f"gpusim measure-kernels ({self.kernel})", arch=self.arch, schedule=self.schedule,
                   dtype=self.dtype, **{k: self.problem[k] for k in ("M", "N", "K") if k in self.problem},
                   metric="time", value=round(self.time_us, 3), unit="us",
                   notes=f"kernels/{self.kernel}; operands zero-filled (low power: the clock stays near its maximum)",
                   params=";".join(f"{k}={v}" for k, v in params.items()))  # fmt: skip
        return row


def checked(result: Any, what: str) -> Any:
    """The value of a cuda-python driver call's ``(error, value...)`` result; a one-line GpusimError on
    failure, naming ``what``."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise GpusimError(f"CUDA driver: {what} failed ({err})")
    return rest[0] if len(rest) == 1 else rest


def arch_of_device(name: str) -> str:
    """The gpusim arch id of a device name such as 'NVIDIA H100 80GB HBM3'."""
    lowered = name.lower()
    for token, arch in _DEVICE_ARCHS:
        if token in lowered:
            return arch
    raise InputError(f"GPU '{name}': no gpusim arch matches its name")


@contextmanager
def device_context() -> Iterator[tuple[Any, str, str]]:
    """The driver module, the device's ``sm_XX`` and its name, with device 0's primary context current."""
    try:
        from cuda.bindings import driver
    except ImportError:
        raise InputError('cuda-python is not installed; pip install "gpusim[cuda]"') from None
    try:
        checked(driver.cuInit(0), "cuInit")
    except GpusimError:
        raise
    except Exception as exc:  # the driver library itself is missing (no GPU on this machine)
        raise InputError(f"no NVIDIA driver or GPU here: {str(exc).splitlines()[0][:160]}") from None
    device = checked(driver.cuDeviceGet(0), "cuDeviceGet")
    name = checked(driver.cuDeviceGetName(256, device), "cuDeviceGetName").split(b"\0")[0].decode()
    major = checked(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cc")  # fmt: skip
    minor = checked(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cc")  # fmt: skip
    sm = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    context = checked(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
    checked(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    try:
        yield driver, sm, name
    finally:
        driver.cuDevicePrimaryCtxRelease(device)


def local_device() -> tuple[str, str]:
    """The name and SM target of GPU 0 (one-line InputError without a driver or GPU)."""
    with device_context() as (_, sm, name):
        return name, sm


def _time_launches(driver: Any, launch: Callable[[], None], iters: int) -> float:
    start = checked(driver.cuEventCreate(0), "cuEventCreate")
    stop = checked(driver.cuEventCreate(0), "cuEventCreate")
    launch()  # warm-up
    checked(driver.cuEventRecord(start, 0), "cuEventRecord")
    for _ in range(iters):
        launch()
    checked(driver.cuEventRecord(stop, 0), "cuEventRecord")
    checked(driver.cuEventSynchronize(stop), "cuEventSynchronize")
    ms = checked(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
    return ms * 1e3 / iters


def _plain_launch(driver: Any, kernel: ReferenceKernel, sm: str, problem: dict[str, int], work: Path):
    cubin, _, _, _ = compile_source(kernel.path, sm, (), work)
    data = cubin.read_bytes()
    symbols = read_u32_symbols(data)
    module = checked(driver.cuModuleLoadData(data), "cuModuleLoadData")
    smem = symbols.get("gpusim_dynamic_smem_bytes", 0)
    threads = symbols.get("gpusim_threads_per_cta", 256)
    keep: list[Any] = []

    def alloc(nbytes: int) -> ctypes.c_uint64:
        ptr = checked(driver.cuMemAlloc(nbytes), "cuMemAlloc")
        checked(driver.cuMemsetD8(ptr, 0, nbytes), "cuMemsetD8")
        keep.append(ptr)
        return ctypes.c_uint64(int(ptr))

    stem = kernel.path.stem
    if stem in {"gemm_sync", "gemm_cp_async"}:
        m, n, k = problem["M"], problem["N"], problem["K"]
        name, args = stem, [alloc(m * k * 2), alloc(n * k * 2), alloc(m * n * 2), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)]  # fmt: skip
        grid = (n // symbols["gpusim_tile_n"], m // symbols["gpusim_tile_m"], 1)
    elif stem == "stream":
        n4 = problem["bytes"] // 16
        name, args = "stream_copy", [alloc(n4 * 16), alloc(n4 * 16), ctypes.c_longlong(n4)]
        grid = (min(n4 // threads + 1, 65535), 1, 1)
    else:
        rows = problem["rows"]
        name, args = "row_softmax", [alloc(rows * symbols["gpusim_cols"] * 4), alloc(rows * symbols["gpusim_cols"] * 4), ctypes.c_int(rows)]  # fmt: skip
        grid = (-(-rows * 32 // threads), 1, 1)
    function = checked(driver.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction")
    if smem > 48 * 1024:
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        checked(driver.cuFuncSetAttribute(function, attr, smem), "cuFuncSetAttribute")
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])

    def launch() -> None:
        # `params` holds the addresses of the ctypes values in `args`: naming `args` here keeps them alive
        # for as long as `launch` is (freed, the kernel read garbage pointers: an illegal address on H200)
        checked(
            driver.cuLaunchKernel(function, *grid, threads, 1, 1, smem, 0, ctypes.addressof(params), 0),
            f"{name} ({len(args)} arguments)",
        )

    return launch, keep


def cutlass_library(kernel: ReferenceKernel, sm: str, build_dir: Path) -> Path:
    """The shared library of a CUTLASS reference kernel for ``sm`` in ``build_dir``, built unless a build
    newer than the source is already there (a GPU session can build it beside other work, then time it)."""
    library = build_dir / f"{kernel.path.stem}.{sm}.so"
    if library.is_file() and library.stat().st_mtime >= kernel.path.stat().st_mtime:
        return library
    build_dir.mkdir(parents=True, exist_ok=True)
    chain = find_toolchain()
    includes = [f"-I{d}" for d in chain.include_dirs + chain.require_cutlass()]
    partial = library.with_suffix(f".{os.getpid()}.partial.so")
    _run([str(chain.nvcc), f"-arch={sm}", "-std=c++17", "-DNDEBUG", "--expt-relaxed-constexpr", "-shared",
          "-Xcompiler", "-fPIC", *includes, str(kernel.path), "-o", str(partial)], f"{kernel.path}: nvcc -shared")  # fmt: skip
    partial.replace(library)
    return library


def measure_kernel(
    kernel: ReferenceKernel, problem: dict[str, int], iters: int = 20, build_dir: Path | None = None
) -> Measurement:
    """Time one reference kernel on GPU 0 for ``problem`` (GEMM: M, N, K multiples of the tile;
    stream: bytes; softmax: rows). CUTLASS builds are kept in (and reused from) ``build_dir`` when given."""
    with (
        device_context() as (driver, sm, device_name),
        tempfile.TemporaryDirectory(prefix="gpusim-measure-") as tmp,
    ):
        arch = arch_of_device(device_name)
        version = checked(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        driver_version = f"{version // 1000}.{version % 1000 // 10}"
        if kernel.cutlass:
            if sm != kernel.arch:
                raise InputError(f"{kernel.file} targets {kernel.arch}; this GPU is {sm}")
            library = cutlass_library(kernel, sm, build_dir or Path(tmp))
            run = ctypes.CDLL(str(library)).gpusim_run_gemm
            run.argtypes = [
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.POINTER(ctypes.c_float),
            ]
            ms = ctypes.c_float()
            status = run(problem["M"], problem["N"], problem["K"], iters, ctypes.byref(ms))
            if status != 0:
                raise GpusimError(f"{kernel.file}: gpusim_run_gemm returned {status}")
            time_us = ms.value * 1e3
        else:
            launch, buffers = _plain_launch(driver, kernel, sm, problem, Path(tmp))
            time_us = _time_launches(driver, launch, iters)
            for ptr in buffers:
                driver.cuMemFree(ptr)
    dtype = (
        "fp16"
        if kernel.file == "gemm_sync.cu"
        else "fp32"
        if kernel.file in {"stream.cu", "softmax.cu"}
        else "bf16"
    )
    provenance = {"gpu": device_name, "cuda_driver": driver_version, "date": time.strftime("%Y-%m-%d"),
                  "iters": str(iters)}  # fmt: skip
    sets = {k: v for k, v in kernel.sets.items() if k != "dtype"}
    return Measurement(kernel.file, arch, kernel.schedule or "", dtype, problem, time_us, provenance, sets)


def default_problems() -> list[tuple[ReferenceKernel, dict[str, int]]]:
    """The problems ``measure-kernels`` times: each reference kernel once at a size its tile divides."""
    gemm = {"M": 8192, "N": 8192, "K": 8192}
    sizes = {"stream.cu": {"bytes": 1 << 30}, "softmax.cu": {"rows": 65536}}
    return [(k, sizes.get(k.file, gemm)) for k in REFERENCE_KERNELS]
