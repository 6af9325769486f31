"""The values of a launch's work-unit fields, computed on demand from a unit's coordinates.

A CTA unit is its grid coordinates, the scheduler's extras (split, k range, KV part, ...), its rank in
the cluster and the launch fields evaluated in order over them (a field may read earlier ones).
:class:`UnitModel` turns any expression over those names (a field, an operand's key or size, a name
the programs read) into a *getter* from ``(coords, extra, rank)`` to its value, without building the
unit's dict:

- an expression that reads no unit name is evaluated once;
- one that reads (through earlier fields too) a single grid coordinate is tabulated over that
  coordinate's extent as runs of equal values (gpusim/sim/piecewise.py proves where it is constant);
- any other is evaluated once per combination of the unit names it reads (a bounded memo).

Expressions are pure, so each getter returns what evaluating the expression in the unit's own
environment returns, bit for bit; :meth:`UnitModel.unit` builds the same dict the eager plan built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpusim.errors import GpusimError
from gpusim.schedule.expr import Expr
from gpusim.schedule.ir import Schedule
from gpusim.sim.piecewise import IntervalEval, Runs, constant_runs

Coords = tuple[int, ...]
Getter = Callable[[Coords, Mapping[str, Any], int], Any]
"""``getter(coords, extra, rank)``: a value of one CTA unit."""
Source = tuple[str, Any]
"""Where a unit name's value comes from: ("dim", index), ("extra", name), ("rank", None), ("field", index)."""

MEMO_ENTRIES = 65_536
"""The most remembered values per expression of several unit names (the memo starts over past it)."""


