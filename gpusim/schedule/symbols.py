"""Symbols a schedule's expressions may read besides its problem and params: what the loader, the tile
scheduler and the interpreter inject. Programs are checked against them before simulating, so a
misspelt or undeclared name is refused with its statement's path instead of failing mid-run."""

from __future__ import annotations

from gpusim.errors import InputError, UnknownNameError
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import statement_exprs, walk

LOADER_SYMBOLS: dict[str, str] = {
    "elem_bytes": "bytes per element of the problem dtype",
    "num_sms": "SMs of the arch",
    "sm_version": "compute capability x 10 (90 for sm_90)",
    "smem_per_sm": "shared memory per SM, bytes",
    "smem_per_block": "shared memory one CTA may use, bytes",
    "cluster_size": "CTAs per cluster",
}
"""Set when the schedule is resolved."""

UNIT_SYMBOLS: dict[str, str] = {
    "cta_rank": "rank of the CTA in its cluster",
    "split": "split index of the unit (0 without split-K)",
    "is_first_split": "1 for the first split of a unit",
    "is_last_split": "1 for the last split of a unit (always 1 without split-K)",
    "k_begin": "first k-tile of the unit (with a param KT)",
    "k_end": "one past the last k-tile of the unit (with a param KT)",
    "k_iters": "k-tiles of the unit (with a param KT)",
    "sk_peers": "stream_k: units before this one whose partials of the tile it finishes it reads (0 otherwise)",
    "part": "splitkv_balanced: the part (CTA) index",
    "batch_idx": "splitkv_balanced: the request of the segment",
    "block_begin": "splitkv_balanced: first KV block of the segment",
    "block_end": "splitkv_balanced: one past the last KV block of the segment",
    "blocks": "splitkv_balanced: KV blocks of the segment",
    "n_splits": "splitkv_balanced: segments the request is split into",
    "is_split": "splitkv_balanced: 1 when the request is split",
}
"""Set by the tile scheduler on every work unit (besides the grid dimensions and launch fields)."""

ROLE_SYMBOLS: dict[str, str] = {
    "r": "replica index of the role, 0..replicas-1",
    "tile": "ordinal of the unit in this CTA's list (inside tiles)",
}
"""Set by the interpreter (besides loop variables)."""


def check_symbols(sched: Schedule) -> None:
    """Refuse a program expression that reads a name nothing defines, naming the statement."""
    known = {*sched.env, *LOADER_SYMBOLS, *UNIT_SYMBOLS, *ROLE_SYMBOLS}
    known |= {dim for dim, _ in sched.launch.grid} | set(sched.launch.fields)
    for role in sched.roles.values():
        loops = set()
        for stmt, _ in walk(role.program):
            if stmt.op == "for":
                if stmt.args.var in known:
                    raise InputError(f"{stmt.where}: the loop variable '{stmt.args.var}' would hide the symbol of "
                                     "that name (a problem value, param, grid dimension or built-in) inside the "
                                     "loop; name it differently")  # fmt: skip
                loops.add(stmt.args.var)
        names = known | loops
        for stmt, _ in walk(role.program):
            for expr in statement_exprs(stmt):
                missing = sorted(expr.names - names)
                if missing:
                    raise UnknownNameError("symbol", missing[0], names, where=f"{stmt.where}: '{expr.text}'")
