"""What a build says about one kernel: registers, shared memory, spills, stack, barriers, threads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class KernelResources:
    """Resources of one compiled kernel (one entry function for one SM architecture).

    Fields a source does not state are ``None`` (ptxas -v gives spills but no launch bounds;
    cuobjdump gives the ELF facts but no spill bytes)."""

    mangled_name: str
    arch: str
    """The SM target, e.g. ``sm_90a``."""
    registers_per_thread: int
    name: str = ""
    """Demangled name (``mangled_name`` for extern "C" kernels)."""
    static_smem_bytes: int = 0
    """Shared memory declared in the kernel (``__shared__``), without the runtime's reserved bytes."""
    dynamic_smem_bytes: int | None = None
    """Dynamic shared memory the host asks for at launch, when the build states it."""
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    local_store_bytes: int | None = None
    """Bytes the SASS stores to local memory (STL widths, each instruction once): spills or local arrays."""
    local_load_bytes: int | None = None
    stack_frame_bytes: int = 0
    local_bytes: int = 0
    constant_bytes: int | None = None
    barriers: int | None = None
    """Named barriers (``bar.sync`` ids) the kernel uses."""
    max_threads_per_cta: int | None = None
    """From ``__launch_bounds__`` (``.maxntid``) or ``.reqntid``."""
    min_ctas_per_sm: int | None = None
    max_registers: int | None = None
    """The register cap ptxas worked under (launch bounds or -maxrregcount)."""
    warpgroup_registers: tuple[int, ...] = ()
    """Per-warpgroup register counts set with setmaxnreg (USETMAXREG), in the order the SASS states them."""
    sources: tuple[str, ...] = field(default_factory=tuple)
    """Where the numbers come from (``ptxas -v``, ``cuobjdump --dump-resource-usage``, ``cuobjdump -elf``)."""

    @property
    def smem_bytes_per_cta(self) -> int:
        """Static plus dynamic shared memory of one CTA (without the runtime's reserved bytes)."""
        return self.static_smem_bytes + (self.dynamic_smem_bytes or 0)

    @property
    def spills(self) -> bool:
        """Whether ptxas spilled registers to local memory."""
        return bool(self.spill_store_bytes or self.spill_load_bytes)

    def spill_warning(self) -> str | None:
        """One line when the kernel spills (ptxas -v) or may spill (local stores in its SASS), else None."""
        name = self.name or self.mangled_name
        if self.spills:
            return (
                f"{name} ({self.arch}) spills: {self.spill_store_bytes} bytes spill stores, "
                f"{self.spill_load_bytes} bytes spill loads at {self.registers_per_thread} registers"
            )
        if self.spill_store_bytes is None and self.local_store_bytes:
            return (
                f"{name} ({self.arch}) may spill: its SASS stores {self.local_store_bytes} bytes to local "
                "memory (spills or local arrays; the ptxas -v of a source build tells which)"
            )
        return None

    def merged(self, other: KernelResources) -> KernelResources:
        """These resources with the fields ``other`` knows and these do not (same kernel, same arch)."""
        updates: dict[str, Any] = {}
        for key, value in asdict(other).items():
            mine = getattr(self, key)
            if key == "sources":
                updates[key] = tuple(dict.fromkeys((*self.sources, *other.sources)))
            elif (mine is None or mine in ((), "")) and value not in (None, (), ""):
                updates[key] = value
        return replace(self, **updates)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with the derived totals."""
        data = asdict(self)
        data["warpgroup_registers"] = list(self.warpgroup_registers)
        data["sources"] = list(self.sources)
        data["smem_bytes_per_cta"] = self.smem_bytes_per_cta
        data["spills"] = self.spills
        return data
