"""Work units numbered by what a schedule's statements make of them.

Two units get one number when every given statement's expressions that read only the unit's names
(and constants) take the same values in both, and the unit names that the other expressions read
(those mixing in loop variables) are equal where they matter. Units of one number run those statements
alike: the untimed replay (gpusim/sim/untimed.py) replays one of them, the balance check
(gpusim/schedule/balance.py) replays roles once per number, and the work plan (gpusim/sim/scheduler.py)
groups slots whose units run alike. A slot is numbered over columns (gpusim/sim/slotcolumns.py) where
it has them, else unit by unit; both give the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import statement_exprs, walk
from gpusim.sim.slotcolumns import Column, NotColumnar, SlotColumns, combined_codes, derived

if TYPE_CHECKING:
    from gpusim.sim.scheduler import SlotUnits

ClusterUnit = tuple[dict[str, Any], ...]
_MISSING = object()


class UnitClasses:
    """Numbers cluster units by what the ``relevant`` statements make of them: the value, in the unit, of
    each of their expressions that reads only the unit's fields and constants (a guard ``m == last`` is
    one value for all but one unit), and the fields themselves that the other expressions read.

    Each value is memoised on the unit fields it reads (a guard that is a conjunction, on each
    conjunct's), so a unit costs a few dictionary lookups, not an evaluation per expression."""

    def __init__(self, sched: Schedule, relevant: set[int]) -> None:
        self.env = dict(sched.env)
        self.exprs: list[tuple[Any, tuple[int, ...], bool]] = []
        for role in sched.roles.values():
            for stmt, _ in walk(role.program):
                if id(stmt) in relevant:
                    for expr in statement_exprs(stmt):
                        self.exprs.append((expr, tuple(range(role.replicas)), expr is stmt.guard))
        self.fields: tuple[str, ...] | None = None
        self.values: list[tuple[list[CachedValue], tuple[int, ...]]] = []
        """Unit-only values: all conjuncts (a guard) or the one expression, for each replica."""
        self.raw_names: tuple[str, ...] = ()
        self.gated: list[tuple[list[CachedValue], tuple[str, ...], tuple[int, ...]]] = []
        """(unit-only conjuncts, the unit fields the other conjuncts read): those fields count only
        in units where the conjuncts hold."""
        self.numbers: dict[tuple, int] = {}

    def _split(self, unit_names: Iterable[str]) -> None:
        self.fields = tuple(sorted(unit_names))
        fields = set(self.fields)
        known = fields | set(self.env) | {"r", "cta_rank"}
        raw: set[str] = set()
        shared: dict[str, CachedValue] = {}
        seen: set[tuple] = set()

        def cached(parts: list[Any]) -> list[CachedValue]:
            return [shared.setdefault(p.text, CachedValue(p, fields)) for p in parts]

        def add_value(parts: list[CachedValue], replicas: tuple[int, ...]) -> None:
            if not any(p.reads_replica for p in parts):
                replicas = (0,)  # the same value for every replica
            key = (tuple(p.expr.text for p in parts), replicas)
            if key not in seen:  # an expression written on several statements is one value
                seen.add(key)
                self.values.append((parts, replicas))

        for expr, replicas, is_guard in self.exprs:
            if not expr.names & fields:
                continue  # the same in every unit
            conjuncts = _conjuncts(expr.text) if is_guard or not expr.names <= known else []
            if expr.names <= known:
                add_value(cached(conjuncts if is_guard and conjuncts else [expr]), replicas)
                continue
            # ``unit-only and loop-dependent``: one value where a unit-only conjunct is false
            fixed = [c for c in conjuncts if c.names <= known]
            rest = [c for c in conjuncts if not c.names <= known]
            if fixed:
                gate = cached(fixed)
                add_value(gate, replicas)
                reads = tuple(sorted(frozenset().union(*(c.names for c in rest)) & fields))
                self.gated.append((gate, reads, replicas))
            else:
                raw |= expr.names & fields
        self.raw_names = tuple(sorted(raw))

    def _holds(self, parts: list[CachedValue], unit: dict[str, Any], r: int) -> Any:
        if len(parts) == 1:
            return parts[0].value(self.env, unit, r)
        return all(bool(p.value(self.env, unit, r)) for p in parts)

    def __call__(self, cu: ClusterUnit) -> int:
        if self.fields is None:
            self._split(cu[0])
        parts = []
        for unit in cu:
            row = [unit.get(n) for n in self.raw_names]
            for conjuncts, replicas in self.values:
                for r in replicas:
                    row.append(self._holds(conjuncts, unit, r))
            for gate, names, replicas in self.gated:
                for r in replicas:
                    if self._holds(gate, unit, r) is True:
                        row.append(tuple(unit.get(n) for n in names))
            parts.append(tuple(row))
        key = tuple(parts)
        return self.numbers.setdefault(key, len(self.numbers))

    def of_slot(self, slot: SlotUnits) -> list[int]:
        """The class of each of a slot's cluster units, over columns where the slot has them."""
        try:
            return self.columnar(slot.columns())
        except NotColumnar:
            return [self(cu) for cu in slot]

    def columnar(self, cols: SlotColumns) -> list[int]:
        """The class of each of the slot's cluster units, from its columns."""
        if self.fields is None:
            self._split(cols.model.keys)
        length = cols.length
        per_rank: list[list[Column]] = []
        for rank in range(cols.ranks):
            memo: dict[tuple, Column] = {}
            row = [cols.name(n, rank) for n in self.raw_names]
            for conjuncts, replicas in self.values:
                row.extend(self._holds_column(cols, conjuncts, rank, r, memo) for r in replicas)
            for gate, names, replicas in self.gated:
                named = [cols.name(n, rank) for n in names]
                for r in replicas:
                    holds = self._holds_column(cols, gate, rank, r, memo)
                    row.append(derived([holds, *named], length, lambda i, h=holds, named=named:
                                       tuple(c.at(i) for c in named) if h.at(i) is True else _MISSING))  # fmt: skip
            per_rank.append(row)
        flat = [c for row in per_rank for c in row]
        if not flat:
            return [self.numbers.setdefault(tuple(() for _ in per_rank), len(self.numbers))] * length
        first, combo = combined_codes(flat)
        numbers = []
        for i in first.tolist():
            key = tuple(tuple(v for c in row if (v := c.at(i)) is not _MISSING) for row in per_rank)
            numbers.append(self.numbers.setdefault(key, len(self.numbers)))
        return [numbers[c] for c in combo.tolist()]

    def _holds_column(self, cols: SlotColumns, parts: list[CachedValue], rank: int, r: int,
                      memo: dict[tuple, Column]) -> Column:  # fmt: skip
        """``_holds`` of every unit of the slot, as a column."""
        part_cols = []
        for part in parts:
            key = (id(part), r if part.reads_replica else 0)
            col = memo.get(key)
            if col is None:
                named = [cols.name(n, rank) for n in part.unit_names]
                if len(named) == 1:
                    name = part.unit_names[0]
                    col = cols.mapped(named[0], lambda v, p=part, name=name: p.value(self.env, {name: v}, r),
                                      ("replayed", part.expr.text, name, key[1]))  # fmt: skip
                else:
                    col = derived(named, cols.length, lambda i, p=part, named=named: p.value(
                        self.env, {n: c.at(i) for n, c in zip(p.unit_names, named, strict=True)}, r))  # fmt: skip
                memo[key] = col
            part_cols.append(col)
        if len(part_cols) == 1:
            return part_cols[0]
        return derived(part_cols, cols.length, lambda i: all(bool(c.at(i)) for c in part_cols))


class CachedValue:
    """One expression's value in a unit, memoised on the unit fields it reads (and the replica)."""

    def __init__(self, expr: Any, fields: set[str]) -> None:
        self.expr = expr
        self.unit_names = tuple(sorted(expr.names & fields))
        self.reads_replica = "r" in expr.names
        self.memo: dict[tuple, Any] = {}

    def value(self, env: dict[str, Any], unit: dict[str, Any], r: int) -> Any:
        key = (r if self.reads_replica else 0, *map(unit.get, self.unit_names))
        value = self.memo.get(key, _MISSING)
        if value is _MISSING:
            try:
                value = self.expr({**env, **unit, "r": r})
            except Exception:  # the simulation reports it with its path; here it is one more class
                value = ("error", key)
            self.memo[key] = value
        return value


def _conjuncts(text: str) -> list[Any]:
    """The operands of a top-level ``and`` in ``text``, as expressions ([] when there is none)."""
    import ast

    from gpusim.schedule.expr import Expr

    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return []
    if not (isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And)):
        return []
    out = []
    for operand in tree.values:
        segment = ast.get_source_segment(text, operand)
        if segment is None:
            return []
        out.extend(_conjuncts(segment) or [Expr(segment)])
    return out
