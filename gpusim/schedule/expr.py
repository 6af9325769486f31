"""A small safe expression language for schedule fields, compiled to closures (never ``eval``).

Supported: integer, float and string literals (strings for comparing text problem values such as
``op == "triad"``), names, ``+ - * / // % **``, unary ``- not``, comparisons
(chained), ``and``/``or``, conditional ``a if c else b``, and calls to ``min``, ``max``, ``ceil_div``,
``floor``, ``ceil``, ``abs``, ``log2``, ``pow2_ceil``, ``int``, and ``mla_splits``, ``mla_split_requests``,
``mla_split_segments`` (FlashMLA's split metadata, gpusim/schedule/splitkv.py). Fields that hold names (a dtype, a
buffer) are not expressions; only numeric and boolean fields go through here.
"""

from __future__ import annotations

import ast
import math
import operator
import reprlib
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from gpusim.errors import InputError, UnknownNameError, quote
from gpusim.schedule.splitkv import mla_split_requests, mla_split_segments, mla_splits

Env = Mapping[str, Any]
Compiled = Callable[[Env], Any]

MAX_TEXT_CHARS = 1000
"""The longest expression text accepted."""
MAX_NODES = 400
"""The most syntax nodes (names, numbers, operators) in one expression."""
MAX_DEPTH = 40
"""The deepest nesting of operators, calls and parentheses."""
MAX_INT_BITS = 96
"""Integers (literals and every intermediate result) stay below 2**96: far beyond any GPU problem, and
cheap to compute, so ``10**10**10`` is refused instead of computed."""
MAX_MAGNITUDE = float(2**MAX_INT_BITS)


class ExprError(InputError):
    """An expression that cannot be parsed or evaluated."""


class _Bound(ArithmeticError):
    """A value outside the evaluator's bounds (turned into an ExprError naming the expression)."""


def _checked(value: Any) -> Any:
    """``value`` if it is a bounded finite number (or not a number at all)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() >= MAX_INT_BITS:
            raise _Bound(f"an intermediate value exceeds 2**{MAX_INT_BITS}")
        return value
    if isinstance(value, complex):
        raise _Bound("the result is a complex number")
    if isinstance(value, float):
        if value != value:
            raise _Bound("the result is not a number (NaN)")
        if abs(value) >= MAX_MAGNITUDE:
            raise _Bound(f"an intermediate value exceeds 2**{MAX_INT_BITS} (or is infinite)")
    return value


def _number(value: Any) -> Any:
    """Arithmetic operands are numbers; text takes part only in comparisons."""
    if isinstance(value, str):
        raise TypeError(f"text '{quote(value, 40)}' in arithmetic")
    return value


def _pow(base: Any, exponent: Any) -> Any:
    base, exponent = _number(base), _number(exponent)
    big_int = isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0
    if big_int and (abs(base).bit_length() - 1) * exponent >= MAX_INT_BITS:
        raise _Bound(f"{base}**{exponent} exceeds 2**{MAX_INT_BITS}")
    return _checked(operator.pow(base, exponent))


def _arith(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        return _checked(op(_number(a), _number(b)))

    return apply


def _ceil_div(a: float, b: float) -> int:
    return -(-int(a) // int(b))


def _pow2_ceil(x: float) -> int:
    x = int(x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "ceil_div": _ceil_div,
    "floor": lambda x: math.floor(x),
    "ceil": lambda x: math.ceil(x),
    "abs": abs,
    "log2": math.log2,
    "pow2_ceil": _pow2_ceil,
    "int": int,
    "mla_splits": mla_splits,
    "mla_split_requests": mla_split_requests,
    "mla_split_segments": mla_split_segments,
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _arith(operator.add),
    ast.Sub: _arith(operator.sub),
    ast.Mult: _arith(operator.mul),
    ast.Div: _arith(operator.truediv),
    ast.FloorDiv: _arith(operator.floordiv),
    ast.Mod: _arith(operator.mod),
    ast.Pow: _pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class Expr:
    """A compiled expression: ``Expr("ceil_div(M, BM)")(env)``; also remembers the names it reads."""

    __slots__ = ("_fn", "names", "text")

    def __init__(self, text: str | int | float | bool) -> None:
        self.text = str(text) if not isinstance(text, int) or isinstance(text, bool) else _int_text(text)
        if isinstance(text, bool | int | float):
            if not isinstance(text, bool):
                try:
                    _checked(text)
                except _Bound as exc:
                    raise ExprError(f"value {quote(self.text)} is out of range: {exc}") from None
            value = text
            self._fn: Compiled = lambda env: value
            self.names: frozenset[str] = frozenset()
        else:
            self._fn, self.names = _compile_text(text)

    def __call__(self, env: Env, where: str = "") -> Any:
        try:
            return _checked(self._fn(env))
        except KeyError as exc:
            name = exc.args[0]
            raise UnknownNameError(
                "symbol", str(name), env.keys(), where=where or f"expression '{quote(self.text)}'"
            ) from None
        except ZeroDivisionError:
            raise ExprError(f"{where or 'expression'}: '{quote(self.text)}' divides by zero") from None
        except _Bound as exc:
            raise ExprError(
                f"{where or 'expression'}: '{quote(self.text)}' is out of range: {quote(exc)}"
            ) from None
        except OverflowError:
            raise ExprError(
                f"{where or 'expression'}: '{quote(self.text)}' is out of range: a result is too large"
            ) from None
        except (TypeError, ValueError, ArithmeticError, RecursionError, MemoryError) as exc:
            raise ExprError(
                f"{where or 'expression'}: '{quote(self.text)}' cannot be evaluated: {quote(exc)}"
            ) from None

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    @property
    def is_constant(self) -> bool:
        """Whether the expression reads no names."""
        return not self.names


def _int_text(value: int) -> str:
    """Decimal text of an int, without converting a huge one (which Python refuses past 4300 digits)."""
    return str(value) if value.bit_length() < 4 * MAX_INT_BITS else f"an integer of {value.bit_length()} bits"


def _depth(node: ast.AST) -> int:
    """The nesting depth of ``node`` (iterative: a deep tree cannot exhaust the Python stack here)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(current))
    return deepest


