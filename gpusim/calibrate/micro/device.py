"""The local GPU through cuda-python's driver API: load a cubin, allocate, launch, time, read back,
and the provenance of a run (GPU, driver, clocks). Needs an NVIDIA GPU, its driver and cuda-python."""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.compiler.elf_symbols import read_u32_symbols
from gpusim.compiler.launch import arch_of_device, checked, device_context
from gpusim.errors import GpusimError, InputError


@dataclass
class Device:
    """GPU 0 with its primary context current."""

    driver: Any
    sm: str
    """SM target of the device (``sm_90a``)."""
    name: str
    sms: int = 0
    smem_per_sm: int = 0
    smem_per_block_optin: int = 0
    clock_mhz: float = 0.0
    """The device's reported maximum SM clock (cuDeviceGetAttribute CLOCK_RATE)."""
    cuda_driver: str = ""
    _buffers: dict[int, Any] = field(default_factory=dict)
    """Live allocations: address -> the driver's CUdeviceptr."""

    def attribute(self, name: str) -> int:
        """One cuDeviceGetAttribute value by its CU_DEVICE_ATTRIBUTE_ suffix."""
        attr = getattr(self.driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        device = checked(self.driver.cuDeviceGet(0), "cuDeviceGet")
        return int(checked(self.driver.cuDeviceGetAttribute(attr, device), f"cuDeviceGetAttribute {name}"))

    @property
    def arch(self) -> str:
        """The gpusim arch id of this GPU, or its name when none matches."""
        try:
            return arch_of_device(self.name)
        except InputError:
            return self.name.replace(",", " ")

    def alloc(self, nbytes: int, fill: np.ndarray | None = None) -> int:
        """Device memory of ``nbytes`` (zeroed, or ``fill``'s bytes, repeated); freed by :meth:`free_all`."""
        ptr = checked(self.driver.cuMemAlloc(nbytes), "cuMemAlloc")
        self._buffers[int(ptr)] = ptr
        if fill is None:
            checked(self.driver.cuMemsetD8(ptr, 0, nbytes), "cuMemsetD8")
        else:
            data = np.resize(np.ascontiguousarray(fill).view(np.uint8), nbytes)
            checked(self.driver.cuMemcpyHtoD(ptr, data, nbytes), "cuMemcpyHtoD")
        return int(ptr)

    def read(self, ptr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` at ``ptr`` as uint64 words."""
        host = np.zeros(nbytes // 8, dtype=np.uint64)
        checked(self.driver.cuMemcpyDtoH(host, self._buffers[ptr], nbytes), "cuMemcpyDtoH")
        return host

    def free_all(self) -> None:
        """Free every buffer :meth:`alloc` made."""
        for ptr in self._buffers.values():
            self.driver.cuMemFree(ptr)
        self._buffers.clear()

    def load(self, cubin: bytes) -> tuple[Any, dict[str, int]]:
        """The module of a cubin and its ``gpusim_*`` u32 constants."""
        return checked(self.driver.cuModuleLoadData(cubin), "cuModuleLoadData"), read_u32_symbols(cubin)

    def launch_timed(
        self, module: Any, kernel: str, grid: int, threads: int, smem: int, args: list[Any]
    ) -> float:
        """Launch ``kernel`` once and return its time in ms (CUDA events around the launch)."""
        function = checked(
            self.driver.cuModuleGetFunction(module, kernel.encode()), f"cuModuleGetFunction {kernel}"
        )
        attr = self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        checked(self.driver.cuFuncSetAttribute(function, attr, smem), "cuFuncSetAttribute")
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        start = checked(self.driver.cuEventCreate(0), "cuEventCreate")
        stop = checked(self.driver.cuEventCreate(0), "cuEventCreate")
        checked(self.driver.cuEventRecord(start, 0), "cuEventRecord")
        checked(self.driver.cuLaunchKernel(function, grid, 1, 1, threads, 1, 1, smem, 0, ctypes.addressof(params), 0),
               f"cuLaunchKernel {kernel}")  # fmt: skip
        checked(self.driver.cuEventRecord(stop, 0), "cuEventRecord")
        checked(self.driver.cuEventSynchronize(stop), f"{kernel}: cuEventSynchronize")
        ms = float(checked(self.driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime"))
        self.driver.cuEventDestroy(start)
        self.driver.cuEventDestroy(stop)
        return ms

    def one_cta_per_sm_smem(self, needed: int) -> int:
        """Dynamic shared memory that leaves room for one CTA per SM only (more than half the SM's)."""
        want = max(needed + 1024, self.smem_per_sm // 2 + 1024)
        if want > self.smem_per_block_optin:
            raise GpusimError(f"{self.name}: {want} bytes of shared memory per CTA exceed the {self.smem_per_block_optin} "
                              "a block may opt in to")  # fmt: skip
        return want


@contextlib.contextmanager
def open_device() -> Iterator[Device]:
    """GPU 0 (a one-line InputError without cuda-python, a driver or a GPU)."""
    with device_context() as (driver, sm, name):
        dev = Device(driver, sm, name)
        dev.sms = dev.attribute("MULTIPROCESSOR_COUNT")
        dev.smem_per_sm = dev.attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
        dev.smem_per_block_optin = dev.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        dev.clock_mhz = dev.attribute("CLOCK_RATE") / 1000.0
        version = int(checked(driver.cuDriverGetVersion(), "cuDriverGetVersion"))
        dev.cuda_driver = f"{version // 1000}.{version % 1000 // 10}"
        try:
            yield dev
        finally:
            dev.free_all()


def nvidia_smi(fields: str) -> list[str]:
    """One ``nvidia-smi --query-gpu`` row for GPU 0 (empty without nvidia-smi)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    lines = done.stdout.strip().splitlines()
    return [x.strip() for x in lines[0].split(",")] if done.returncode == 0 and lines else []


class SmiSampler:
    """Samples GPU 0's SM clock (MHz) and board power (W) every 100 ms while a kernel runs
    (``nvidia-smi -lms``); nothing without nvidia-smi."""

    def __init__(self) -> None:
        self.clock_mhz: list[float] = []
        self.power_w: list[float] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> SmiSampler:
        if shutil.which("nvidia-smi") is None:
            return self
        try:
            self._proc = subprocess.Popen(["nvidia-smi", "-i", "0", "--query-gpu=clocks.sm,power.draw",
                                           "--format=csv,noheader,nounits", "-lms", "100"],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        except OSError:
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            with contextlib.suppress(ValueError, IndexError):
                clock, power = float(parts[0]), float(parts[1])
                self.clock_mhz.append(clock)
                self.power_w.append(power)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)
