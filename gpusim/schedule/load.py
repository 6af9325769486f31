"""Load a schedule YAML, apply ``--set`` overrides, evaluate sizes and compile programs."""

from __future__ import annotations

import difflib
import math
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpusim.arch import Arch
from gpusim.dtypes import bytes_per_element, canonical_dtype
from gpusim.errors import (
    GpusimError,
    InputError,
    LaunchTooLarge,
    LimitExceeded,
    ScheduleRefused,
    UnknownNameError,
    format_validation_error,
    override_name,
    quote,
)
from gpusim.resources import builtin_dir
from gpusim.schedule.expr import Expr, ExprError, as_expr
from gpusim.schedule.ir import Barrier, Buffer, Launch, Operand, Role, Schedule
from gpusim.schedule.program import Stmt, compile_program
from gpusim.schedule.schema import ScheduleSpec
from gpusim.sim.streamk import DECOMPOSITIONS
from gpusim.yamlio import parse_yaml_text, read_yaml_mapping


def schedules_dir() -> Path:
    """Directory of the built-in schedule YAMLs."""
    return builtin_dir("schedules")


@cache
def builtin_schedule_names() -> tuple[str, ...]:
    """Names of the built-in schedules."""
    return tuple(p.stem for p in sorted(schedules_dir().glob("*.yaml")))


def schedule_path(name_or_path: str) -> Path:
    """The file of a built-in schedule name, or the given path."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path:
        return Path(name_or_path)
    if name_or_path not in builtin_schedule_names():
        raise UnknownNameError("schedule", name_or_path, builtin_schedule_names())
    return schedules_dir() / f"{name_or_path}.yaml"


class _CleanedErrors:
    """A ValidationError whose locations drop the union tag pydantic repeats before a statement's op key."""

    def __init__(self, exc: ValidationError) -> None:
        self._errors = exc.errors()

    def errors(self) -> list[dict[str, Any]]:
        out = []
        for error in self._errors:
            loc = list(error["loc"])
            loc = [item for i, item in enumerate(loc) if not (i + 1 < len(loc) and loc[i + 1] == item)]
            loc = [("for" if item == "for_" else item) for item in loc]
            out.append({**error, "loc": tuple(loc)})
        return out


def validate_spec(data: dict[str, Any], source: str) -> ScheduleSpec:
    """Validate a schedule mapping (composition already applied), with one-line errors naming ``source``."""
    try:
        return ScheduleSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError(format_validation_error(source, _CleanedErrors(exc))) from None  # type: ignore[arg-type]


def read_spec(name_or_path: str | Path) -> ScheduleSpec:
    """The parsed, unresolved schedule of a built-in name or YAML path (problem, params, defaults)."""
    return _read_spec(schedule_path(str(name_or_path)))


@cache
def _read_spec(path: Path) -> ScheduleSpec:
    from gpusim.schedule.compose import compose

    return validate_spec(compose(read_yaml_mapping(path), path), str(path))


MAX_PROBLEM_SIZE = 1 << 40
"""The largest problem size (M, N, K, sequence length, bytes, ...): 1 TiB of bytes, beyond any GPU."""
MAX_LAUNCH_CTAS = 1 << 19
"""The most CTAs (times splits) a launch may have: 524,288. The work plan holds one record per CTA (about
1.3 KB and 25 us each), so 2**22 CTAs took minutes and gigabytes before the first event; the measured
rows need at most ~25,000 and a 65536-cube GEMM with 128 x 256 tiles 131,072."""
MAX_STAGES = 1024
"""The most stages a buffer may have (real pipelines use 2 to 16)."""
SIZE_FLAGS = frozenset({"causal"})
"""Problem values that are 0 or 1 rather than sizes."""
SIZE_MAY_BE_ZERO = frozenset({"masked_m"})

