"""Read small integer constants a reference kernel states about itself from its cubin (ELF) symbols.

The project's kernels define ``extern "C" __device__ const unsigned gpusim_dynamic_smem_bytes`` (and
``gpusim_threads_per_cta``): launch facts that live in host code and a cubin does not otherwise carry."""

from __future__ import annotations

import struct

_ELF_MAGIC = b"\x7fELF"


def is_elf(data: bytes) -> bool:
    """Whether ``data`` starts like an ELF file (a cubin, an executable or a shared object)."""
    return data[:4] == _ELF_MAGIC


def read_u32_symbols(data: bytes, prefix: str = "gpusim_") -> dict[str, int]:
    """Every 4-byte data symbol whose name starts with ``prefix``, with its initial value (64-bit
    little-endian ELF; anything else gives an empty mapping)."""
    if not is_elf(data) or data[4] != 2 or data[5] != 1:
        return {}
    try:
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        shentsize, shnum, _ = struct.unpack_from("<HHH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        found: dict[str, int] = {}
        for sh_type, offset, size, link in ((s[1], s[4], s[5], s[6]) for s in sections):
            if sh_type != 2:  # SHT_SYMTAB
                continue
            strtab_offset = sections[link][4]
            for pos in range(offset, offset + size, 24):
                st_name, _, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, pos)
                end = data.index(b"\0", strtab_offset + st_name)
                name = data[strtab_offset + st_name : end].decode("ascii", "replace")
                if not name.startswith(prefix) or st_size != 4 or not 0 < st_shndx < len(sections):
                    continue
                target = sections[st_shndx]
                if target[1] == 8:  # SHT_NOBITS: zero-initialised
                    found[name] = 0
                else:
                    found[name] = struct.unpack_from("<I", data, target[4] + st_value)[0]
        return found
    except (struct.error, ValueError, IndexError):
        return {}
