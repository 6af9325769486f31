"""Parse ``cuobjdump --dump-resource-usage`` and the ``.nv.info`` attributes of ``cuobjdump -elf``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpusim.compiler.kernel_resources import KernelResources
from gpusim.errors import InputError

RESERVED_SMEM_BYTES = 1024
"""Shared memory the CUDA runtime reserves per block on sm_80 and later (cudaDevAttrReservedSharedMemoryPerBlock,
CUDA C++ Programming Guide, compute capabilities table). sm_90+ cubins that carry a ``.nv.shared.reserved``
section count it inside each kernel's ``.nv.shared`` size, which cuobjdump reports as SHARED; ptxas -v does not."""

_ARCH = re.compile(r"^\s*arch = (sm_\w+)", re.M)
_FUNCTION = re.compile(r"^\s*Function (?P<name>\S+?):\s*$")
_USAGE = re.compile(r"(?P<key>[A-Z]+(?:\[\d+\])?):(?P<value>\d+)")


def parse_resource_usage(
    text: str, arch: str = "", source: str = "cuobjdump --dump-resource-usage"
) -> list[KernelResources]:
    """Every function in ``cuobjdump --dump-resource-usage`` output. ``arch`` names the SM target when the
    text has no ``arch = sm_XX`` header (a plain cubin). SHARED is reported as the kernel's static shared
    memory; :func:`without_reserved_smem` removes the runtime's reserved bytes where the cubin counts them."""
    kernels: list[KernelResources] = []
    current_arch = arch
    name: str | None = None
    for line in text.splitlines():
        if m := _ARCH.match(line):
            current_arch = m[1]
        elif m := _FUNCTION.match(line):
            name = m["name"]
        elif name is not None and "REG:" in line:
            usage = {m["key"]: int(m["value"]) for m in _USAGE.finditer(line)}
            kernels.append(
                KernelResources(
                    mangled_name=name,
                    arch=current_arch,
                    registers_per_thread=usage.get("REG", 0),
                    static_smem_bytes=usage.get("SHARED", 0),
                    stack_frame_bytes=usage.get("STACK", 0),
                    local_bytes=usage.get("LOCAL", 0),
                    constant_bytes=usage.get("CONSTANT[0]"),
                    sources=(source,),
                )
            )
            name = None
    if not kernels:
        raise InputError(f"{source}: no 'Function NAME:' with a 'REG:' line found")
    return kernels


@dataclass
class ElfInfo:
    """Facts of one cubin that ``cuobjdump -elf`` shows: its SM target and per-kernel attributes."""

    arch: str = ""
    reserved_smem_in_shared: bool = False
    """Whether the kernels' ``.nv.shared`` sections include the runtime's reserved shared memory."""
    attributes: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    """Per kernel, EIATTR name (without the EIATTR_ prefix) to its integer values."""

    def attribute(self, kernel: str, name: str) -> tuple[int, ...] | None:
        """The values of one attribute of one kernel, if present."""
        return self.attributes.get(kernel, {}).get(name)


_ELF_HEADER = re.compile(r"^\d+-bit ELF: .*\bsm=(?P<sm>\w+)")
_INFO_SECTION = re.compile(r"^\.nv\.info\.(?P<name>\S+)\s*$")
_ATTRIBUTE = re.compile(r"^\s*Attribute:\s*EIATTR_(?P<name>\w+)")
_VALUE = re.compile(r"^\s*Value:\s*(?P<value>.*)$")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def parse_elf_info(text: str) -> ElfInfo:
    """The SM target, reserved-shared-memory marker and per-kernel ``.nv.info`` attributes of one cubin's
    ``cuobjdump -elf`` text (the first ELF when the text holds several)."""
    info = ElfInfo()
    kernel: str | None = None
    attribute: str | None = None
    for line in text.splitlines():
        if (m := _ELF_HEADER.match(line)) and not info.arch:
            info.arch = f"sm_{m['sm']}"
        elif ".nv.shared.reserved." in line:
            info.reserved_smem_in_shared = True
        elif m := _INFO_SECTION.match(line):
            kernel = m["name"]
            info.attributes.setdefault(kernel, {})
            attribute = None
        elif line.startswith("."):
            kernel = None
        elif kernel is not None and (m := _ATTRIBUTE.match(line)):
            attribute = m["name"]
        elif kernel is not None and attribute is not None and (m := _VALUE.match(line)):
            values = tuple(int(h, 16) for h in _HEX.findall(m["value"]))
            info.attributes[kernel].setdefault(attribute, values)
            attribute = None
    return info


def apply_elf_info(kernel: KernelResources, info: ElfInfo) -> KernelResources:
    """``kernel`` with the barrier count, launch bounds and register cap of its ``.nv.info`` section, and
    the runtime's reserved shared memory taken out of SHARED where the cubin counts it."""
    from dataclasses import replace

    name = kernel.mangled_name
    barriers = info.attribute(name, "NUM_BARRIERS")
    max_threads = info.attribute(name, "MAX_THREADS") or info.attribute(name, "REQNTID")
    min_ctas = info.attribute(name, "MIN_CTA_PER_SM")
    max_regs = info.attribute(name, "MAXREG_COUNT")
    threads = None
    if max_threads:
        threads = 1
        for extent in max_threads[:3]:
            threads *= max(1, extent)
    static_smem = kernel.static_smem_bytes
    if info.reserved_smem_in_shared and "cuobjdump --dump-resource-usage" in kernel.sources:
        static_smem = max(0, static_smem - RESERVED_SMEM_BYTES)
    return replace(
        kernel,
        arch=kernel.arch or info.arch,
        static_smem_bytes=static_smem,
        barriers=barriers[0] if barriers else (kernel.barriers if kernel.barriers is not None else 0),
        max_threads_per_cta=threads,
        min_ctas_per_sm=min_ctas[0] if min_ctas and min_ctas[0] else None,
        max_registers=max_regs[0] if max_regs else None,
        sources=tuple(dict.fromkeys((*kernel.sources, "cuobjdump -elf"))),
    )


def require_text_kind(text: str, path: str) -> str:
    """Which saved tool output ``text`` is: ``ptxas``, ``resource-usage``, ``sass`` or ``elf``; else a
    one-line error naming the file and what was expected."""
    if "Compiling entry function" in text:
        return "ptxas"
    if "Resource usage:" in text:
        return "resource-usage"
    if re.search(r"^\s*Function : \S+", text, re.M) and "/*0000*/" in text:
        return "sass"
    if _ELF_HEADER.search(text) or re.search(r"^\d+-bit ELF: ", text, re.M):
        return "elf"
    raise InputError(
        f"{path}: not a CUDA build output gpusim reads (expected ptxas -v text, cuobjdump "
        "--dump-resource-usage, cuobjdump -sass or cuobjdump -elf output)"
    )
