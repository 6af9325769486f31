"""Where an integer expression of one grid coordinate is constant, proved by interval arithmetic.

A launch field such as ``valid: min(TB, ELEMS - chunk * TB)`` reads one coordinate and has the same
value for nearly every value of it. :func:`constant_runs` bisects the coordinate's range: over a
sub-range where interval arithmetic bounds the expression to one integer, and rules out every error
the evaluator could raise there, the value is its first point's, evaluated for real; elsewhere every
point is evaluated. Only integer and boolean arithmetic is bounded (``+ - * // %``, comparisons,
``and or not``, ``x if c else y``, ``min max abs ceil_div int floor ceil pow2_ceil``); anything else
(true division, powers, ``log2``, fractional floats, text mixed with the coordinate) is unknown, and
unknown is never constant. Floats count only where they hold whole numbers below 2**53. So the runs give, at every point, the value the evaluator gives, bit for bit.
"""

from __future__ import annotations

import ast
import math
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpusim.schedule.expr import MAX_INT_BITS, Expr

Interval = tuple[int, int, type]
"""``(lo, hi, kind)``: every value lies in ``lo..hi`` (inclusive) and has type ``kind``: int, bool, or
float (integer-valued floats below 2**53 only, where float arithmetic on them is exact)."""

FLOAT_EXACT = 2**53
"""Integer-valued floats below this add, subtract, multiply and floor-divide exactly."""

LEAF_POINTS = 8
"""Sub-ranges this short are evaluated point by point instead of bisected further."""


class _Parsed:
    """One expression's syntax tree, shared by every :class:`IntervalEval` of it: which nodes read a
    given set of names, and each constant sub-expression compiled, are worked out once per tree."""

    __slots__ = ("_parts", "_varying", "tree")

    def __init__(self, text: str) -> None:
        self.tree = ast.parse(text.strip(), mode="eval").body
        self._varying: dict[frozenset[str], dict[int, bool]] = {}
        self._parts: dict[int, Expr] = {}

    def varying(self, names: frozenset[str]) -> dict[int, bool]:
        """Node id -> whether the sub-expression reads any of ``names``."""
        known = self._varying.get(names)
        if known is None:
            known = self._varying[names] = {}

            def mark(node: ast.AST) -> bool:
                reads = isinstance(node, ast.Name) and node.id in names
                for child in ast.iter_child_nodes(node):
                    reads = mark(child) or reads
                known[id(node)] = reads
                return reads

            mark(self.tree)
        return known

    def part(self, node: ast.AST) -> Expr:
        """The sub-expression ``node`` of this tree, compiled."""
        known = self._parts.get(id(node))
        if known is None:
            known = self._parts[id(node)] = Expr(ast.unparse(node))
        return known


_PARSED: dict[str, _Parsed] = {}
_MAX_PARSED = 1024


def _parsed(text: str) -> _Parsed:
    known = _PARSED.get(text)
    if known is None:
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        known = _PARSED[text] = _Parsed(text)
    return known


