"""Names a schedule's problem and params may not take: the symbols gpusim injects into its expressions,
the expression functions, and the options of :func:`gpusim.predict` (``--set costs=...`` would collide
with ``--costs``). Refused when a schedule is read and when ``--set``, ``--grid`` or a sequence's ``set:``
names one."""

from __future__ import annotations

from gpusim.schedule.expr import FUNCTIONS
from gpusim.schedule.symbols import LOADER_SYMBOLS, ROLE_SYMBOLS, UNIT_SYMBOLS

PREDICT_OPTIONS: frozenset[str] = frozenset(
    {"schedule", "arch", "costs", "model", "record", "exact", "attribute", "deadline_s", "max_events",
     "on_progress", "resources"}
)  # fmt: skip
"""Keyword arguments of gpusim.predict, gpusim.compare and the roofline besides the problem."""


COMMAND_LINE_FLAGS: dict[str, str] = {
    "schedule": "the first argument",
    "arch": "--arch",
    "costs": "--calibrated, --datasheet or --overlay",
    "model": "--model",
    "record": "--trace or --plot",
    "exact": "--exact",
    "max_events": "--max-events",
    "resources": "--resources",
}
"""Where ``gpusim predict`` takes each option it has a flag for."""


def refuse_predict_option(key: str, where: str) -> None:
    """Refuse ``key`` as a problem value or parameter given at ``where`` (``--set costs``, ``--grid
    costs=...``, a sequence's ``set: {costs: ...}``) when it is one of predict's own options."""
    if key in PREDICT_OPTIONS:
        from gpusim.errors import InputError

        raise InputError(f"{where}: {reserved_reason(key)}")


def reserved_reason(key: str) -> str | None:
    """Why ``key`` cannot name a problem value or parameter, or None when it can."""
    if key in PREDICT_OPTIONS:
        flag = COMMAND_LINE_FLAGS.get(key)
        where = f" (on the command line: {flag})" if flag else ""
        return f"'{key}' is an option of gpusim.predict{where}, not a problem value or parameter"
    if key in FUNCTIONS:
        return f"'{key}' is an expression function"
    for table, who in ((LOADER_SYMBOLS, "the loader"), (UNIT_SYMBOLS, "the tile scheduler"),
                       (ROLE_SYMBOLS, "the interpreter")):  # fmt: skip
        if key in table:
            return f"'{key}' is a symbol {who} sets ({table[key]})"
    return None
