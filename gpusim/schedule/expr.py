"""A small safe expression language for schedule fields, compiled to closures (never ``eval``).

Supported: integer, float and string literals (strings for comparing text problem values such as
``op == "triad"``), names, ``+ - * / // % **``, unary ``- not``, comparisons
(chained), ``and``/``or``, conditional ``a if c else b``, and calls to ``min``, ``max``, ``ceil_div``,
``floor``, ``ceil``, ``abs``, ``log2``, ``pow2_ceil``, ``int``. Fields that hold names (a dtype, a
buffer) are not expressions; only numeric and boolean fields go through here.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from gpusim.errors import InputError, UnknownNameError

Env = Mapping[str, Any]
Compiled = Callable[[Env], Any]


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
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class ExprError(InputError):
    """An expression that cannot be parsed or evaluated."""


class Expr:
    """A compiled expression: ``Expr("ceil_div(M, BM)")(env)``; also remembers the names it reads."""

    __slots__ = ("_fn", "names", "text")

    def __init__(self, text: str | int | float | bool) -> None:
        self.text = str(text)
        if isinstance(text, bool | int | float):
            value = text
            self._fn: Compiled = lambda env: value
            self.names: frozenset[str] = frozenset()
        else:
            self._fn, self.names = _compile_text(text)

    def __call__(self, env: Env, where: str = "") -> Any:
        try:
            return self._fn(env)
        except KeyError as exc:
            name = exc.args[0]
            raise UnknownNameError(
                "symbol", str(name), env.keys(), where=where or f"expression '{self.text}'"
            ) from None
        except ZeroDivisionError:
            raise ExprError(f"{where or 'expression'}: '{self.text}' divides by zero") from None
        except (TypeError, ValueError) as exc:
            raise ExprError(f"{where or 'expression'}: '{self.text}' cannot be evaluated: {exc}") from None

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    @property
    def is_constant(self) -> bool:
        """Whether the expression reads no names."""
        return not self.names


@lru_cache(maxsize=4096)
def _compile_text(text: str) -> tuple[Compiled, frozenset[str]]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"expression '{text}' is not valid: {exc.msg}") from None
    names: set[str] = set()
    return _compile(tree.body, text, names), frozenset(names)


def _compile(node: ast.AST, text: str, names: set[str]) -> Compiled:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        value = node.value
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
            return lambda env: -operand(env)
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
            raise UnknownNameError("function", fname, FUNCTIONS, where=f"expression '{text}'")
        fn = FUNCTIONS[fname]
        args = [_compile(a, text, names) for a in node.args]
        return lambda env: fn(*(a(env) for a in args))
    raise ExprError(f"expression '{text}': '{ast.unparse(node)}' is not allowed (only arithmetic, comparisons, "
                    f"and/or/not, 'x if c else y' and {', '.join(FUNCTIONS)})")  # fmt: skip


def as_expr(value: Any) -> Expr:
    """An Expr from a YAML scalar (number, bool or expression text)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | int | float | str):
        return Expr(value)
    raise ExprError(f"expected a number or an expression, got {type(value).__name__} {value!r}")
