"""Occupancy of a compiled kernel on an arch: CTAs and warps per SM, and which limit binds.

The CUDA occupancy rules (CUDA C++ Best Practices Guide, "Occupancy"; the CUDA occupancy calculator):
registers are allocated per warp in units of ``register_alloc_granularity_per_warp`` out of each SM
sub-partition's quarter of the register file; shared memory per CTA is the kernel's static plus dynamic
bytes plus the runtime's reserved bytes; warps, threads and CTAs per SM have their own caps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.compiler.kernel_resources import KernelResources
from gpusim.errors import ScheduleRefused


@dataclass(frozen=True)
class Occupancy:
    """Resident CTAs and warps per SM, each limit's own CTA count, and the binding limit."""

    arch: str
    threads_per_cta: int
    ctas_per_sm: int
    warps_per_sm: int
    limits: dict[str, int]
    """CTAs per SM each resource alone allows (``registers``, ``shared_memory``, ``warps``, ``ctas``)."""
    binding: str
    """The limits that allow no more than ``ctas_per_sm`` (``registers and shared_memory`` on a tie)."""
    registers_per_cta: int
    smem_bytes_per_cta: int

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)

    def text(self) -> str:
        """One line: '1 CTA/SM (12 warps), bound by shared memory'."""
        plural = "" if self.ctas_per_sm == 1 else "s"
        return (
            f"{self.ctas_per_sm} CTA{plural}/SM ({self.warps_per_sm} warps) on {self.arch}, "
            f"bound by {self.binding.replace('_', ' ')}"
        )


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def occupancy(kernel: KernelResources, arch: Arch, threads_per_cta: int | None = None) -> Occupancy:
    """CTAs per SM for ``kernel`` on ``arch``. ``threads_per_cta`` defaults to the kernel's launch bounds;
    a kernel that cannot run at all (too many threads, registers or shared memory) is refused with the
    numbers."""
    sm = arch.sm
    threads = threads_per_cta or kernel.max_threads_per_cta
    where = f"{kernel.name or kernel.mangled_name} on {arch.id}"
    if not threads:
        raise ScheduleRefused(f"{where}: threads per CTA unknown (no __launch_bounds__); pass --threads N")
    if threads > sm.max_threads_per_block:
        raise ScheduleRefused(f"{where}: {threads} threads per CTA > {sm.max_threads_per_block}")
    warps = -(-threads // 32)
    regs_per_warp = _round_up(
        max(kernel.registers_per_thread, 1) * 32, sm.register_alloc_granularity_per_warp
    )
    if kernel.registers_per_thread > sm.max_registers_per_thread:
        raise ScheduleRefused(
            f"{where}: {kernel.registers_per_thread} registers per thread > {sm.max_registers_per_thread}"
        )
    regs_per_partition = sm.registers_per_sm // sm.warp_schedulers_per_sm
    warps_by_regs = (regs_per_partition // regs_per_warp) * sm.warp_schedulers_per_sm
    smem_cta = kernel.smem_bytes_per_cta
    if smem_cta > sm.smem_bytes_per_block:
        raise ScheduleRefused(
            f"{where}: needs {smem_cta / 1024:.1f} KiB shared memory per CTA, {arch.id} allows "
            f"{sm.smem_bytes_per_block / 1024:.0f} KiB per block"
        )
    smem_alloc = smem_cta + sm.smem_reserved_bytes_per_block
    limits = {
        "registers": warps_by_regs // warps,
        "shared_memory": sm.smem_bytes_per_sm // smem_alloc if smem_alloc else sm.max_ctas_per_sm,
        "warps": sm.max_warps_per_sm // warps,
        "ctas": sm.max_ctas_per_sm,
    }
    ctas = min(limits.values())
    binding = " and ".join(k for k, v in limits.items() if v == ctas)
    if ctas < 1:
        raise ScheduleRefused(
            f"{where}: {kernel.registers_per_thread} registers x {threads} threads do not fit one SM's "
            f"register file ({sm.registers_per_sm:,})"
        )
    return Occupancy(
        arch=arch.id,
        threads_per_cta=threads,
        ctas_per_sm=ctas,
        warps_per_sm=ctas * warps,
        limits=limits,
        binding=binding,
        registers_per_cta=regs_per_warp * warps,
        smem_bytes_per_cta=smem_cta,
    )