MAX_SET_VALUE_CHARS = 1000
"""The longest ``--set`` value (an expression is bounded the same way)."""


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``KEY=VALUE`` and read VALUE as a YAML scalar (number, bool or text)."""
    if "=" not in text:
        raise InputError(f"--set '{quote(text)}': expected KEY=VALUE")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key:
        raise InputError(f"--set '{quote(text)}': empty key")
    if not key.isidentifier() or len(key) > 64:
        raise InputError(f"--set '{quote(key, 80)}': the key is not a parameter name (letters, digits, _)")
    from gpusim.schedule.reserved import refuse_predict_option

    refuse_predict_option(key, f"--set {key}")
    if len(raw) > MAX_SET_VALUE_CHARS:
        raise InputError(
            f"--set {key}: the value is {len(raw):,} characters long; the limit is {MAX_SET_VALUE_CHARS}"
        )
    value = parse_yaml_text(raw.strip(), f"--set {key}") if raw.strip() else ""
    if isinstance(value, dict | list):
        raise InputError(f"--set {key}: expected a number, true/false, a word or an expression, got a "
                         f"{'mapping' if isinstance(value, dict) else 'list'}")  # fmt: skip
    return key, value


def load_schedule(name_or_path: str, arch: Arch, overrides: dict[str, Any] | None = None) -> Schedule:
    """Resolve a schedule (built-in name or YAML path) for ``arch`` with problem/param overrides."""
    path = schedule_path(name_or_path)
    spec = _read_spec(path)
    return resolve(spec, arch, overrides or {}, path)


def _eval(expr: Any, env: dict[str, Any], where: str) -> Any:
    try:
        return as_expr(expr)(env, where=where)
    except ExprError as exc:
        message = str(exc)
        raise InputError(message if message.startswith(where) else f"{where}: {message}") from None


def _check_requires(spec: ScheduleSpec, env: dict[str, Any], src: str) -> None:
    """Refuse problem and parameter values that break one of the schedule's ``requires:`` conditions,
    naming the condition, why it matters and the values it read."""
    for name, req in spec.requires.items():
        where = f"{src}: requires.{name}"
        if _eval(req.check, env, f"{where}.check"):
            continue
        expr = as_expr(req.check)
        read = ", ".join(f"{key}={env[key]}" for key in sorted(expr.names) if key in env)
        why = f" ({quote(req.why, 120)})" if req.why else ""
        raise InputError(f"{where}: {quote(str(req.check), 120)} does not hold{why}; here {read}")


def _int(value: Any, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"{where}: expected a whole number, got {quote(repr(value) if not isinstance(value, str) else value, 80)}"
        )
    if isinstance(value, float) and not value.is_integer():
        raise InputError(f"{where}: expected a whole number, got {value}")
    if minimum is not None and value < minimum:
        raise InputError(f"{where}: expected a whole number >= {minimum}, got {int(value)}")
    return int(value)


def _amount(raw: Any, env: dict[str, Any], where: str) -> float:
    """Evaluate a count of work (FLOPs, bytes): a finite number >= 0."""
    value = _eval(raw, env, where)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"{where}: expected a number, got {quote(repr(value) if not isinstance(value, str) else value, 80)}"
        )
    number = float(value) if isinstance(value, float) or abs(value) < 1e300 else math.inf
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{where}: expected a finite number >= 0, got {quote(repr(value), 40)}")
    return number


def _num(raw: Any, env: dict[str, Any], where: str, minimum: int) -> int:
    """Evaluate a whole-number field and check its range, naming the field."""
    return _int(_eval(raw, env, where), where, minimum)


RASTERS = ("along_m", "along_n", "heuristic", "as_listed")
SCHEDULER_KINDS = (
    "grid",
    "static_persistent",
    "dynamic_persistent",
    "split_k",
    "stream_k",
    "splitkv_balanced",
)


def _word(raw: str, words: tuple[str, ...], env: dict[str, Any], where: str) -> str:
    """One of ``words`` as written, or an expression that gives one."""
    bare_word = raw.isidentifier() and raw not in env
    value = raw if raw in words or bare_word else _eval(raw, env, where)
    if value not in words:
        close = difflib.get_close_matches(str(value), words, n=1, cutoff=0.0)
        raise InputError(f"{where}: expected one of {', '.join(words)} (or an expression giving one), got "
                         f"{quote(str(value), 60)}; did you mean '{close[0]}'?")  # fmt: skip
    return str(value)


def _raster(raw: str, env: dict[str, Any], where: str) -> str:
    """The raster order: one of RASTERS as written, or an expression that gives one."""
    return _word(raw, RASTERS, env, where)


def _check_choice(spec: ScheduleSpec, key: str, value: Any, where: str | None = None) -> None:
    """Refuse a word-valued symbol's value outside its declared ``choices``, naming the closest.
    ``where``: the field of a file's own default (default: the ``--set`` override)."""
    words = spec.choices[key]
    if str(value) in words:
        return
    close = difflib.get_close_matches(str(value), words, n=1, cutoff=0.0)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    field = where or override_name(key, str(value))
    shown = f" {quote(str(value), 60)}" if where else ""
    raise InputError(f"{field}:{shown} {spec.schedule} takes {key} one of {', '.join(words)}{hint}")


