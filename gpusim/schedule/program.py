"""Role programs: a closed set of ops parsed into frozen statements with compiled expressions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusim.errors import InputError, UnknownNameError
from gpusim.schedule.expr import Expr, ExprError, as_expr

# op -> (primary argument for the scalar shorthand, {argument: kind}); kinds: expr, name, exprs, at, names
OP_ARGS: dict[str, tuple[str | None, dict[str, str]]] = {
    "tiles": (None, {"every": "expr", "offset": "expr"}),
    "for": (None, {}),  # {var: count} or {var: [start, stop]}
    "turn": ("name", {"name": "name"}),
    "acquire": ("buf", {"buf": "name"}),
    "commit": ("buf", {"buf": "name"}),
    "wait": ("buf", {"buf": "name", "bar": "name", "chunk": "expr", "at": "at"}),
    "release": ("buf", {"buf": "name", "keep": "expr"}),
    "arrive": ("bar", {"bar": "name", "at": "at"}),
    "sync": ("bar", {"bar": "name"}),
    "syncthreads": (None, {}),
    "wait_async": (None, {"queue": "name", "pending": "expr"}),
    "tma_load": (None, {"buf": "name", "bytes": "expr", "operand": "name", "multicast": "expr",
                        "chunk": "expr", "chunks": "exprs", "at": "at"}),
    "tma_store": (None, {"buf": "name", "bytes": "expr"}),
    "cp_async": (None, {"buf": "name", "bytes": "expr", "operand": "name"}),
    "ldg": (None, {"bytes": "expr", "operand": "name"}),
    "stg": (None, {"bytes": "expr"}),
    "lds": (None, {"buf": "name", "bytes": "expr", "async": "expr"}),
    "sts": (None, {"buf": "name", "bytes": "expr"}),
    "mma": (None, {"unit": "name", "mnk": "exprs", "instr": "exprs", "a": "name", "dtype": "name",
                   "cta_group": "expr", "acc": "name", "reads": "names",
                   # operand majorness in smem (k | mn; default k), and block scaling (elements per scale, scale format)
                   "a_major": "name", "b_major": "name", "scale_vec": "expr", "scale_dtype": "name"}),
    "tmem_load": (None, {"bytes": "expr"}),
    "tmem_store": (None, {"bytes": "expr"}),
    "cuda": (None, {"mix": "name", "ops": "ops", "elems": "expr"}),
    "reduce": (None, {"bytes": "expr", "mode": "name"}),
}  # fmt: skip
BLOCK_OPS = frozenset({"tiles", "for", "turn"})
MODIFIERS = frozenset({"if", "label", "do"})
QUEUES = frozenset({"ldg", "cp_async", "wgmma", "tma_store", "tmem_ld", "lds"})
REQUIRED_ARGS: dict[str, tuple[str, ...]] = {
    "tma_load": ("buf", "bytes"),
    "tma_store": ("bytes",),
    "cp_async": ("bytes",),
    "ldg": ("bytes",),
    "stg": ("bytes",),
    "lds": ("bytes",),
    "sts": ("bytes",),
    "mma": ("unit", "mnk"),
    "tmem_load": ("bytes",),
    "tmem_store": ("bytes",),
    "cuda": ("elems",),
    "wait_async": ("queue", "pending"),
    "reduce": ("bytes",),
    "turn": ("name",),
}


@dataclass(frozen=True, slots=True)
class Stmt:
    """One program statement: an op, its compiled arguments, an optional guard and a body."""

    op: str
    args: Mapping[str, Any]
    where: str
    guard: Expr | None = None
    label: str | None = None
    body: tuple[Stmt, ...] = field(default_factory=tuple)


def _compile_arg(kind: str, value: Any, where: str) -> Any:
    if kind == "expr":
        return as_expr(value)
    if kind == "name":
        if not isinstance(value, str):
            raise InputError(f"{where}: expected a name, got {value!r}")
        return value
    if kind == "names":
        items = value if isinstance(value, list) else [value]
        return tuple(str(v) for v in items)
    if kind == "exprs":
        if not isinstance(value, list):
            raise InputError(f"{where}: expected a list such as [m, n, k], got {value!r}")
        return tuple(as_expr(v) for v in value)
    if kind == "at":
        if not isinstance(value, dict):
            raise InputError(f"{where}: expected a mapping of loop variables, got {value!r}")
        return {str(k): as_expr(v) for k, v in value.items()}
    if kind == "ops":
        if not isinstance(value, dict) or not all(isinstance(v, int | float) for v in value.values()):
            raise InputError(
                f"{where}: expected a mapping of instruction class to ops per element, got {value!r}"
            )
        return {str(k): float(v) for k, v in value.items()}
    raise AssertionError(kind)


def parse_statement(raw: Any, where: str) -> Stmt:
    """Parse one YAML statement (a mapping with one op key, or a bare op name)."""
    if isinstance(raw, str):
        raw = {raw: None}
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"{where}: expected a statement mapping such as {{acquire: ab}}, got {raw!r}")
    op_keys = [k for k in raw if k not in MODIFIERS]
    if len(op_keys) != 1:
        if not op_keys:
            raise InputError(f"{where}: statement has no op (only {', '.join(map(str, raw))})")
        raise InputError(f"{where}: statement has several ops {op_keys}; write one op per statement")
    op = str(op_keys[0])
    if op not in OP_ARGS:
        raise UnknownNameError("op", op, OP_ARGS, where=where)
    where = f"{where}.{op}"
    value = raw[op]
    primary, allowed = OP_ARGS[op]
    if op == "for":
        args = _parse_for(value, where)
    elif value is None:
        args = {}
    elif isinstance(value, dict):
        args = {}
        for key, item in value.items():
            if key not in allowed:
                raise UnknownNameError("argument", str(key), allowed, where=where)
            args[key] = _compile_arg(allowed[key], item, f"{where}.{key}")
    elif primary is not None:
        args = {primary: _compile_arg(allowed[primary], value, where)}
    else:
        raise InputError(f"{where}: expected a mapping of arguments, got {value!r}")
    for required in REQUIRED_ARGS.get(op, ()):
        if required not in args:
            raise InputError(f"{where}: missing argument '{required}'")
    if op == "wait" and ("buf" in args) == ("bar" in args):
        raise InputError(f"{where}: give exactly one of 'buf' or 'bar'")
    if op == "cuda" and ("mix" in args) == ("ops" in args):
        raise InputError(f"{where}: give exactly one of 'mix' or 'ops'")
    if op == "wait_async" and args["queue"] not in QUEUES:
        raise UnknownNameError("async queue", args["queue"], QUEUES, where=where)
    body_raw = raw.get("do")
    if op in BLOCK_OPS:
        if not isinstance(body_raw, list) or not body_raw:
            raise InputError(f"{where}: '{op}' needs a non-empty 'do:' list")
        body = parse_program(body_raw, f"{where}.do")
    elif body_raw is not None:
        raise InputError(f"{where}: only tiles, for and turn take a 'do:' body")
    else:
        body = ()
    guard = as_expr(raw["if"]) if "if" in raw else None
    label = str(raw["label"]) if "label" in raw else None
    return Stmt(op=op, args=args, where=where, guard=guard, label=label, body=body)


def _parse_for(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) != 1:
        raise InputError(f"{where}: expected {{var: count}} or {{var: [start, stop]}}, got {value!r}")
    ((var, bounds),) = value.items()
    try:
        if isinstance(bounds, list):
            if len(bounds) != 2:
                raise InputError(f"{where}.{var}: expected [start, stop], got {bounds!r}")
            start, stop = as_expr(bounds[0]), as_expr(bounds[1])
        else:
            start, stop = Expr(0), as_expr(bounds)
    except ExprError as exc:
        raise InputError(f"{where}.{var}: {exc}") from None
    return {"var": str(var), "start": start, "stop": stop}


def parse_program(raw: Any, where: str) -> tuple[Stmt, ...]:
    """Parse a list of statements."""
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of statements, got {type(raw).__name__}")
    return tuple(parse_statement(item, f"{where}[{i}]") for i, item in enumerate(raw))


def walk(stmts: tuple[Stmt, ...], loop_vars: tuple[str, ...] = ()):
    """Every statement with the loop variables enclosing it (``tile`` for the tiles loop)."""
    for stmt in stmts:
        yield stmt, loop_vars
        if stmt.op == "tiles":
            yield from walk(stmt.body, (*loop_vars, "tile"))
        elif stmt.op == "for":
            yield from walk(stmt.body, (*loop_vars, stmt.args["var"]))
        elif stmt.body:
            yield from walk(stmt.body, loop_vars)
