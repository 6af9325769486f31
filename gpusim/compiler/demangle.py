"""Demangle C++ kernel names (Itanium ABI) with cu++filt or c++filt when either is installed."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable


def demangle_all(names: Iterable[str]) -> dict[str, str]:
    """Mangled name to demangled name. Names that are not mangled (``extern "C"`` kernels), or every name
    when no demangler is installed, map to themselves."""
    names = list(dict.fromkeys(names))
    result = {n: n for n in names}
    mangled = [n for n in names if n.startswith("_Z")]
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not mangled or tool is None:
        return result
    try:
        done = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return result
    lines = done.stdout.splitlines()
    if done.returncode == 0 and len(lines) == len(mangled):
        result.update(zip(mangled, lines, strict=True))
    return result


def short_name(demangled: str, limit: int = 100) -> str:
    """A one-line name for tables: template arguments collapsed past ``limit`` characters."""
    if len(demangled) <= limit:
        return demangled
    head = demangled.split("<", 1)[0]
    return f"{head}<…> ({len(demangled)} chars)"