def canonical_overrides(spec: ScheduleSpec, overrides: dict[str, Any], src: str) -> dict[str, Any]:
    """Overrides with aliases (``aliases: {BLOCK_M: BM}``) replaced by the names they stand for."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        name = spec.aliases.get(key, key)
        if name in out and out[name] != value:
            raise InputError(f"{src}: '{key}' is an alias of '{name}', which is also given a different value")
        out[name] = value
    return out


def resolve(spec: ScheduleSpec, arch: Arch, overrides: dict[str, Any], path: Path | None) -> Schedule:
    """Evaluate a parsed schedule against an arch and overrides."""
    src = str(path) if path else spec.schedule
    known = {*spec.problem, *spec.params}
    for alias, target in spec.aliases.items():
        if target not in known:
            raise UnknownNameError("symbol", target, known, where=f"{src}: aliases.{alias}")
    for key, words in spec.choices.items():
        if key not in known:
            raise UnknownNameError("symbol", key, known, where=f"{src}: choices.{key}")
        if not words:
            raise InputError(f"{src}: choices.{key}: an empty list; name the words {key} may take")
    overrides = canonical_overrides(spec, overrides, src)
    for key in overrides:
        if key not in known:
            raise UnknownNameError("parameter", key, known, where=override_name(quote(key, 60)))
        if key in spec.choices:
            _check_choice(spec, key, overrides[key])
    env: dict[str, Any] = {
        "num_sms": arch.sm_count,
        "sm_version": arch.sm_version,
        "smem_per_sm": arch.sm.smem_bytes_per_sm,
        "smem_per_block": arch.sm.smem_bytes_per_block,
    }
    for section, values in (("problem", spec.problem), ("params", spec.params)):
        for key, raw in values.items():
            value = overrides.get(key, raw)
            where = f"{src}: {section}.{key}"
            if key == "dtype" or key.endswith("_dtype"):
                env[key] = canonical_dtype(str(value))
                continue
            if value == "fit" and section == "params":  # STAGES: fit -- resolved with the buffer that uses it
                env[key] = "fit"
                continue
            word_valued = key in {"layout", "mode", "op"} or (section == "problem" and key in spec.choices)
            if isinstance(value, str) and word_valued:
                env[key] = value
                continue
            if key in overrides and isinstance(value, str) and isinstance(raw, str):
                default = _eval(raw, env, where)
                if isinstance(default, str):  # a word-valued param (e.g. B_MAJOR: "'k'"): --set B_MAJOR=mn
                    env[key] = value
                    continue
            env[key] = _eval(value, env, where)
            if section == "params" and key in overrides:
                _check_param_sign(env[key], raw, env, where)
        if section == "problem":
            _check_problem_sizes(spec, env, src)
            if "dtype" not in env:
                raise InputError(f"{src}: problem.dtype: required field is missing")
            env["elem_bytes"] = bytes_per_element(env["dtype"])
    for key in spec.choices:  # the file's own word values, as evaluated (B_MAJOR: "'k'" is the word k)
        if key not in overrides and isinstance(env.get(key), str):
            section = "problem" if key in spec.problem else "params"
            _check_choice(spec, key, env[key], where=f"{src}: {section}.{key}")
    _check_requires(spec, env, src)
    launch = _resolve_launch(spec, env, src)
    env["cluster_size"] = launch.cluster_size
    barriers = {
        name: Barrier(
            name=name,
            kind=b.kind,
            warps=_num(b.warps, env, f"{src}: barriers.{name}.warps", 1) if b.warps is not None else 0,
            count=_num(b.count, env, f"{src}: barriers.{name}.count", 1),
            members=b.members,
        )
        for name, b in spec.barriers.items()
    }
    roles = {}
    for name, r in spec.roles.items():
        where = f"{src}: roles.{name}"
        regs = None if r.regs is None else _num(r.regs, env, f"{where}.regs", 1)
        roles[name] = Role(
            name=name,
            warps=_num(r.warps, env, f"{where}.warps", 1),
            regs=regs,
            replicas=_num(r.replicas, env, f"{where}.replicas", 1),
            cta=r.cta,
            program=compile_program(list(r.program), f"{where}.program"),
        )
    buffers = {name: _resolve_buffer(name, b, env, src) for name, b in spec.buffers.items()}
    operands = {
        name: Operand(
            name=name,
            key=tuple(as_expr(k) for k in o.key),
            bytes=as_expr(o.bytes),
            interleaved=o.interleaved,
            resident=o.resident,
        )
        for name, o in spec.operands.items()
    }
    metrics_dtype = canonical_dtype(spec.metrics.dtype) if spec.metrics.dtype else env["dtype"]
    sched = Schedule(
        name=spec.schedule,
        description=spec.description,
        reference_arch=spec.reference_arch,
        source=path,
        env=env,
        dtype=env["dtype"],
        mixes=spec.mixes,
        flops=_amount(spec.metrics.flops, env, f"{src}: metrics.flops"),
        compulsory_bytes=_amount(spec.metrics.compulsory_bytes, env, f"{src}: metrics.compulsory_bytes"),
        metrics_dtype=metrics_dtype,
        workspace_bytes=_amount(spec.metrics.workspace_bytes, env, f"{src}: metrics.workspace_bytes"),
        launch=launch,
        operands=operands,
        buffers=buffers,
        barriers=barriers,
        roles=roles,
        overrides=dict(overrides),
        symbols=(*spec.problem, *spec.params),
        problem_symbols=tuple(spec.problem),
    )
    return _fit(sched, spec, arch, src)


def _fit(sched: Schedule, spec: ScheduleSpec, arch: Arch, src: str) -> Schedule:
    """Resolve ``stages: fit`` (as many stages as the shared memory left allows) and ``ctas_per_sm: auto``
    (as many CTAs as every budget allows)."""
    from gpusim.schedule.check import max_ctas_per_sm, smem_bytes_per_cta

    fitted = [name for name, b in sched.buffers.items() if b.stages == 0]
    if len(fitted) > 1:
        raise InputError(f"{src}: buffers {', '.join(fitted)}: only one buffer may have stages: fit")
    if fitted:
        name = fitted[0]
        buf = sched.buffers[name]
        if buf.space != "smem":
            raise InputError(f"{src}: buffers.{name}.stages: fit applies to shared-memory buffers only")
        one = replace(buf, stages=1)
        base = smem_bytes_per_cta(replace(sched, buffers={**sched.buffers, name: replace(buf, stages=0)}))
        per_stage = smem_bytes_per_cta(replace(sched, buffers={**sched.buffers, name: one})) - base
        room = arch.sm.smem_bytes_per_block - base
        stages = room // per_stage if per_stage > 0 else 1
        if buf.max_stages is not None:
            stages = min(stages, buf.max_stages)
        if stages < 1:
            raise ScheduleRefused(f"{sched.name} on {arch.id}: buffers.{name}: stages: fit finds no room for one "
                                  f"stage of {per_stage / 1024:.1f} KiB ({room / 1024:.1f} KiB of shared memory left "
                                  "after the other buffers)")  # fmt: skip
        env = {**sched.env, **{k: stages for k, v in sched.env.items() if v == "fit"}}
        sched = replace(sched, buffers={**sched.buffers, name: replace(buf, stages=stages)}, env=env)
    sched = _resolve_auto_instr(sched, arch)
    if sched.launch.ctas_per_sm == 0:
        sched = replace(sched, launch=replace(sched.launch, ctas_per_sm=max_ctas_per_sm(sched, arch)))
    return sched


def _check_problem_sizes(spec: ScheduleSpec, env: dict[str, Any], src: str) -> None:
    """Problem sizes are whole numbers from 1 (0 where that means 'none') to MAX_PROBLEM_SIZE."""
    for key in spec.problem:
        value = env.get(key)
        if isinstance(value, str) or key == "dtype" or key.endswith("_dtype"):
            continue
        where = f"{src}: problem.{key}"
        if isinstance(value, bool):
            if key not in SIZE_FLAGS:
                raise InputError(
                    f"{where}: expected a size (a whole number), got boolean {str(value).lower()}"
                )
            value = int(value)
        number = _int(value, where)
        low = 0 if key in SIZE_FLAGS or key in SIZE_MAY_BE_ZERO else 1
        high = 1 if key in SIZE_FLAGS else MAX_PROBLEM_SIZE
        if number < low:
            raise InputError(
                f"{where}: expected {'0 or 1' if high == 1 else f'a size >= {low}'}, got {number}"
            )
        if number > high:
            if high == 1:
                raise InputError(f"{where}: expected 0 or 1, got {number}")
            raise LimitExceeded(f"{where}: {number:,} is larger than gpusim simulates (at most 2**40)")
        env[key] = number


def _check_param_sign(value: Any, default: Any, env: dict[str, Any], where: str) -> None:
    """A ``--set`` param whose default is a number >= 0 (a size, a count, a 0/1 switch) is not negative."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value >= 0:
        return
    try:
        default_value = _eval(default, env, where)
    except GpusimError:
        return
    if isinstance(default_value, int | float) and not isinstance(default_value, bool) and default_value >= 0:
        raise InputError(f"{where}: expected a value >= 0 (the default is {default_value:g}), got {value:g}")


