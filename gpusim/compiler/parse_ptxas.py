"""Parse the resource lines of ``ptxas -v`` (``nvcc -Xptxas -v``) into :class:`KernelResources`."""

from __future__ import annotations

import re

from gpusim.compiler.kernel_resources import KernelResources
from gpusim.errors import InputError

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>sm_\w+)'")
_PROPS = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<store>\d+) bytes spill stores, (?P<load>\d+) bytes spill loads"
)
_USED = re.compile(r"Used (?P<regs>\d+) registers(?P<rest>.*)$")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")
_CAP = re.compile(r"Overriding (?:global )?maxrregcount \d+ with entry-specific value (\d+)")


def parse_ptxas_verbose(text: str, source: str = "ptxas -v") -> list[KernelResources]:
    """Every entry function in ``ptxas -v`` output, in order. Device functions (no 'Compiling entry
    function' line) are skipped. Raises :class:`InputError` when the text holds no entry function."""
    kernels: list[KernelResources] = []
    current: dict | None = None
    props_for: str | None = None

    def finish() -> None:
        if current is not None and "regs" in current:
            kernels.append(
                KernelResources(
                    mangled_name=current["name"],
                    arch=current["arch"],
                    registers_per_thread=current["regs"],
                    static_smem_bytes=current.get("smem", 0),
                    spill_store_bytes=current.get("store", 0),
                    spill_load_bytes=current.get("load", 0),
                    stack_frame_bytes=current.get("stack", 0),
                    constant_bytes=current.get("cmem"),
                    barriers=current.get("barriers"),
                    sources=(source,),
                )
            )

    for line in text.splitlines():
        if m := _ENTRY.search(line):
            finish()
            current = {"name": m["name"], "arch": m["arch"]}
            props_for = None
        elif m := _PROPS.search(line):
            props_for = m["name"]
        elif (m := _FRAME.search(line)) and current is not None and props_for == current["name"]:
            current.update(stack=int(m["stack"]), store=int(m["store"]), load=int(m["load"]))
        elif (m := _USED.search(line)) and current is not None and "regs" not in current:
            current["regs"] = int(m["regs"])
            rest = m["rest"]
            if b := _BARRIERS.search(rest):
                current["barriers"] = int(b[1])
            if s := _SMEM.search(rest):
                current["smem"] = int(s[1])
            if c := _CMEM.search(rest):
                current["cmem"] = int(c[1])
    finish()
    if not kernels:
        raise InputError(f"{source}: no 'Compiling entry function' with a 'Used N registers' line found")
    return kernels
