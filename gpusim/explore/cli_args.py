"""Command-line arguments shared by the exploration commands: ``--set`` values and ``--arch`` lists."""

from __future__ import annotations

from typing import Any

from gpusim.errors import InputError, quote


def parse_sets(sets: list[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` options as a mapping."""
    from gpusim.schedule.load import parse_override

    return dict(parse_override(s) for s in sets or [])


def archs_option(text: str, default: str) -> list[str]:
    """``--arch a,b,...`` as arch ids (``default`` when empty); paths are kept as given."""
    from gpusim.arch import resolve_arch_id

    names = [a.strip() for a in (text or default).split(",")]
    if not any(names):
        raise InputError("--arch: no arch given")
    if not all(names):
        raise InputError(f"--arch '{quote(text)}': an empty arch id between commas")
    return [resolve_arch_id(n) if "/" not in n and not n.endswith((".yaml", ".yml")) else n for n in names]