class IntervalEval:
    """Bounds of one expression over a range of the integer variable ``var``.

    ``consts``: the values of the other names it may read; ``derived``: names whose values depend on
    ``var`` (earlier launch fields), each with its own IntervalEval over the same range."""

    def __init__(
        self, expr: Expr, var: str, consts: Mapping[str, Any], derived: Mapping[str, IntervalEval]
    ) -> None:
        self.var, self.consts, self.derived = var, consts, derived
        self._parsed = _parsed(expr.text)
        self.tree = self._parsed.tree
        self._fixed: dict[int, Interval | None] = {}
        self._seen: dict[tuple[int, int], Interval | None] = {}
        self._vary = self._parsed.varying(frozenset((var, *derived)))

    def over(self, lo: int, hi: int) -> Interval | None:
        """Bounds for ``lo <= var <= hi``; None when they cannot be given (or an error may occur)."""
        key = (lo, hi)
        if key not in self._seen:
            if len(self._seen) > 4096:
                self._seen.clear()
            self._seen[key] = self._node(self.tree, lo, hi)
        return self._seen[key]

    def _varies(self, node: ast.AST) -> bool:
        return self._vary[id(node)]

    def _constant(self, node: ast.AST) -> Interval | None:
        """A sub-expression that reads only constants: its exact value, as an interval if it is integer."""
        known = self._fixed.get(id(node), _UNSET)
        if known is not _UNSET:
            return known  # type: ignore[return-value]
        try:
            value = self._parsed.part(node)(self.consts)
        except Exception:
            value = None
        result = _point(value)
        self._fixed[id(node)] = result
        return result

    def _node(self, node: ast.AST, lo: int, hi: int) -> Interval | None:
        if not self._varies(node):
            return self._constant(node)
        if isinstance(node, ast.Name):
            if node.id == self.var:
                return (lo, hi, int)
            return self.derived[node.id].over(lo, hi)
        if isinstance(node, ast.BinOp):
            a, b = self._node(node.left, lo, hi), self._node(node.right, lo, hi)
            return None if a is None or b is None else _bounded(_binop(node.op, a, b))
        if isinstance(node, ast.UnaryOp):
            a = self._node(node.operand, lo, hi)
            if a is None:
                return None
            if isinstance(node.op, ast.USub):
                return _bounded((-a[1], -a[0], float if a[2] is float else int))
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.Not):
                truth = _truth(a)
                return (0, 1, bool) if truth is None else (int(not truth), int(not truth), bool)
            return None
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, lo, hi)
        if isinstance(node, ast.Compare):
            return self._compare(node, lo, hi)
        if isinstance(node, ast.IfExp):
            test = self._node(node.test, lo, hi)
            truth = None if test is None else _truth(test)
            if test is None:
                return None
            if truth is not None:
                return self._node(node.body if truth else node.orelse, lo, hi)
            a, b = self._node(node.body, lo, hi), self._node(node.orelse, lo, hi)
            if a is None or b is None or a[2] != b[2]:
                return None
            return (min(a[0], b[0]), max(a[1], b[1]), a[2])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [self._node(a, lo, hi) for a in node.args]
            if any(a is None for a in args):
                return None
            return _bounded(_call(node.func.id, args))  # type: ignore[arg-type]
        return None

    def _boolop(self, node: ast.BoolOp, lo: int, hi: int) -> Interval | None:
        """``all()`` (and) or ``any()`` (or) of the parts, left to right, up to the first that decides."""
        stop = isinstance(node.op, ast.Or)  # the truth value that ends the evaluation
        maybe_stop = False
        for part in node.values:
            a = self._node(part, lo, hi)
            if a is None:
                return None
            truth = _truth(a)
            if truth is stop:
                return (int(stop), int(stop), bool)
            if truth is None:
                maybe_stop = True
        return (0, 1, bool) if maybe_stop else (int(not stop), int(not stop), bool)

    def _compare(self, node: ast.Compare, lo: int, hi: int) -> Interval | None:
        """A chained comparison: false at the first pair that fails (the rest are not evaluated)."""
        left = self._node(node.left, lo, hi)
        if left is None:
            return None
        maybe_false = False
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._node(comparator, lo, hi)
            if right is None:
                return None
            truth = _compare(op, left, right)
            if truth is False:
                return (0, 0, bool)
            if truth is None:
                maybe_false = True
            left = right
        return (0, 1, bool) if maybe_false else (1, 1, bool)


_UNSET = object()


def _point(value: Any) -> Interval | None:
    if isinstance(value, bool):
        return (int(value), int(value), bool)
    if isinstance(value, int):
        return (value, value, int)
    if isinstance(value, float) and value.is_integer() and abs(value) < FLOAT_EXACT:
        return (int(value), int(value), float)
    return None


def _bounded(a: Interval | None) -> Interval | None:
    """``a``, or None where a value in it would exceed the evaluator's integer bound."""
    if a is None:
        return None
    big = max(abs(a[0]), abs(a[1]))
    if big.bit_length() >= MAX_INT_BITS or (a[2] is float and big >= FLOAT_EXACT):
        return None
    return a


def _truth(a: Interval) -> bool | None:
    if a[0] == a[1] == 0:
        return False
    if a[0] > 0 or a[1] < 0:
        return True
    return None


def _numeric(a: Interval, b: Interval) -> type:
    """The type of arithmetic on values of kinds ``a`` and ``b`` (bools count as ints)."""
    return float if float in (a[2], b[2]) else int


