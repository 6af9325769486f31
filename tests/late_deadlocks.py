"""Mutations of resolved schedules that deadlock, if at all, only in the last work unit of the kernel.

Each mutant changes the synchronisation statements of a shipped schedule (resolved for one arch and
problem) under a guard that holds only in the grid's last work unit (every grid coordinate at its
largest value), so any deadlock it causes comes at the very end of the kernel:

- ``drop``: a sync statement is skipped in the last unit;
- ``dup``: a sync statement is executed twice in the last unit;
- ``cycle``: in the last unit, role A waits on a new event barrier before one of its sync statements,
  and role B arrives at it after the last execution of one of its own (the last iteration of every
  loop around it): a deadlock exactly when B gets there only after A has gone past its wait (a
  cross-role wait cycle), which depends on the order of the statements, not on their counts.

Whether a mutant really deadlocks is what the simulation says (the static checks switched off).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from gpusim.schedule.expr import Expr
from gpusim.schedule.ir import Barrier, Schedule
from gpusim.schedule.program import Arrive, Stmt, Wait

SYNC_OPS = ("acquire", "commit", "wait", "release", "arrive", "sync", "syncthreads")
LATE = "late_signal"
"""The event barrier the cycle mutants add."""


def last_unit_guard(sched: Schedule) -> str:
    """An expression true only in the grid's last work unit."""
    return " and ".join(f"{d} == {extent - 1}" for d, extent in sched.launch.grid)


def _and(guard: Expr | None, text: str) -> Expr:
    return Expr(text if guard is None else f"({guard.text}) and ({text})")


def _rewrite(stmts: tuple[Stmt, ...], target: Stmt, make: Callable[[Stmt], list[Stmt]]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in stmts:
        if stmt is target:
            out.extend(make(stmt))
        elif stmt.body:
            out.append(dataclasses.replace(stmt, body=_rewrite(stmt.body, target, make)))
        else:
            out.append(stmt)
    return tuple(out)


def _with_role(sched: Schedule, role: str, program: tuple[Stmt, ...], **extra: Any) -> Schedule:
    roles = {**sched.roles, role: dataclasses.replace(sched.roles[role], program=program)}
    return dataclasses.replace(sched, roles=roles, **extra)


def sync_sites(sched: Schedule) -> list[tuple[str, Stmt, str]]:
    """(role, statement, a guard true at its last execution in a unit) of every sync statement that runs
    per work unit (inside the tiles loop of a persistent kernel; anywhere in a grid launch, whose CTAs run
    one unit each)."""
    out = []

    def visit(role: str, stmts: tuple[Stmt, ...], in_tiles: bool, last: tuple[str, ...]) -> None:
        for stmt in stmts:
            if stmt.op in SYNC_OPS and in_tiles:
                out.append((role, stmt, " and ".join(last) or "True"))
            inner = last
            if stmt.op == "for":
                inner = (*last, f"{stmt.args.var} == ({stmt.args.stop.text}) - 1")
            visit(role, stmt.body, in_tiles or stmt.op == "tiles", inner)

    for name, role in sched.roles.items():
        visit(name, role.program, not sched.launch.persistent, ())
    return out


def mutants(sched: Schedule, max_cycles: int = 24) -> Iterator[tuple[str, Schedule]]:
    """(label, mutant) for every drop and dup of a per-unit sync statement and up to ``max_cycles``
    cycle mutants (a deterministic spread over the pairs of sites in different roles)."""
    last = last_unit_guard(sched)
    sites = sync_sites(sched)
    for role, stmt, _ in sites:
        yield (
            f"drop {stmt.where}",
            _with_role(sched, role, _rewrite(sched.roles[role].program, stmt,
                                             lambda s: [dataclasses.replace(s, guard=_and(s.guard, f"not ({last})"))])),
        )  # fmt: skip
        yield (
            f"dup {stmt.where}",
            _with_role(sched, role, _rewrite(sched.roles[role].program, stmt,
                                             lambda s: [s, dataclasses.replace(s, guard=_and(s.guard, last))])),
        )  # fmt: skip
    pairs = [(a, b) for a in sites for b in sites if a[0] != b[0]]
    stride = max(1, len(pairs) // max_cycles)
    barriers = {**sched.barriers, LATE: Barrier(LATE, "event", 0, 1, None)}
    for (role_a, wait_before, _), (role_b, arrive_after, final) in pairs[::stride][:max_cycles]:
        wait = Stmt("wait", Wait(bar=LATE), f"{wait_before.where}+late_wait", guard=Expr(last))
        arrive = Stmt("arrive", Arrive(bar=LATE), f"{arrive_after.where}+late_arrive",
                      guard=Expr(f"({last}) and ({final})"))  # fmt: skip
        program_a = _rewrite(sched.roles[role_a].program, wait_before, lambda s, w=wait: [w, s])
        mutant = _with_role(sched, role_a, program_a, barriers=barriers)
        program_b = _rewrite(mutant.roles[role_b].program, arrive_after, lambda s, a=arrive: [s, a])
        yield (
            f"cycle wait before {wait_before.where}, arrive after {arrive_after.where}",
            _with_role(mutant, role_b, program_b),
        )


def pingpong_event_cycle(text: str, barrier: str, wait_if: str, arrive_if: str) -> str:
    """The text of schedules/gemm_ws_pingpong.yaml with an event cycle written into it: the math
    warpgroups wait for event ``barrier`` before each k-tile where ``wait_if`` holds, and the producer
    (written out in place of its template) arrives at it after each acquire where ``arrive_if`` holds."""
    producer = (
        "  producer:\n    warps: 1\n    regs: PRODUCER_REGS\n    program:\n    - tiles: {}\n      do:\n"
        "      - for: {k: [k_begin, k_end]}\n        do:\n        - acquire: ab\n"
        f"        - arrive: {barrier}\n          if: {arrive_if}\n"
        "        - tma_load: {buf: ab, bytes: rows * BK * elem_bytes, operand: A, multicast: CLUSTER_N}\n"
        "        - tma_load: {buf: ab, bytes: cols * BK * elem_bytes, operand: B}\n"
    )
    start, end = text.index("  producer:\n"), text.index("  math:\n")
    text = text[:start] + producer + text[end:]
    wait = "          - wait: ab\n"
    assert text.count(wait) == 1
    text = text.replace(wait, f"          - wait: {{bar: {barrier}}}\n            if: {wait_if}\n" + wait)
    return text.replace("barriers:\n", f"barriers:\n  {barrier}: {{kind: event, count: 1}}\n", 1)
