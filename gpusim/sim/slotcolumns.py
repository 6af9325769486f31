"""A slot's work units as columns: each unit name's values over the slot's units, computed over arrays.

Grouping the slots of a plan and classifying the units of a slot for the untimed replay both ask, for
every unit of a slot, the values of a few unit names and of expressions over them. Asked one unit at a
time, that is Python work per unit (131,072 cluster units for a 65536^3 GEMM). Here a slot's cluster
coordinates come from index arithmetic over arrays, every name is a :class:`Column` (an integer code
per unit and the distinct values the codes stand for), and a value derived from some columns is
computed once per distinct combination of their codes, on a representative unit, with the same getter
or expression the unit-by-unit path uses: the values are those of that path, bit for bit.

Only round-robin slots (data-parallel and split-K launches) are laid out by arithmetic; others, and
any value whose getter cannot be resolved to the names it reads, raise :class:`NotColumnar`, and the
caller reads the units one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Coords = tuple[int, ...]

MAX_TABULATED = 65_536
"""The longest grid extent over which a field of one coordinate is tabulated once for every slot."""


class NotColumnar(Exception):
    """This slot (or value) is not computed over arrays: read its units one by one."""


@dataclass(frozen=True)
class Column:
    """One value per unit: ``values[codes[i]]`` is unit ``i``'s."""

    codes: np.ndarray
    values: list[Any]

    def at(self, index: int) -> Any:
        """Unit ``index``'s value."""
        return self.values[int(self.codes[index])]


