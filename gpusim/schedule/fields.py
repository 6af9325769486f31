"""Field types shared by the schedule schema and the statement models.

An expression field holds a number, a boolean or expression text (see :mod:`gpusim.schedule.expr`).
Range-checked variants refuse a constant out of range when the file is read; a value computed from
symbols is checked where it is evaluated (:func:`checked`), with the schedule path in the error.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from gpusim.errors import InputError
from gpusim.schedule.expr import Expr, ExprError, as_expr

EXPR_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "number"}, {"type": "boolean"}, {"type": "string"}],
    "description": "a number, true/false, or an expression over problem, params and loop symbols",
}

ExprLike = StrictInt | StrictFloat | StrictStr | StrictBool
"""A number, a boolean or an expression, kept raw (evaluated when the schedule is resolved)."""


def _closest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else f"known: {', '.join(sorted(known)) or 'none'}"


class StrictModel(BaseModel):
    """A frozen model that refuses unknown keys, naming the closest valid key."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = [f.alias or name for name, f in cls.model_fields.items()]
            for key in data:
                if key not in known and key not in cls.model_fields:
                    raise ValueError(f"unknown key '{key}'; {_closest(str(key), known)}")
        return data


def _to_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    if value is None or not isinstance(value, bool | int | float | str):
        raise ValueError(f"expected a number, true/false or an expression, got {value!r}")
    try:
        return as_expr(value)
    except ExprError as exc:
        raise ValueError(str(exc)) from None


def _serialize_expr(expr: Expr) -> Any:
    return expr({}) if expr.is_constant else expr.text


def _at_least(bound: int) -> Any:
    def check(expr: Expr) -> Expr:
        if expr.is_constant:
            value = expr({})
            if isinstance(value, bool) or not isinstance(value, int | float) or value < bound:
                raise ValueError(f"expected a number >= {bound}, got {value!r}")
        return expr

    return AfterValidator(check)


_EXPR = (PlainValidator(_to_expr), PlainSerializer(_serialize_expr), WithJsonSchema(EXPR_JSON_SCHEMA))
AnyExpr = Annotated[Expr, *_EXPR]
"""Any expression (booleans, guards)."""
SizeExpr = Annotated[Expr, *_EXPR, _at_least(0)]
"""Bytes, elements or extents: >= 0."""
CountExpr = Annotated[Expr, *_EXPR, _at_least(1)]
"""Counts that must be at least one (multicast, every, cta_group)."""
IndexExpr = SizeExpr
"""Offsets, chunk indices, pending counts: >= 0."""


def _raw_at_least(bound: int) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool) and value < bound:
            raise ValueError(f"expected a number >= {bound} (or an expression), got {value!r}")
        return value

    return AfterValidator(check)


RawSize = Annotated[ExprLike, _raw_at_least(0)]
"""A raw (resolve-time) expression whose constant must be >= 0."""
RawCount = Annotated[ExprLike, _raw_at_least(1)]
"""A raw (resolve-time) expression whose constant must be >= 1."""


def checked(
    value: Any, where: str, *, minimum: float = 0, whole: bool = False, what: str = "a number"
) -> Any:
    """``value`` (an evaluated expression) if it is a number >= ``minimum`` (a whole number when ``whole``);
    else an InputError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(f"{where}: expected {what}, got {value!r}")
    if value < minimum:
        raise InputError(f"{where}: expected {what} >= {minimum:g}, got {value:g}")
    if whole and isinstance(value, float) and not value.is_integer():
        raise InputError(f"{where}: expected a whole number, got {value:g}")
    return value
