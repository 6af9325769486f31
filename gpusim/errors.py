"""Errors that gpusim reports to users as one clear line; each class carries the CLI's exit status.

Exit statuses (``gpusim --help`` lists them): 0 ok, 2 bad input or usage, 3 refused by a hardware or
budget check, 4 deadlock, 5 over a limit (simulated work or time). Every error is picklable and can be
rebuilt from its ``args`` (so it crosses process pools intact).
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import ValidationError

QUOTE_CHARS = 200
"""The most characters of user input a message quotes."""

OVERRIDE_SPELLINGS = {
    "--set": "--set {item}",
    "keyword": "keyword argument {item}",
    "row": "the row's {item}",
    "point": "the sweep point's {item} (--grid or --set)",
}
"""How a message names an override of a problem size or schedule parameter, by where it came from: the
command line's ``--set``, a keyword argument of a public API call, a measurement row's columns, or a
sweep point's ``--grid`` and ``--set`` values."""
_override_source: ContextVar[str | None] = ContextVar("gpusim_override_source", default=None)
_NO_VALUE = object()


def override_name(key: str, value: Any = _NO_VALUE) -> str:
    """An override as the user wrote it: ``--set KEY[=VALUE]`` from the command line (and wherever no
    caller said otherwise), ``keyword argument KEY[=VALUE]`` inside a public API call, ``the row's KEY``
    for a measurement row."""
    item = key if value is _NO_VALUE else f"{key}={quote(value, 60)}"
    return OVERRIDE_SPELLINGS[_override_source.get() or "--set"].format(item=item)


@contextmanager
def overrides_from(source: str, *, outermost: bool = False) -> Iterator[None]:
    """Name overrides as coming from ``source`` (a key of :data:`OVERRIDE_SPELLINGS`) inside the block;
    ``outermost``: only if no enclosing block said where they came from (the command line calls the API)."""
    if source not in OVERRIDE_SPELLINGS:
        raise ValueError(f"unknown override source {source!r}")
    if outermost and _override_source.get() is not None:
        yield
        return
    token = _override_source.set(source)
    try:
        yield
    finally:
        _override_source.reset(token)