@lru_cache(maxsize=4096)
def _compile_text(text: str) -> tuple[Compiled, frozenset[str]]:
    shown = quote(text)
    if len(text) > MAX_TEXT_CHARS:
        raise ExprError(
            f"expression '{shown}' is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"expression '{shown}' is not valid: {quote(exc.msg)}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte; nesting the parser refuses
        raise ExprError(f"expression '{shown}' is not valid: {quote(exc) or type(exc).__name__}") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ExprError(f"expression '{shown}' has {nodes:,} terms; the limit is {MAX_NODES}")
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise ExprError(f"expression '{shown}' nests {depth} levels deep; the limit is {MAX_DEPTH}")
    names: set[str] = set()
    return _compile(tree.body, text, names), frozenset(names)


def _compile(node: ast.AST, text: str, names: set[str]) -> Compiled:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        value = node.value
        try:
            _checked(value)
        except _Bound as exc:
            raise ExprError(f"expression '{quote(text)}': a number is out of range: {exc}") from None
        return lambda env: value
    if isinstance(node, ast.Constant) and isinstance(node.value, bool | str):
        value = node.value  # strings only for comparisons with text problem values: op == "triad"
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        if name in ("True", "true"):
            return lambda env: True
        if name in ("False", "false"):
            return lambda env: False
        names.add(name)
        return lambda env: env[name]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        op = _BINOPS[type(node.op)]
        left, right = _compile(node.left, text, names), _compile(node.right, text, names)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.UnaryOp):
        operand = _compile(node.operand, text, names)
        if isinstance(node.op, ast.USub):
            return lambda env: -_number(operand(env))
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v, text, names) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(p(env) for p in parts)
        return lambda env: any(p(env) for p in parts)
    if isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
        first = _compile(node.left, text, names)
        rest = [
            (_CMPOPS[type(o)], _compile(c, text, names))
            for o, c in zip(node.ops, node.comparators, strict=True)
        ]

        def compare(env: Env) -> bool:
            left = first(env)
            for op, right_fn in rest:
                right = right_fn(env)
                if not op(left, right):
                    return False
                left = right
            return True

        return compare
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_compile(n, text, names) for n in (node.test, node.body, node.orelse))
        return lambda env: body(env) if test(env) else orelse(env)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fname = node.func.id
        if fname not in FUNCTIONS:
            raise UnknownNameError("function", fname, FUNCTIONS, where=f"expression '{quote(text)}'")
        fn = FUNCTIONS[fname]
        args = [_compile(a, text, names) for a in node.args]
        return lambda env: _checked(fn(*(_number(a(env)) for a in args)))
    raise ExprError(f"expression '{quote(text)}': '{quote(ast.unparse(node), 80)}' is not allowed (only arithmetic, "
                    f"comparisons, and/or/not, 'x if c else y' and {', '.join(FUNCTIONS)})")  # fmt: skip


def as_expr(value: Any) -> Expr:
    """An Expr from a YAML scalar (number, bool or expression text)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | int | float | str):
        return Expr(value)
    raise ExprError(
        f"expected a number or an expression, got {type(value).__name__} {quote(repr_short(value))}"
    )


def repr_short(value: Any) -> str:
    """A bounded repr (never walks the whole of a large value)."""
    return reprlib.repr(value)
