"""Periods inside a work unit for the untimed replay (gpusim/sim/untimed.py): loop iterations jumped.

The replay jumps whole work units where a slot's units repeat, but inside a unit it used to play every
iteration of every loop: a 65536^3 GEMM's unit has 1,024 k-tiles, so even three units per distinct slot
cost ~100k statements (0.8 s), and every 8192^3 prediction paid ~13k.

After each *sweep* of the replay (every role moved as far as it goes, in a fixed order), the state of
the run is summarised relative to its loop counters: each role's statement and loop frames, with every
counter taken relative to the first role's counter of the same variable; each ring's open stages
relative to its producer cursor, with their tags' counters relative too, and its credits; the stages
each role holds; each named barrier's arrivals, and the phase a role waits for relative to the
barrier's phase count (which moves like a ring cursor); turnstiles and event arrivals as they are. The replay is a
deterministic function of that state and of the values its expressions take, so when a summary repeats
with every counter moved by ``d`` and every ring cursor by ``c``, the sweeps in between are a *period*:
the next sweeps repeat it, shifted, as long as every expression the period evaluated keeps its value at
the shifted counters (each is re-evaluated there) and every loop stays inside its range. The jump moves
counters, ring cursors, occupied stages, their tags and credits by whole periods; the statements of the
skipped periods are not counted against the replay's budget, but the checks are: each re-evaluation
counts its interval bounds and points as statements (causal attention at long sequences jumps in every
unit, and its checks, uncounted, cost minutes). A period in which an ``at:`` sets a moving
counter to anything but that counter plus a constant is not jumped, nor are runs with chunked buffers.
"""

from __future__ import annotations

import math
from typing import Any

from gpusim.sim.piecewise import Evaluations, periods_holding

MAX_FREED_KEYS = 200_000
"""Freed stage tags the jumps of one replay may record (they grow with the periods jumped: a
``K = 10**9`` mainloop would record tens of millions). Past it the replay stops jumping, runs out of
its step budget and decides nothing: the simulation decides."""

_MAX_MARKS = 64
"""Summaries kept per unit (the oldest are forgotten; a period longer than this is not found)."""