def quote(text: Any, limit: int = QUOTE_CHARS) -> str:
    """User input fit for a one-line message: whitespace runs collapsed, at most ``limit`` characters."""
    try:
        raw = str(text)
    except ValueError:  # an int past Python's 4,300-digit conversion limit
        raw = "a whole number of more than 4,300 digits"
    flat = " ".join(raw[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def kind_of(value: Any) -> str:
    """A value of the wrong kind, for a one-line message: its type and a bounded repr
    (``list [1, 2, 3, ...]``; reprlib keeps a huge container from being printed whole)."""
    import reprlib

    return f"{type(value).__name__} {quote(reprlib.repr(value), 60)}"


class GpusimError(Exception):
    """A user-facing error: bad input, an unknown name, or a schedule that does not fit."""

    exit_code: int = 2
    """The ``gpusim`` command's exit status for this error."""


class InputError(GpusimError):
    """A file, field or value that gpusim cannot accept."""


class ArgumentError(InputError, TypeError):
    """A Python API function called with arguments its signature does not take (an unknown keyword, one
    positional argument too many, a required one missing). Also a TypeError, as Python raises there."""


def checked_call(fn: Any, name: str | None = None) -> Any:
    """Wrap a public API function so that a call its signature cannot bind raises :class:`ArgumentError`
    (a one-line GpusimError naming the function and what it accepts) instead of a bare TypeError."""
    import functools
    import inspect

    signature = inspect.signature(fn)
    accepted = ", ".join(p for p in signature.parameters if p != "self")
    shown = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ArgumentError(f"gpusim.{shown}: {quote(exc)}; it takes ({quote(accepted)})") from None
        with overrides_from("keyword", outermost=True):
            return fn(*args, **kwargs)

    return wrapper


class UnknownNameError(InputError):
    """A name (arch id, schedule, op, symbol) that gpusim does not know."""

    def __init__(self, kind: str, name: str, known: Iterable[str], where: str = "") -> None:
        known_list = tuple(sorted({str(k) for k in known}))
        super().__init__(kind, name, known_list, where)  # args rebuild the error (simpy, pickling)
        self.kind = kind
        self.name = name
        self.known = known_list
        self.where = where
        close = difflib.get_close_matches(str(name)[:QUOTE_CHARS], known_list, n=1, cutoff=0.6)
        self.suggestion = close[0] if close else None
        hint = (
            f"did you mean '{self.suggestion}'?"
            if self.suggestion
            else f"known: {quote(', '.join(known_list), 600)}"
        )
        prefix = f"{quote(where, 2 * QUOTE_CHARS)}: " if where else ""
        self.message = f"{prefix}unknown {kind} '{quote(name)}'; {hint}"

    def __str__(self) -> str:
        return self.message


class ScheduleRefused(GpusimError):
    """A schedule that does not fit the hardware or is not legal on the arch."""

    exit_code = 3


class DeadlockError(GpusimError):
    """The simulation stopped with roles still blocked."""

    exit_code = 4


class LimitExceeded(GpusimError):
    """A simulation or search ran past a limit its caller set (simulated work, or a deadline)."""

    exit_code = 5


class SimulationLimitExceeded(LimitExceeded):
    """A simulation needed more simulated work (events) than its limit (exit status 5).

    The limit counts simulated events, never wall-clock time, so the same command stops (or not) on
    any machine. The message names the limit and how to raise it."""


class HorizonReached(LimitExceeded):
    """A simulation reached the simulated time its caller said it need not go past (a search's best
    time so far): the kernel takes at least that long, so it cannot be the faster candidate."""


class LaunchTooLarge(LimitExceeded):
    """A launch with more CTAs than gpusim plans (exit status 5): the work plan holds one record per CTA,
    so its size bounds the memory and time a prediction takes before the first event."""


SimulationTimeout = SimulationLimitExceeded
"""Former name (the limit used to be wall-clock)."""


EXIT_CODES_HELP = (
    "Exit status: 0 ok; 2 bad input or usage; 3 refused by a hardware or budget check; "
    "4 deadlock; 5 over a limit; 130 Ctrl-C; 143 SIGTERM."
)


def _field_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if item == "[key]":  # pydantic marks an invalid dict key this way; the key is the previous item
            continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "decimal": "a number",
    "complex": "a number",
    "string": "text (a string)",
    "str": "text (a string)",
    "bool": "true or false",
    "list": "a list",
    "tuple": "a list",
    "set": "a list",
    "frozen set": "a list",
    "dict": "a mapping (key: value pairs)",
    "model": "a mapping (key: value pairs)",
    "model attributes": "a mapping (key: value pairs)",
    "dataclass": "a mapping (key: value pairs)",
    "none": "nothing (null)",
}


def _yaml_value(value: Any, limit: int = 60) -> str:
    """A short description of a parsed YAML value, in YAML's own terms (never spans lines)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        kind = "text"
    elif isinstance(value, dict):
        kind = "a mapping"
    elif isinstance(value, list | tuple):
        kind = "a list"
    else:
        kind = type(value).__name__
    text = _SHORT_REPR.repr(value)  # bounded: never walks the whole of a large (or alias-expanded) value
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{kind} {text}"


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = 80
_SHORT_REPR.maxother = 80
_SHORT_REPR.maxlong = 40


def _bound(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _describe(error: dict[str, Any]) -> str:
    """What was expected and what was found, in words a YAML author understands, on one line."""
    kind = error.get("type", "")
    value = error.get("input")
    ctx = error.get("ctx") or {}
    found = _yaml_value(value)
    if kind == "extra_forbidden":
        return "unknown key (not part of the schema; check the spelling)"
    if kind == "missing":
        return "required field is missing"
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        ops = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
        bound = _bound(next(iter(ctx.values()), "?"))
        return f"expected a number {ops[kind]} {bound}, got {found}"
    if kind == "multiple_of":
        return f"expected a multiple of {_bound(ctx.get('multiple_of', '?'))}, got {found}"
    if kind == "finite_number":
        return f"expected a finite number, got {found}"
    if kind == "string_pattern_mismatch":
        return f"expected text matching the pattern {ctx.get('pattern', '?')}, got {found}"
    if kind in {"too_short", "too_long", "string_too_short", "string_too_long"}:
        return f"{str(error.get('msg', kind)).rstrip('.')}, got {found}"
    if kind.endswith("_type") or kind.endswith("_parsing") or kind == "int_from_float":
        base = kind.removesuffix("_type").removesuffix("_parsing").replace("_", " ")
        if kind == "int_from_float":
            base = "int"
        expected = _EXPECTED.get(base, base)
        return f"expected {expected}, got {found}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '?')}, got {found}"
    if kind in {"value_error", "assertion_error"}:
        message = str(error.get("msg", kind))
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        return " ".join(message.split())
    return " ".join(str(error.get("msg", kind)).split())


def format_validation_error(source: str, exc: ValidationError) -> str:
    """Turn a pydantic ValidationError into one line naming the file, the field and what was expected."""
    errors = exc.errors()
    first = errors[0]
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    path = quote(_field_path(first["loc"]))
    where = f" field '{path}':" if path else ""
    return f"{source}:{where} {quote(_describe(first), 2 * QUOTE_CHARS)}{more}"