def encode(values: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes and distinct values of a short list, equal values (as Python compares them) sharing a code."""
    index: dict[Any, int] = {}
    distinct: list[Any] = []
    codes = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        code = index.get(value)
        if code is None:
            code = index[value] = len(distinct)
            distinct.append(value)
        codes[i] = code
    return codes, distinct


def int_column(array: np.ndarray) -> Column:
    """The column of an integer array."""
    distinct, codes = np.unique(array, return_inverse=True)
    return Column(codes.reshape(-1), distinct.tolist())


def constant_column(length: int, value: Any) -> Column:
    """The same value for every unit."""
    return Column(np.zeros(length, dtype=np.int64), [value])


def combined_codes(columns: Sequence[Column]) -> tuple[np.ndarray, np.ndarray]:
    """For units described by several columns: the first unit of each distinct combination, in order of
    first appearance, and the combination's number per unit."""
    length = len(columns[0].codes)
    key = np.zeros(length, dtype=np.int64)
    radix = 1
    for col in columns:
        width = max(1, len(col.values))
        if radix * width >= 2**62:
            return _combined_rows(columns)
        key = key * width + col.codes
        radix *= width
    distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return _in_first_order(first, inverse.reshape(-1), len(distinct))


def _combined_rows(columns: Sequence[Column]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.stack([c.codes for c in columns], axis=1)
    distinct, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return _in_first_order(first, inverse.reshape(-1), len(distinct))


def _in_first_order(first: np.ndarray, inverse: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(first, kind="stable")
    renumber = np.empty(count, dtype=np.int64)
    renumber[order] = np.arange(count)
    return first[order], renumber[inverse]


def derived(columns: Sequence[Column], length: int, value_at: Callable[[int], Any]) -> Column:
    """The column of a value that depends only on ``columns``: ``value_at(i)`` computes it for unit
    ``i``, once per distinct combination of their values (on that combination's first unit)."""
    if not columns:
        return constant_column(length, value_at(0))
    if len(columns) == 1:
        col = columns[0]
        present, firsts = np.unique(col.codes, return_index=True)
        codes, distinct = encode([value_at(int(i)) for i in firsts])
        lookup = np.zeros(len(col.values), dtype=np.int64)
        lookup[present] = codes
        return Column(lookup[col.codes], distinct)
    first, combo = combined_codes(columns)
    codes, distinct = encode([value_at(int(i)) for i in first])
    return Column(codes[combo], distinct)


class SlotColumns:
    """The columns of one slot's units, per CTA rank of the cluster.

    ``ccoords`` are the slot's cluster coordinates (one row per unit), ``extra_index`` the index of each
    unit's scheduler extras in ``extras``; ``rank_coords(ccoords, rank)`` maps cluster coordinates to a
    CTA's; ``model`` is the plan's unit model; ``shared`` is kept across the slots of one plan.
    """

    def __init__(self, ccoords: np.ndarray, extra_index: np.ndarray, extras: Sequence[Mapping[str, Any]],
                 rank_coords: Callable[[np.ndarray, int], np.ndarray], model: Any,
                 shared: dict[Any, Any]) -> None:  # fmt: skip
        self.length = len(ccoords)
        self.ccoords = ccoords
        self.extra_index = extra_index
        self.extras = extras
        self.model = model
        self._rank_coords = rank_coords
        self._coords: dict[int, np.ndarray] = {}
        self._cache: dict[tuple[Any, int], Column] = {}
        self.shared = shared
        """Tables over a whole coordinate extent, kept value lists and what was mapped from them: what the
        slots of one plan share."""

    @property
    def ranks(self) -> int:
        """CTAs per cluster."""
        return self.model.sched.launch.cluster_size

    def coords(self, rank: int) -> np.ndarray:
        """CTA ``rank``'s grid coordinates, one row per unit."""
        got = self._coords.get(rank)
        if got is None:
            got = self._coords[rank] = self._rank_coords(self.ccoords, rank)
        return got

    def base(self, index: int, rank: int) -> tuple[Coords, Mapping[str, Any], int]:
        """Unit ``index``'s (coordinates, extras, rank), as the unit-by-unit getters take them."""
        return tuple(self.coords(rank)[index].tolist()), self.extras[int(self.extra_index[index])], rank

    def name(self, name: str, rank: int) -> Column:
        """Unit name ``name`` (a grid dimension, scheduler extra, ``cta_rank`` or field)."""
        return self.source(self.model.scope[name], rank)

    def source(self, source: tuple[str, Any], rank: int) -> Column:
        """A unit name's column by where its value comes from."""
        key = (source, rank)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._source(source, rank)
        return got

    def _source(self, source: tuple[str, Any], rank: int) -> Column:
        kind, arg = source
        if kind == "dim":
            extent = self.model.extents[arg]
            if extent > MAX_TABULATED:
                return int_column(self.coords(rank)[:, arg])
            return Column(self.coords(rank)[:, arg], self._kept(("dim", arg), lambda: list(range(extent))))
        if kind == "rank":
            return constant_column(self.length, rank)
        if kind == "extra":
            codes, distinct = encode([extra[arg] for extra in self.extras])
            return Column(codes[self.extra_index], distinct)
        return self._derived(self.model.fields[arg], source, rank)

    def of(self, expr: Any, rank: int) -> Column:
        """The column of an expression over unit names (``UnitModel.derived``; the plan's schedule
        environment is its static one, so its text names its value)."""
        source = ("expr", expr.expr.text)
        got = self._cache.get((source, rank))
        if got is None:
            got = self._cache[(source, rank)] = self._derived(expr, source, rank)
        return got

    def _derived(self, value: Any, key: tuple[str, Any], rank: int) -> Column:
        get = value.getter()
        if value.kind not in ("const", "name", "table", "memo"):
            raise NotColumnar(f"{key} is evaluated in each unit's environment")
        bases = sorted(value.bases, key=str)
        if len(bases) == 1 and bases[0][0] == "dim":
            table = self._over_extent(key, bases[0][1], get)
            if table is not None:
                return Column(table.codes[self.coords(rank)[:, bases[0][1]]], table.values)
        return derived([self.source(b, rank) for b in bases], self.length,
                       lambda i: get(*self.base(i, rank)))  # fmt: skip

    def _over_extent(self, source: tuple[str, Any], dim: int, get: Callable[..., Any]) -> Column | None:
        """A value of one grid coordinate over the coordinate's whole extent, kept for every slot of the
        plan (None when the extent is too long to tabulate)."""
        key = ("extent", source)
        table = self.shared.get(key)
        if table is None:
            extents = self.model.extents
            if extents[dim] > MAX_TABULATED:
                return None
            width = len(extents)
            points = [tuple(x if i == dim else 0 for i in range(width)) for x in range(extents[dim])]
            codes, distinct = encode([get(p, {}, 0) for p in points])
            table = self.shared[key] = Column(codes, self._kept(("values of", key), lambda: distinct))
        return table

    def _kept(self, key: Any, make: Callable[[], list[Any]]) -> list[Any]:
        """A list of distinct values kept for every slot of the plan (columns over it can share what is
        computed from it: :meth:`mapped`)."""
        values = self.shared.get(key)
        if values is None:
            values = self.shared[key] = make()
            self.shared[("kept", id(values))] = values
        return values

    def is_kept(self, col: Column) -> bool:
        """Whether ``col``'s distinct values are a list kept for every slot of the plan (then equal codes
        mean equal values in every slot)."""
        return self.shared.get(("kept", id(col.values))) is col.values

    def mapped(self, col: Column, fn: Callable[[Any], Any], key: Any) -> Column:
        """``fn`` of each unit's value of ``col``, evaluated once per distinct value; once for every slot
        of the plan where ``col``'s values are a kept list and ``key`` names ``fn``."""
        if self.is_kept(col):
            lookup = self.shared.get(("mapped", key, id(col.values)))
            if lookup is None:
                codes, distinct = encode([fn(v) for v in col.values])
                lookup = self.shared[("mapped", key, id(col.values))] = Column(codes, distinct)
            return Column(lookup.codes[col.codes], lookup.values)
        return derived([col], self.length, lambda i: fn(col.at(i)))