def _check_launch_size(grid: list[tuple[str, int]], splits: int, src: str, persistent: bool = False) -> None:
    ctas = splits
    for _, extent in grid:
        ctas *= extent
    if ctas > MAX_LAUNCH_CTAS:
        shape = " x ".join(f"{d} {e:,}" for d, e in grid) + (f" x {splits} splits" if splits > 1 else "")
        what = "work units (the persistent CTAs' tiles)" if persistent else "CTAs"
        raise LaunchTooLarge(f"{src}: launch.grid: {shape} is {ctas:,} {what}; gpusim simulates at most "
                            f"{MAX_LAUNCH_CTAS:,} per launch (use a smaller problem)")  # fmt: skip


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    raise InputError(f"{where}: expected true/false (or 0/1), got {value!r}")


def _resolve_launch(spec: ScheduleSpec, env: dict[str, Any], src: str) -> Launch:
    ls = spec.launch
    if not ls.grid:
        raise InputError(f"{src}: launch.grid: empty; name at least one work-unit dimension with its extent "
                         "(e.g. grid: {m: ceil_div(M, BM)})")  # fmt: skip
    grid = []
    for dim, raw in ls.grid.items():
        extent = _int(_eval(raw, env, f"{src}: launch.grid.{dim}"), f"{src}: launch.grid.{dim}")
        if extent < 1:
            raise InputError(f"{src}: launch.grid.{dim}: extent must be >= 1, got {extent}")
        grid.append((dim, extent))
    cluster = [_num(c, env, f"{src}: launch.cluster[{i}]", 1) for i, c in enumerate(ls.cluster)]
    cluster = ([*cluster, 1, 1, 1])[:3]
    sch = ls.scheduler
    parts = None if sch.parts is None else _num(sch.parts, env, f"{src}: launch.scheduler.parts", 1)
    pinned = ls.ctas_per_sm != "auto"
    ctas_per_sm = _num(ls.ctas_per_sm, env, f"{src}: launch.ctas_per_sm", 1) if pinned else 0
    splits = _num(sch.splits, env, f"{src}: launch.scheduler.splits", 1)
    _check_launch_size(grid, splits, src, persistent=bool(ls.persistent))
    kind = _word(sch.kind, SCHEDULER_KINDS, env, f"{src}: launch.scheduler.kind")
    if kind == "dynamic_persistent" and not ls.persistent:
        raise InputError(f"{src}: launch.scheduler.kind: dynamic_persistent hands units to persistent CTAs; "
                         "set launch.persistent: true")  # fmt: skip
    if sch.decomposition != "heuristic" and kind != "stream_k":
        raise InputError(f"{src}: launch.scheduler.decomposition: only a stream_k scheduler has one (this one is "
                         f"{kind})")  # fmt: skip
    k_tiles = env.get("KT")
    if splits > 1 and isinstance(k_tiles, int) and not isinstance(k_tiles, bool) and splits > k_tiles:
        raise ScheduleRefused(f"{src}: launch.scheduler.splits: {splits:,} splits of {k_tiles:,} k-tiles (KT) leave "
                         f"splits with no work; expected at most {k_tiles:,}")  # fmt: skip
    return Launch(
        grid=tuple(grid),
        fields={k: as_expr(v) for k, v in ls.fields.items()},
        cluster=(cluster[0], cluster[1], cluster[2]),
        cta_pair=_bool(_eval(ls.cta_pair, env, f"{src}: launch.cta_pair"), f"{src}: launch.cta_pair"),
        ctas_per_sm=ctas_per_sm,
        ctas_pinned=pinned,
        persistent=ls.persistent,
        scheduler=kind,
        raster=_raster(sch.raster, env, f"{src}: launch.scheduler.raster"),
        swizzle=_num(sch.swizzle, env, f"{src}: launch.scheduler.swizzle", 1),
        splits=splits,
        parts=parts,
        fixed_overhead_blocks=_num(
            sch.fixed_overhead_blocks, env, f"{src}: launch.scheduler.fixed_overhead_blocks", 0
        ),
        decomposition=_word(sch.decomposition, DECOMPOSITIONS, env, f"{src}: launch.scheduler.decomposition"),
    )


