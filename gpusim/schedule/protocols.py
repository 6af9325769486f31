"""Static checks of synchronisation: protocol bracketing, stage tags, and barrier use.

Before simulating, every buffer with a protocol must have a producer that acquires it (and fills it:
TMA or cp.async loads, or a commit) and a consumer that waits on it and releases it; every wait must
be able to name the stage the producer tagged (the producer's loop variables, or ``at:``); and every
barrier used must be declared with the right kind. What these rules cannot see (a loop that produces
fewer stages than the consumer waits for) gpusim/schedule/balance.py counts per work unit, and the
simulator reports the rest as a deadlock.
"""

from __future__ import annotations

from gpusim.errors import InputError, UnknownNameError
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import Stmt, walk

FILLING_OPS = {"tma": ("tma_load",), "cp_async": ("cp_async",)}


def _sites(sched: Schedule, role_name: str, op: str, buf: str) -> list[tuple[Stmt, tuple[str, ...]]]:
    return [
        (stmt, loops)
        for stmt, loops in walk(sched.roles[role_name].program)
        if stmt.op == op and getattr(stmt.args, "buf", None) == buf
    ]


def check_protocols(sched: Schedule) -> None:
    """Refuse schedules whose buffers or barriers cannot work, naming the buffer, role and rule."""
    src = str(sched.source) if sched.source else sched.name
    for name, buf in sched.buffers.items():
        if not buf.has_protocol or buf.consumer == "manual":
            continue
        protocol = f"{buf.producer}->{buf.consumer}"
        producers = [r for r in sched.roles if _sites(sched, r, "acquire", name)]
        consumers = [r for r in sched.roles if _sites(sched, r, "wait", name)]
        if not producers:
            raise InputError(
                f"{src}: buffers.{name} ({protocol}): no role acquires it, so no stage is ever produced"
            )
        if not consumers:
            raise InputError(
                f"{src}: buffers.{name} ({protocol}): no role waits on it, so no stage is ever freed"
            )
        for role in sched.roles:
            acquires = _sites(sched, role, "acquire", name)
            commits = _sites(sched, role, "commit", name)
            waits = _sites(sched, role, "wait", name)
            releases = _sites(sched, role, "release", name)
            where = f"{src}: roles.{role}"
            if commits and not acquires:
                raise InputError(f"{where}: commits '{name}' without acquiring it")
            if acquires and buf.producer in FILLING_OPS:
                fills = [s for op in FILLING_OPS[buf.producer] for s in _sites(sched, role, op, name)]
                if not fills:
                    raise InputError(f"{where}: acquires '{name}' ({protocol}) but issues no "
                                     f"{FILLING_OPS[buf.producer][0]} into it, so its stages never fill")  # fmt: skip
            elif acquires and not commits:
                raise InputError(f"{where}: acquires '{name}' ({protocol}) but never commits it, so its stages "
                                 "never fill")  # fmt: skip
            if waits and not releases:
                raise InputError(
                    f"{where}: waits on '{name}' but never releases it, so its stages are never freed"
                )
            if releases and not waits:
                raise InputError(f"{where}: releases '{name}' without waiting on it")
        _check_tags(sched, src, name, producers, consumers)
    _check_barrier_use(sched, src)


def _check_tags(sched: Schedule, src: str, name: str, producers: list[str], consumers: list[str]) -> None:
    """Each wait must know every loop variable the producer tags its stages with."""
    tag_sets = {
        (role, frozenset(loops)) for role in producers for _, loops in _sites(sched, role, "acquire", name)
    }
    for role in consumers:
        for stmt, loops in _sites(sched, role, "wait", name):
            known = set(loops) | set(getattr(stmt.args, "at", {}))
            for producer, keys in tag_sets:
                missing = sorted(keys - known)
                if missing:
                    raise InputError(
                        f"{stmt.where}: cannot name the stage of '{name}' it waits for: role '{producer}' tags "
                        f"stages with ({', '.join(sorted(keys))}) but this wait knows only ({', '.join(sorted(known))});"
                        f" use the same loop variable name or add at: {{{missing[0]}: ...}}"
                    )


def _check_barrier_use(sched: Schedule, src: str) -> None:
    arrivals = set()
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.op == "turn":
                bar = sched.barriers.get(stmt.args.name)
                if bar is None or bar.kind != "turnstile":
                    turnstiles = [n for n, b in sched.barriers.items() if b.kind == "turnstile"]
                    raise UnknownNameError("turnstile", stmt.args.name, turnstiles, where=stmt.where)
            elif stmt.op in ("arrive", "sync") or (stmt.op == "wait" and stmt.args.bar is not None):
                name = stmt.args.bar
                bar = sched.barriers.get(name)
                if bar is None:
                    raise UnknownNameError("barrier", name, sched.barriers, where=stmt.where)
                allowed = {"arrive": ("named", "event"), "sync": ("named",), "wait": ("event",)}[stmt.op]
                if bar.kind not in allowed:
                    raise InputError(f"{stmt.where}: '{name}' is a {bar.kind} barrier; {stmt.op} needs "
                                     f"{' or '.join(allowed)}")  # fmt: skip
                if stmt.op == "arrive":
                    arrivals.add(name)
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.op == "wait" and stmt.args.bar is not None and stmt.args.bar not in arrivals:
                raise InputError(f"{stmt.where}: waits on event '{stmt.args.bar}' but no role arrives at it")
