"""Schedule composition, resolved on the YAML mapping before it is validated.

- ``extends: <schedule or part>`` (or a list of them): start from those files' mappings, composed in
  order, then apply this file's keys on top. Mappings merge key by key (recursively); any other value
  replaces; ``null`` removes the key. A name is a built-in schedule or a part under
  ``schedules/parts/`` (``parts/gemm``); a path ending in ``.yaml`` is relative to the file naming it.
- ``templates: {name: {args: {...}, role: {...}}}`` or ``{args: {...}, do: [...]}``: reusable roles and
  statement lists. ``${arg}`` in a template is replaced by the argument (a whole ``${arg}`` value keeps
  the argument's type; inside an expression a compound argument is parenthesised).
- A role ``{use: <template>, with: {...}, <overrides>}`` is the template's role with the overrides
  merged on top; a statement ``{use: <template>, with: {...}}`` stands for the template's statements.
- A statement ``{when: <condition>, do: [...]}`` stands for its statements, each guarded by the
  condition (and by its own ``if:``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpusim.errors import InputError, UnknownNameError, quote
from gpusim.resources import builtin_dir
from gpusim.yamlio import read_yaml_mapping

MAX_DEPTH = 16
"""How deep extends chains and templates that use templates may nest."""
MAX_EXPANDED_STATEMENTS = 20_000
"""Most statements one role's program may hold once its templates are expanded (the shipped schedules
hold under a few hundred); a template that uses another several times multiplies, so this bounds the
memory and time of reading a schedule."""
_ARG = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_SIMPLE = re.compile(r"^\s*[\w.]+\s*$")


def compose(data: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """The schedule mapping with ``extends``, ``templates``, ``use`` and ``when`` resolved."""
    src = str(path) if path else "schedule"
    merged = _merged(data, path, ())
    templates = merged.pop("templates", None) or {}
    if not isinstance(templates, dict):
        raise InputError(
            f"{src}: templates: expected a mapping of template names, got {quote(repr(templates), 60)}"
        )
    roles = merged.get("roles")
    if isinstance(roles, dict):
        merged["roles"] = {
            name: _expand_role(role, templates, f"{src}: roles.{name}") for name, role in roles.items()
        }
    return merged


def _merged(data: dict[str, Any], path: Path | None, seen: tuple[Path, ...]) -> dict[str, Any]:
    if len(seen) > MAX_DEPTH:
        raise InputError(f"{path}: extends nests more than {MAX_DEPTH} files deep")
    data = dict(data)
    bases = data.pop("extends", None)
    if bases is None:
        return data
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise InputError(
            f"{path}: extends: expected a schedule name, a part or a list of them, got {quote(repr(bases), 60)}"
        )
    merged: dict[str, Any] = {}
    for base in bases:
        base_path = resolve_base(base, path)
        if base_path in seen or base_path == path:
            raise InputError(f"{path}: extends '{base}' makes a cycle")
        merged = merge(merged, _merged(read_yaml_mapping(base_path), base_path, (*seen, base_path)))
    return merge(merged, data)


def schedules_dir() -> Path:
    """Directory of the built-in schedules (and their parts/)."""
    return builtin_dir("schedules")


def resolve_base(ref: str, path: Path | None) -> Path:
    """The file an ``extends`` entry ``ref`` of the schedule at ``path`` names: a ``.yaml`` path relative
    to that file, else a built-in schedule or part; UnknownNameError when there is none."""
    if ref.endswith((".yaml", ".yml")):
        target = (path.parent if path else Path.cwd()) / ref
    else:
        target = schedules_dir() / f"{ref}.yaml"
    try:
        found = target.is_file()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        found = False
    if not found:
        known = [p.stem for p in schedules_dir().glob("*.yaml")]
        known += [f"parts/{p.stem}" for p in (schedules_dir() / "parts").glob("*.yaml")]
        raise UnknownNameError("schedule or part", ref, known, where=f"{path}: extends")
    return target


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` applied to ``base``: mappings merge recursively, other values replace, null removes."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


# ---- templates ------------------------------------------------------------------------------------------


def _template(templates: dict[str, Any], name: Any, kind: str, where: str) -> dict[str, Any]:
    if not isinstance(name, str) or name not in templates:
        raise UnknownNameError("template", str(name), templates, where=f"{where}.use")
    template = templates[name]
    if not isinstance(template, dict) or not isinstance(template.get(kind), dict | list):
        other = "a role" if kind == "do" else "statements"
        raise InputError(f"{where}.use: template '{name}' has no '{kind}:' ({other} cannot stand here)")
    return template


def _arguments(template: dict[str, Any], given: Any, name: str, where: str) -> dict[str, Any]:
    defaults = template.get("args") or {}
    if not isinstance(defaults, dict):
        raise InputError(f"{where}.use: template '{quote(name, 60)}': args: expected a mapping of argument names "
                         f"to defaults (null: required), got {quote(repr(defaults), 60)}")  # fmt: skip
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise InputError(
            f"{where}.with: expected a mapping of template arguments, got {quote(repr(given), 60)}"
        )
    for key in given:
        if key not in defaults:
            raise UnknownNameError(
                f"argument of template '{name}'", str(key), defaults, where=f"{where}.with"
            )
    args = {**defaults, **given}
    missing = [k for k, v in args.items() if v is None]
    if missing:
        raise InputError(f"{where}.with: template '{name}' needs argument '{missing[0]}'")
    return args


def substitute(value: Any, args: dict[str, Any], where: str) -> Any:
    """``value`` with every ``${arg}`` replaced (in strings and mapping keys, recursively)."""
    if isinstance(value, str):
        whole = _ARG.fullmatch(value.strip())
        if whole:
            return _lookup(args, whole.group(1) or whole.group(2), where)

        def text(match: re.Match[str]) -> str:
            arg = _lookup(args, match.group(1) or match.group(2), where)
            shown = str(arg)
            return shown if not isinstance(arg, str) or _SIMPLE.match(shown) else f"({shown})"

        return _ARG.sub(text, value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = substitute(k, args, where)
            if not isinstance(key, str | int | float | bool):
                raise InputError(f"{where}: the key '{quote(str(k), 60)}' became {type(key).__name__} "
                                 f"{quote(repr(key), 60)}; a template argument used as a key must be a word")  # fmt: skip
            out[key] = substitute(v, args, where)
        return out
    if isinstance(value, list):
        return [substitute(v, args, where) for v in value]
    return value


def _lookup(args: dict[str, Any], name: str, where: str) -> Any:
    if name not in args:
        raise UnknownNameError("template argument", name, args, where=where)
    return args[name]


def _expand_role(role: Any, templates: dict[str, Any], where: str, depth: int = 0) -> Any:
    if not isinstance(role, dict):
        return role
    if "use" in role:
        if depth > MAX_DEPTH:
            raise InputError(f"{where}.use: templates nest more than {MAX_DEPTH} deep")
        role = dict(role)
        name = role.pop("use")
        template = _template(templates, name, "role", where)
        args = _arguments(template, role.pop("with", None), name, where)
        body = substitute(template["role"], args, f"{where} (template '{name}')")
        return _expand_role(merge(body, role), templates, where, depth + 1)
    if isinstance(role.get("program"), list):
        role = {**role, "program": expand_statements(role["program"], templates, f"{where}.program")}
    return role


def expand_statements(items: list[Any], templates: dict[str, Any], where: str, depth: int = 0,
                      budget: list[int] | None = None) -> list[Any]:  # fmt: skip
    """Statements with ``use`` and ``when`` replaced by the statements they stand for (at most
    :data:`MAX_EXPANDED_STATEMENTS` in one program, nested blocks included)."""
    if depth > MAX_DEPTH:
        raise InputError(f"{where}: templates or when blocks nest more than {MAX_DEPTH} deep")
    budget = [MAX_EXPANDED_STATEMENTS] if budget is None else budget
    out: list[Any] = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        budget[0] -= 1
        if budget[0] < 0:
            raise InputError(f"{here}: the program expands to more than {MAX_EXPANDED_STATEMENTS:,} statements "
                             "(templates used inside templates multiply); use a loop (for:) instead of copies")  # fmt: skip
        if not isinstance(item, dict):
            out.append(item)
        elif "use" in item:
            extra = sorted(set(item) - {"use", "with", "if"})
            if extra:
                raise InputError(f"{here}: a 'use' statement takes only with: and if:, not {extra[0]}:")
            template = _template(templates, item["use"], "do", here)
            args = _arguments(template, item.get("with"), item["use"], here)
            body = substitute(template["do"], args, f"{here} (template '{item['use']}')")
            body = expand_statements(body, templates, here, depth + 1, budget)
            out.extend(_guarded(body, item.get("if")))
        elif "when" in item:
            extra = sorted(set(item) - {"when", "do"})
            if extra or not isinstance(item.get("do"), list):
                raise InputError(f"{here}: a 'when' block takes only do: (a list of statements)")
            body = expand_statements(item["do"], templates, f"{here}.do", depth + 1, budget)
            out.extend(_guarded(body, item["when"]))
        else:
            if isinstance(item.get("do"), list):
                item = {
                    **item,
                    "do": expand_statements(item["do"], templates, f"{here}.do", depth + 1, budget),
                }
            out.append(item)
    return out


def _guarded(statements: list[Any], condition: Any) -> list[Any]:
    if condition is None or condition is True:
        return statements
    out = []
    for stmt in statements:
        if not isinstance(stmt, (str, dict)):  # not a statement: left for the statement check to refuse
            out.append(stmt)
            continue
        stmt = {stmt: None} if isinstance(stmt, str) else dict(stmt)
        stmt["if"] = both(condition, stmt.get("if"))
        out.append(stmt)
    return out


def both(first: Any, second: Any) -> Any:
    """The guard that holds when both guards hold (``None`` or ``true`` always holds)."""
    if second is None or second is True:
        return first
    if first is None or first is True:
        return second
    if first is False or second is False:
        return False
    return f"({first}) and ({second})"