def _resolve_buffer(name: str, b: Any, env: dict[str, Any], src: str) -> Buffer:
    where = f"{src}: buffers.{name}"
    producer = consumer = None
    if b.protocol is not None:
        producer, _, consumer = b.protocol.partition("->")
    if b.stages != "fit" and env.get(str(b.stages)) != "fit":
        stages = _num(b.stages, env, f"{where}.stages", 1)
        if stages > MAX_STAGES:
            raise InputError(f"{where}.stages: must be between 1 and {MAX_STAGES}, got {stages}")
    return Buffer(
        name=name,
        space=b.space,
        stages=0
        if b.stages == "fit" or env.get(str(b.stages)) == "fit"
        else _num(b.stages, env, f"{where}.stages", 1),
        bytes=_num(b.bytes, env, f"{where}.bytes", 0),
        cols=_num(b.cols, env, f"{where}.cols", 0),
        chunks=_num(b.chunks, env, f"{where}.chunks", 1),
        producer=producer,
        consumer=consumer,
        scope=b.scope,
        per=b.per,
        alias=b.alias,
        role=b.role,
        max_stages=None if b.max_stages is None else _num(b.max_stages, env, f"{where}.max_stages", 1),
    )


__all__ = [
    "Expr",
    "builtin_schedule_names",
    "load_schedule",
    "parse_override",
    "read_spec",
    "resolve",
    "schedule_path",
    "schedules_dir",
]