def _binop(op: ast.operator, a: Interval, b: Interval) -> Interval | None:
    kind = _numeric(a, b)
    if kind is float and not (_bounded(a) and _bounded(b)):
        return None
    if isinstance(op, ast.Add):
        return (a[0] + b[0], a[1] + b[1], kind)
    if isinstance(op, ast.Sub):
        return (a[0] - b[1], a[1] - b[0], kind)
    if isinstance(op, ast.Mult):
        corners = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return (min(corners), max(corners), kind)
    if isinstance(op, ast.FloorDiv):
        return _floordiv(a, b)
    if isinstance(op, ast.Mod) and b[0] == b[1] and b[0] > 0:
        p = b[0]
        if a[0] // p == a[1] // p:
            return (a[0] % p, a[1] % p, kind)
        return (0, p - 1, kind)
    return None


def _floordiv(a: Interval, b: Interval) -> Interval | None:
    """a // b is monotonic in each argument while b keeps its sign, so the corners bound it."""
    if b[0] <= 0 <= b[1]:
        return None
    corners = (a[0] // b[0], a[0] // b[1], a[1] // b[0], a[1] // b[1])
    return (min(corners), max(corners), _numeric(a, b))


def _compare(op: ast.cmpop, a: Interval, b: Interval) -> bool | None:
    """The comparison's truth for every pair of values, or None where it differs."""
    if isinstance(op, ast.Lt):
        return True if a[1] < b[0] else False if a[0] >= b[1] else None
    if isinstance(op, ast.LtE):
        return True if a[1] <= b[0] else False if a[0] > b[1] else None
    if isinstance(op, ast.Gt):
        return True if a[0] > b[1] else False if a[1] <= b[0] else None
    if isinstance(op, ast.GtE):
        return True if a[0] >= b[1] else False if a[1] < b[0] else None
    if isinstance(op, ast.Eq | ast.NotEq):
        equal = True if a[0] == a[1] == b[0] == b[1] else False if a[1] < b[0] or b[1] < a[0] else None
        return equal if equal is None or isinstance(op, ast.Eq) else not equal
    return None


def _call(name: str, args: list[Interval]) -> Interval | None:
    if name in ("min", "max") and len(args) >= 2:
        return _pick(name == "min", args)
    if len(args) == 1 and name in ("int", "floor", "ceil"):
        return (args[0][0], args[0][1], int)
    if len(args) == 1 and name == "abs":
        lo, hi, kind = args[0]
        kind = float if kind is float else int
        return (lo, hi, kind) if lo >= 0 else (-hi, -lo, kind) if hi <= 0 else (0, max(-lo, hi), kind)
    if len(args) == 1 and name == "pow2_ceil":  # non-decreasing
        return (_pow2_ceil(args[0][0]), _pow2_ceil(args[0][1]), int)
    if len(args) == 2 and name == "ceil_div":  # -(-int(a) // int(b))
        q = _floordiv((-args[0][1], -args[0][0], int), (args[1][0], args[1][1], int))
        return None if q is None else (-q[1], -q[0], int)
    return None


def _pick(smallest: bool, args: list[Interval]) -> Interval | None:
    """min() / max(): the first argument unless a later one is strictly smaller (larger). Arguments of
    different types count only where the comparison decides which one is returned."""
    current = args[0]
    for other in args[1:]:
        if other[2] is current[2]:
            lo = min(current[0], other[0]) if smallest else max(current[0], other[0])
            hi = min(current[1], other[1]) if smallest else max(current[1], other[1])
            current = (lo, hi, current[2])
        elif (current[1] <= other[0]) if smallest else (current[0] >= other[1]):
            continue  # the current one is never replaced
        elif (other[1] < current[0]) if smallest else (other[0] > current[1]):
            current = other  # always replaced
        else:
            return None
    return current


def _pow2_ceil(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same value of the same type (0.0 and -0.0 differ)."""
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)


class Runs:
    """A function of one integer coordinate as runs of equal values (``value(x)``)."""

    __slots__ = ("starts", "values")

    def __init__(self, starts: list[int], values: list[Any]) -> None:
        self.starts, self.values = starts, values

    def value(self, x: int) -> Any:
        """The value at ``x`` (within the range the runs were built for)."""
        if len(self.starts) == 1:
            return self.values[0]
        return self.values[bisect_right(self.starts, x) - 1]


class Evaluations:
    """A count of the evaluations a search made (interval bounds and points), for callers that budget
    their work in evaluations."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


def _walk(
    bounds: IntervalEval | None, lo: int, hi: int, whole: Callable[[int, Interval], bool],
    spent: Evaluations | None = None,
) -> Iterator[int]:  # fmt: skip
    """The points of ``lo..hi`` (inclusive), in order, that need evaluating one by one: a sub-range where
    ``bounds`` pins the value to one number (0.0 and -0.0 compare equal: not pinned) is skipped whole when
    ``whole(start, interval)`` accepts it; the rest is bisected down to ranges of ``LEAF_POINTS``. Each
    bound and each point yielded counts one in ``spent``."""
    stack = [(lo, hi)]
    while stack:
        a, b = stack.pop()
        if b < a:
            continue
        if bounds is not None:
            if spent is not None:
                spent.count += 1
            iv = bounds.over(a, b)
            if iv is not None and iv[0] == iv[1] and not (iv[2] is float and iv[0] == 0) and whole(a, iv):
                continue
        if b - a < LEAF_POINTS or bounds is None:
            for x in range(a, b + 1):
                if spent is not None:
                    spent.count += 1
                yield x
            continue
        mid = (a + b) // 2
        stack.append((mid + 1, b))  # popped after the lower half: points and ranges come in order
        stack.append((a, mid))


def constant_runs(bounds: IntervalEval | None, value_at: Callable[[int], Any], lo: int, hi: int) -> Runs:
    """The values of an expression for ``lo <= x < hi``: ``value_at(x)`` evaluates it at one point,
    ``bounds`` (None: no interval analysis) proves where it is constant."""
    starts: list[int] = []
    values: list[Any] = []

    def add(x: int, value: Any) -> None:
        if values and _same(values[-1], value):
            return
        starts.append(x)
        values.append(value)

    def proved(a: int, iv: Interval) -> bool:
        first = value_at(a)
        if type(first) is iv[2] and first == iv[0]:
            add(a, first)
            return True
        return False

    for x in _walk(bounds, lo, hi - 1, proved):
        add(x, value_at(x))
    return Runs(starts or [lo], values or [None])


class Linear:
    """``start + x * step`` over a range of ``x``: a derived name for :class:`IntervalEval` (a loop
    variable that moves by ``step`` per fast-forwarded period)."""

    def __init__(self, start: int, step: int) -> None:
        self.start, self.step = start, step

    def over(self, lo: int, hi: int) -> Interval | None:
        """Bounds of the value for ``lo <= x <= hi``."""
        a, b = self.start + lo * self.step, self.start + hi * self.step
        return (min(a, b), max(a, b), int)


def first_change(bounds: IntervalEval | None, value_at: Callable[[int], Any], target: Any, lo: int, hi: int,
                 spent: Evaluations | None = None) -> int | None:  # fmt: skip
    """The smallest ``x`` in ``lo..hi`` (inclusive) where ``value_at(x)`` is not ``target`` (a value that
    raises counts as not), or None: sub-ranges where ``bounds`` proves the value constant and equal to
    ``target`` are skipped whole, the rest is bisected down to points (as :func:`constant_runs`); the
    bounds and points evaluated are added to ``spent``."""
    for x in _walk(bounds, lo, hi, lambda _a, iv: type(target) is iv[2] and target == iv[0], spent):
        try:
            value = value_at(x)
        except Exception:
            return x
        if not _same(value, target):
            return x
    return None


def periods_holding(expr: Expr, env: Mapping[str, Any], moving: list[tuple[str, int, int]], target: Any,
                    first: int, periods: int, where: str = "", spent: Evaluations | None = None) -> int:  # fmt: skip
    """How many periods (``first - 1`` of them checked already) ``expr`` keeps the value ``target`` while
    each ``(name, value, step)`` of ``moving`` advances by ``step`` per period from ``value`` (the other
    names as in ``env``): proved by interval arithmetic where it can be, evaluated point by point
    elsewhere (:func:`first_change`); exact either way. The evaluations are added to ``spent``."""
    try:
        bounds: IntervalEval | None = IntervalEval(
            expr, "\0periods", env, {name: Linear(value, step) for name, value, step in moving}
        )
    except (SyntaxError, AttributeError):
        bounds = None
    point = dict(env)

    def value_at(times: int) -> Any:
        for name, value, step in moving:
            point[name] = value + times * step
        return expr(point, where=where)

    changed = first_change(bounds, value_at, target, first, periods, spent)
    return periods if changed is None else changed - 1