class _Derived:
    """One expression over unit names, with the names it reads resolved and its strategy chosen."""

    def __init__(self, model: UnitModel, expr: Expr, scope: Mapping[str, Source], static: Mapping[str, Any],
                 where: str) -> None:  # fmt: skip
        self.model, self.expr, self.where, self.static = model, expr, where, static
        self.sources: dict[str, Source] = {}
        self.consts: dict[str, Any] = {}
        self.resolved = True
        bases: set[Source] = set()
        for name in sorted(expr.names):
            source = scope.get(name)
            if source is None:
                if name in static:
                    self.consts[name] = static[name]
                else:
                    self.resolved = False  # evaluated in the unit's own environment (its error names it)
                continue
            self.sources[name] = source
            if source[0] == "field":
                field = model.fields[source[1]]
                bases |= field.bases
                self.resolved = self.resolved and field.resolved
            else:
                bases.add(source)
        self.bases: frozenset[Source] = frozenset(bases)
        self._get: Getter | None = None
        self.kind = ""
        """How the value is computed: name, const, table, memo or unit (set with the getter)."""
        self.table: Runs | None = None
        """The runs of a tabulated expression, once built."""

    def reads_coords(self) -> bool:
        """Whether the value may differ between units of different coordinates (after its tables are
        built: a tabulated expression of one run does not)."""
        if self.kind == "table":
            return self.table is None or len(self.table.starts) > 1
        if self.kind == "const":
            return False
        if self.kind == "name":
            return self.model.source_reads_coords(next(iter(self.sources.values())))
        return self.kind == "unit" or any(b[0] == "dim" for b in self.bases)

    def getter(self) -> Getter:
        """The getter of this expression's value (its tables are built on the first call)."""
        if self._get is None:
            self._get = self._choose()
        return self._get

    def _choose(self) -> Getter:
        expr, model = self.expr, self.model
        text = expr.text.strip()
        if not self.resolved:
            self.kind = "unit"
            return self._in_unit_env
        if expr.names == {text} and text in self.sources:  # a bare name: that name's value
            self.kind = "name"
            return model.source_getter(self.sources[text])
        if not self.bases:
            self.kind = "const"
            return self._lazy(lambda: expr(self._env_at((), {}, 0), where=self.where))
        if len(self.bases) == 1 and next(iter(self.bases))[0] == "dim":
            self.kind = "table"
            return self._tabulated(next(iter(self.bases))[1])
        self.kind = "memo"
        return self._memoized()

    def _lazy(self, compute: Callable[[], Any]) -> Getter:
        box: list[Any] = []

        def get(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
            if not box:
                box.append(compute())
            return box[0]

        return get

    def _env_at(self, coords: Coords, extra: Mapping[str, Any], rank: int) -> dict[str, Any]:
        env = dict(self.consts)
        for name, source in self.sources.items():
            env[name] = self.model.source_getter(source)(coords, extra, rank)
        return env

    def _tabulated(self, dim: int) -> Getter:
        runs: list[Runs] = []
        width = len(self.model.extents)

        def point(x: int) -> Coords:
            return tuple(x if i == dim else 0 for i in range(width))

        def build() -> Runs:
            bounds = self.bounds(dim)
            return constant_runs(
                bounds, lambda x: self.expr(self._env_at(point(x), {}, 0), where=self.where),
                0, self.model.extents[dim],
            )  # fmt: skip

        def get(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
            if not runs:
                runs.append(build())
                self.table = runs[0]
            table = runs[0]
            if len(table.starts) == 1:
                return table.values[0]
            return table.value(coords[dim])

        return get

    def bounds(self, dim: int) -> IntervalEval | None:
        """Interval bounds of this expression over grid coordinate ``dim`` (None: none can be given)."""
        consts = dict(self.consts)
        derived: dict[str, IntervalEval] = {}
        var = None
        for name, source in self.sources.items():
            if source == ("dim", dim):
                var = name
            elif source[0] == "field":
                field = self.model.fields[source[1]]
                if field.bases:
                    inner = field.bounds(dim) if field.resolved else None
                    if inner is None:
                        return None
                    derived[name] = inner
                else:
                    consts[name] = field.getter()((), {}, 0)
            else:
                return None
        if var is None:
            var = f"_{self.model.dim_names[dim]}"  # the coordinate is read only through fields
        try:
            return IntervalEval(self.expr, var, consts, derived)
        except SyntaxError:
            return None

    def _memoized(self) -> Getter:
        order = sorted(self.bases, key=str)
        getters = [self.model.source_getter(s) for s in order]
        memo: dict[tuple, Any] = {}
        expr, where, env_at = self.expr, self.where, self._env_at

        def get(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
            key = tuple(g(coords, extra, rank) for g in getters)
            value = memo.get(key, _MISSING)
            if value is _MISSING:
                value = expr(env_at(coords, extra, rank), where=where)
                if len(memo) >= MEMO_ENTRIES:
                    memo.clear()
                memo[key] = value
            return value

        return get

    def _in_unit_env(self, coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
        env = dict(self.static)
        env.update(self.model.unit(coords, extra, rank, upto=self.model.scope_end(self)))
        return self.expr(env, where=self.where)


_MISSING = object()


class UnitModel:
    """A launch's unit names (grid dimensions, scheduler extras, ``cta_rank``, fields) and getters."""

    def __init__(self, sched: Schedule, extra_keys: tuple[str, ...]) -> None:
        launch = sched.launch
        self.sched = sched
        self.env = dict(sched.env)
        self.dim_names = [d for d, _ in launch.grid]
        self.extents = [e for _, e in launch.grid]
        self.extra_keys = extra_keys
        self.field_where = {name: f"{sched.name}: launch.fields.{name}" for name in launch.fields}
        read = frozenset().union(*(expr.names for expr in launch.fields.values()))
        self.field_static = {n: self.env[n] for n in read if n in self.env}
        scope: dict[str, Source] = {d: ("dim", i) for i, d in enumerate(self.dim_names)}
        scope.update({k: ("extra", k) for k in extra_keys})
        scope["cta_rank"] = ("rank", None)
        self.fields: list[_Derived] = []
        self._field_names = list(launch.fields)
        for j, (name, expr) in enumerate(launch.fields.items()):
            self.fields.append(_Derived(self, expr, dict(scope), self.field_static, self.field_where[name]))
            scope[name] = ("field", j)
        self.scope = scope
        self.keys = frozenset(scope)
        """The names every unit has."""
        self._source_getters: dict[Source, Getter] = {}

    def touch_fields(self) -> None:
        """Evaluate the fields computed once or tabulated per coordinate (raising any error now)."""
        origin = (0,) * len(self.extents)
        for field in self.fields:
            get = field.getter()
            if field.kind in ("const", "table"):
                get(origin, {}, 0)

    def per_unit_fields(self) -> list[Getter]:
        """Getters of the fields evaluated unit by unit (of several unit names)."""
        return [f.getter() for f in self.fields if f.getter() and f.kind in ("memo", "unit")]

    def per_unit_reads_coords(self) -> bool:
        """Whether a field evaluated unit by unit reads the unit's coordinates."""
        return any(f.reads_coords() for f in self.fields if f.kind in ("memo", "unit"))

    def scope_end(self, derived: _Derived) -> int:
        """How many fields a unit has when ``derived`` is evaluated (all of them unless it is a field)."""
        for j, field in enumerate(self.fields):
            if field is derived:
                return j
        return len(self.fields)

    def source_getter(self, source: Source) -> Getter:
        """The getter of a unit name's value."""
        get = self._source_getters.get(source)
        if get is None:
            kind, arg = source
            if kind == "dim":
                get = _coord(arg)
            elif kind == "extra":
                get = _extra(arg)
            elif kind == "rank":
                get = _rank
            else:
                get = self.fields[arg].getter()
            self._source_getters[source] = get
        return get

    def source_reads_coords(self, source: Source) -> bool:
        """Whether a unit name's value may differ with the unit's coordinates."""
        if source[0] == "field":
            return self.fields[source[1]].reads_coords()
        return source[0] == "dim"

    def name_reads_coords(self, name: str) -> bool:
        """Whether unit name ``name``'s value may differ with the unit's coordinates."""
        return self.source_reads_coords(self.scope[name])

    def name_getter(self, name: str) -> Getter:
        """The getter of unit name ``name`` (a dimension, extra, ``cta_rank`` or field)."""
        return self.source_getter(self.scope[name])

    def getter(self, expr: Expr, static: Mapping[str, Any], where: str) -> Getter:
        """The getter of ``expr`` over the unit's names (as they are after every field), else ``static``'s."""
        return self.derived(expr, static, where).getter()

    def derived(self, expr: Expr, static: Mapping[str, Any], where: str) -> _Derived:
        """``expr`` over the unit's names (as they are after every field), else ``static``'s: its getter,
        the unit names it reads (``bases``) and how it is computed (``kind``)."""
        return _Derived(self, expr, self.scope, static, where)

    def unit(
        self, coords: Coords, extra: Mapping[str, Any], rank: int, upto: int | None = None
    ) -> dict[str, Any]:
        """The unit's dict (its first ``upto`` fields; all by default), built as the eager plan built it."""
        unit: dict[str, Any] = dict(zip(self.dim_names, coords, strict=True))
        unit.update(extra)
        unit["cta_rank"] = rank
        count = len(self.fields) if upto is None else upto
        try:
            for j in range(count):
                unit[self._field_names[j]] = self.fields[j].getter()(coords, extra, rank)
        except GpusimError:
            self.raise_eager(coords, extra, rank)
            raise
        return unit

    def raise_eager(self, coords: Coords, extra: Mapping[str, Any], rank: int) -> None:
        """Evaluate the unit's fields as the eager plan did, raising its error where one fails."""
        unit: dict[str, Any] = dict(zip(self.dim_names, coords, strict=True))
        unit.update(extra)
        unit["cta_rank"] = rank
        local = dict(self.field_static)
        local.update(unit)
        for name, expr in self.sched.launch.fields.items():
            try:
                unit[name] = expr(local, where=self.field_where[name])
            except GpusimError:
                expr({**self.env, **unit}, where=self.field_where[name])  # the error names every known symbol
                raise
            local[name] = unit[name]


def _coord(index: int) -> Getter:
    def get(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
        return coords[index]

    return get


def _extra(name: str) -> Getter:
    def get(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
        return extra[name]

    return get


def _rank(coords: Coords, extra: Mapping[str, Any], rank: int) -> Any:
    return rank