def _resolve_auto_instr(sched: Schedule, arch: Arch) -> Schedule:
    """``instr: auto`` replaced by the arch's shape (see check.auto_instr_shape) where the unit, dtype and
    M x N x K are known now; elsewhere it stays ``auto`` and the check resolves or refuses it."""
    from gpusim.schedule.check import auto_instr_shape

    def resolve_stmt(stmt: Stmt) -> Stmt:
        body = tuple(resolve_stmt(s) for s in stmt.body)
        args = stmt.args
        if stmt.op == "mma" and args.instr == "auto":
            unit = arch.tensor_cores.unit(args.unit)
            spec = unit.dtypes.get(sched.mma_dtype(args.dtype, sched.env)) if unit is not None else None
            if spec is not None and all(e.names <= set(sched.env) for e in args.mnk):
                shape = auto_instr_shape(spec, args, dict(sched.env), stmt.where, f"{args.unit} on {arch.id}")
                args = args.model_copy(update={"instr": tuple(Expr(v) for v in shape)})
        if body == stmt.body and args is stmt.args:
            return stmt
        return replace(stmt, args=args, body=body)

    roles = {
        name: replace(r, program=tuple(resolve_stmt(s) for s in r.program)) for name, r in sched.roles.items()
    }
    return replace(sched, roles=roles)