def visits(position: int, index: int, stages: int) -> int:
    """How many of the ring positions ``0 .. position - 1`` fall on ring slot ``index``."""
    return max(0, (position - index + stages - 1) // stages)


def tag_key(tag: dict[str, Any]) -> tuple:
    """A stage tag as a hashable key (its items in name order)."""
    return tuple(sorted(tag.items()))


class LoopPeriods:
    """Finds and jumps periods of the sweeps of one run (see the module docstring).

    ``run`` is an untimed ``_Run``: its runners carry ``frames`` (``[statement id, variable, value,
    stop]`` per enclosing ``for``), ``site`` (the statement they stand at), ``held`` and ``cursors``; its rings the
    arrays of ``untimed._Ring``; its game records evaluations in ``record`` while this is active."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.sweep = 0
        self.freed_recorded = 0
        """Freed stage tags the jumps recorded so far (bounded by :data:`MAX_FREED_KEYS`)."""
        self.marks: dict[tuple, tuple[int, dict[str, int], list[int]]] = {}
        self.logs: list[tuple[int, dict[tuple, tuple]]] = []
        self.freed: list[tuple[int, Any, tuple]] = []
        """(sweep, ring, key) of each stage freed since the oldest kept summary."""
        run.game.record = {}

    def reset(self) -> None:
        """A new unit starts: no summary of the previous one can repeat."""
        self.marks.clear()
        self.logs.clear()
        self.freed.clear()
        self.run.game.record = {}

    def freed_stage(self, ring: Any, key: tuple) -> None:
        """A stage tagged ``key`` was freed (the jump frees the skipped periods' stages too)."""
        self.freed.append((self.sweep + 1, ring, key))

    def after_sweep(self) -> None:
        """Summarise the state after a sweep in which something moved; on a repeat, jump."""
        game = self.run.game
        self.sweep += 1
        self.logs.append((self.sweep, game.record))
        game.record = {}
        found = summary(self.run)
        if found is None:
            return
        key, bases, cursors = found
        old = self.marks.pop(key, None)
        self.marks[key] = (self.sweep, bases, cursors)
        if len(self.marks) > _MAX_MARKS:
            del self.marks[next(iter(self.marks))]
        if old is not None and self._jump(old, bases, cursors):
            self.reset()
            return
        oldest = min(sweep for sweep, _, _ in self.marks.values())
        while self.logs and self.logs[0][0] <= oldest:
            self.logs.pop(0)
        while self.freed and self.freed[0][0] <= oldest:
            self.freed.pop(0)

    def _jump(
        self, old: tuple[int, dict[str, int], list[int]], bases: dict[str, int], cursors: list[int]
    ) -> bool:
        since, old_bases, old_cursors = old
        delta = {var: bases[var] - old_bases[var] for var in bases}
        moving = {var for var, d in delta.items() if d}
        if not moving or any(d < 0 for d in delta.values()):
            return False
        moves = [c - c0 for c, c0 in zip(cursors, old_cursors, strict=True)]
        if any(m < 0 for m in moves):
            return False
        periods: float = math.inf
        for runner in self.run.runners:
            for _site, var, value, stop in runner.frames:
                d = delta[var]
                if d:
                    periods = min(periods, (stop - 1 - value) // d)
        if periods == math.inf or periods < 1:
            return False
        periods = int(periods)
        merged: dict[tuple, tuple] = {}
        for sweep, log in self.logs:
            if sweep > since:
                merged.update(log)
        game = self.run.game
        for key, entry in merged.items():
            if key[0] == "at":  # an ``at:`` set this name to a value that does not move with it
                if key[1] in moving:
                    return False
                continue
            spent = Evaluations()
            periods = _holds(entry, delta, periods, spent)
            game.charge(1 + spent.count)
            if periods < 1:
                return False
        freed = [(ring, key) for sweep, ring, key in self.freed if sweep > since]
        if freed:  # each jumped period records its freed stages: bound their memory
            room = MAX_FREED_KEYS - self.freed_recorded
            if room < len(freed):
                return False  # no more jumps: the replay runs out of its step budget, undecided
            periods = min(periods, room // len(freed))
            self.freed_recorded += periods * len(freed)
        _apply(self.run, delta, moves, periods, freed)
        return True


def summary(run: Any) -> tuple[tuple, dict[str, int], list[int]] | None:
    """The run's state relative to its loop counters, ring cursors and barrier phases; the counters'
    bases; the ring cursors followed by every named barrier's phase count. None where no period can be
    taken (no loop, a ring's counts not as its cursors say, chunked buffers)."""
    bases: dict[str, int] = {}
    for runner in run.runners:
        for _site, var, value, _stop in runner.frames:
            bases.setdefault(var, value)
    if not bases:
        return None

    def relative(tag: dict[str, Any] | tuple) -> tuple:
        items = tag.items() if isinstance(tag, dict) else tag
        return tuple(
            (name, value - bases[name] if name in bases and type(value) is int else value)
            for name, value in sorted(items)
        )

    rings: list[Any] = []
    cursors: list[int] = []
    where: dict[int, int] = {}
    for ring in run.rings:
        # Producers of one ring (a CTA pair's) open the same positions, the leader first: positions below
        # the leader's cursor not open are freed, and the others' cursors are part of the state.
        cursor = max((c[0] for c in ring.cursors), default=0)
        where[id(ring)] = cursor
        cursors.append(cursor)
        stages = []
        n = ring.n
        for i in range(n):
            gen = ring.open_gen[i]
            if gen >= 0:
                if ring.freed[i] != gen:
                    return None
                stages.append((gen * n + i - cursor, relative(ring.tag[i]), ring.expected[i], ring.arrivals[i],
                               ring.commits[i], ring.full[i], ring.releases[i], ring.expected_releases[i]))  # fmt: skip
            elif ring.freed[i] != visits(cursor, i, n):
                return None
        credits = tuple(sorted((relative(key), amount) for key, amount in ring.credits.items()))
        current = tuple((c[0] - cursor, None if c[1] is None else (c[1] - cursor) % n) for c in ring.cursors)
        rings.append((tuple(sorted(stages)), credits, current))
    runners = []
    for runner in run.runners:
        frames = tuple((site, var, value - bases[var]) for site, var, value, _stop in runner.frames)
        held = tuple(
            (buf, tuple(_position(runner.cta.rings[buf], i) - where[id(runner.cta.rings[buf])] for i in idx))
            for buf, idx in sorted(runner.held.items())
        )
        waits = runner.awaiting
        awaiting = None if waits is None else (id(waits[0]), waits[1] - waits[0].phase)
        runners.append((runner.gen is None, runner.site, frames, runner.vars.get("tile"), held, awaiting))
    ctas = []
    for cta in run.ctas:
        if cta.chunks:
            return None
        for barrier in _barriers(cta):
            cursors.append(barrier.phase)  # a phase count moves like a ring cursor
        ctas.append(
            (
                tuple((t.token, tuple(sorted(t.done))) for t in cta.turnstiles.values()),
                tuple(b.arrived for b in _barriers(cta)),
                tuple(tuple(sorted(arrivals.items())) for _count, arrivals in cta.events.values()),
            )
        )
    return (tuple(rings), tuple(runners), tuple(ctas)), bases, cursors


def _barriers(cta: Any) -> list[Any]:
    """The named barriers of a CTA, ``__syncthreads`` last."""
    return [*cta.named.values(), *([] if cta.syncthreads is None else [cta.syncthreads])]


def _position(ring: Any, index: int) -> int:
    return ring.open_gen[index] * ring.n + index


def _holds(entry: tuple, delta: dict[str, int], periods: int, spent: Evaluations | None = None) -> int:
    """How many of the next ``periods`` periods give the recorded evaluation its recorded value: proved
    by interval arithmetic where it can be (gpusim/sim/piecewise.py), else evaluated period by period
    (the bounds and points evaluated are added to ``spent``)."""
    expr, stmt, _kind, names, values, _value = entry
    moving = [(name, value, delta[name]) for name, value in zip(names, values, strict=True)
              if delta.get(name) and type(value) is int]  # fmt: skip
    if not moving:
        return periods
    env = dict(zip(names, values, strict=True))
    try:  # the raw value: where it stays, the size or count made of it stays too
        target = expr(env, where=stmt.where)
    except Exception:
        return 0
    return periods_holding(expr, env, moving, target, 1, periods, where=stmt.where, spent=spent)


def _apply(
    run: Any, delta: dict[str, int], moves: list[int], periods: int, freed: list[tuple[Any, tuple]]
) -> None:
    def shift(items: Any, times: int) -> dict[str, Any]:
        return {
            name: value + times * delta[name] if delta.get(name) and type(value) is int else value
            for name, value in (items.items() if isinstance(items, dict) else items)
        }

    phases = iter(moves[len(run.rings) :])
    for cta in run.ctas:
        for barrier in _barriers(cta):
            by = next(phases) * periods
            barrier.phase += by
            for runner in run.runners:
                if runner.awaiting is not None and runner.awaiting[0] is barrier:
                    runner.awaiting = (barrier, runner.awaiting[1] + by)
    for ring, move in zip(run.rings, moves[: len(run.rings)], strict=True):
        n = ring.n
        by = move * periods
        cursor = max((c[0] for c in ring.cursors), default=0) + by
        occupants = []
        for i in range(n):
            if ring.open_gen[i] >= 0:
                occupants.append((_position(ring, i) + by, shift(ring.tag[i], periods), ring.expected[i],
                                  ring.arrivals[i], ring.commits[i], ring.full[i], ring.releases[i],
                                  ring.expected_releases[i]))  # fmt: skip
                ring.open_gen[i] = -1
                ring.tag[i] = ring.key[i] = None
        for position, tag, expected, arrivals, commits, full, releases, expected_releases in occupants:
            i = position % n
            ring.open_gen[i] = position // n
            ring.tag[i] = tag
            ring.key[i] = tag_key(tag)
            ring.expected[i], ring.arrivals[i], ring.commits[i] = expected, arrivals, commits
            ring.full[i], ring.releases[i], ring.expected_releases[i] = full, releases, expected_releases
        for i in range(n):
            ring.freed[i] = ring.open_gen[i] if ring.open_gen[i] >= 0 else visits(cursor, i, n)
        for c in ring.cursors:
            c[0] += by
            if c[1] is not None:
                c[1] = (c[1] + by) % n
        ring.credits = {tag_key(shift(key, periods)): amount for key, amount in ring.credits.items()}
        for runner in run.runners:
            held = runner.held.get(ring.name)
            if held and runner.cta.rings.get(ring.name) is ring:
                runner.held[ring.name] = [(i + by) % n for i in held]
    for ring, key in freed:
        for times in range(1, periods + 1):
            moved = tag_key(shift(key, times))
            ring.freed_keys.add(moved)
            ring.freed_keysets.add(tuple(name for name, _ in moved))
    for runner in run.runners:
        for frame in runner.frames:
            d = delta[frame[1]]
            if d:
                frame[2] += periods * d
                runner.vars[frame[1]] = frame[2]
                runner.loop[frame[1]] = frame[2]
    run.epoch += 1
