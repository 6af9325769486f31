"""Demangle C++ kernel names (Itanium ABI) with cu++filt or c++filt when either is installed."""

from __future__ import annotations

import re
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
        done = subprocess.run(
            [tool], input="\n".join(mangled) + "\n", capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return result
    lines = done.stdout.splitlines()
    if done.returncode == 0 and len(lines) == len(mangled):
        result.update(zip(mangled, lines, strict=True))
    return result


def _identifiers(mangled: str) -> list[str]:
    """The source identifiers of a mangled name, in order (length-prefixed names), without repeats."""
    names: list[str] = []
    pos = 0
    while pos < len(mangled):
        digits = re.match(r"\d+", mangled[pos:])
        if digits and not mangled[pos - 1 : pos].isdigit():
            length = int(digits[0])
            start = pos + len(digits[0])
            word = mangled[start : start + length]
            if (
                len(word) == length
                and re.fullmatch(r"[A-Za-z]\w*", word)
                and not re.search(r"^E|_I|^\w$", word)
            ):
                names.append(word)
                pos = start + length
                continue
        pos += 1
    return list(dict.fromkeys(names))


def short_name(name: str, limit: int = 100) -> str:
    """A one-line name for tables: template arguments collapsed past ``limit`` characters; a mangled name
    that no demangler read shows its identifiers (``device_kernel[GemmUniversal MainloopSm90...]``)."""
    if len(name) <= limit:
        return name
    if name.startswith("_Z"):
        words = _identifiers(name)
        text = f"{words[0]}::{words[1]}[{' '.join(words[2:])}]" if len(words) > 2 else " ".join(words)
        return text if len(text) <= 3 * limit else text[: 3 * limit] + "…"
    head = name.split("<", 1)[0]
    return f"{head}<…> ({len(name)} chars)"
