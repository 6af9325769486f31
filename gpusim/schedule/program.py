"""Role programs: a closed set of ops, each a typed pydantic model, in a discriminated union.

A statement in YAML is a mapping with exactly one op key (its arguments as the value) plus the
optional modifiers ``if:`` (a guard), ``label:`` (a trace label) and, for the block ops ``tiles``,
``for`` and ``turn``, a ``do:`` body. A few ops take a scalar shorthand (``acquire: ab`` means
``acquire: {buf: ab}``) and ``syncthreads`` may be written bare. Validated statements are turned
into :class:`Stmt`, whose ``args`` is the op's typed model: the interpreter reads typed fields and
never parses text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, Tag, model_validator

from gpusim.errors import InputError
from gpusim.schedule.expr import Expr
from gpusim.schedule.fields import (
    AnyExpr,
    CountExpr,
    IndexExpr,
    SizeExpr,
    StrictModel,
    _closest,
    checked,
)

QueueName = Literal["ldg", "cp_async", "wgmma", "tma_store", "tmem_ld", "lds"]
"""Async queues a role can wait on with ``wait_async``."""
MmaUnitName = Literal["mma_sync", "wgmma", "tcgen05"]
"""MMA instruction families (arch files give their rates and legal shapes)."""
OperandSpaceName = Literal["smem", "rmem", "tmem"]
"""Where an MMA's A operand is read from."""
InstrClass = Literal["fp32", "ex2", "cvt", "int"]
"""CUDA-core instruction classes of a mix: FP32 FMA/ALU, SFU transcendental, conversion, integer."""
MAX_OPS_PER_ELEMENT = 1e6
"""Most instructions of one class per element a mix may ask for (real mixes: 0.1 to a few dozen)."""
OpsPerElement = Annotated[float, Field(ge=0, le=MAX_OPS_PER_ELEMENT, allow_inf_nan=False)]
"""Instructions of one class per element in a CUDA-core mix."""
QUEUES = frozenset(QueueName.__args__)  # type: ignore[attr-defined]


class OpArgs(StrictModel):
    """Base of every op's typed arguments.

    Mapping-style reads (``args["bytes"]``, ``"multicast" in args``) are kept for code written before
    statements were typed; an unset optional argument reads as absent.
    """

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, _FIELD_OF.get(key, key), None)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and getattr(self, _FIELD_OF.get(key, key), None) is not None

    def get(self, key: str, default: Any = None) -> Any:
        """The argument ``key`` or ``default`` when it is unset."""
        value = getattr(self, _FIELD_OF.get(key, key), None)
        return default if value is None else value

    def values(self) -> Iterator[Any]:
        """Every set argument value."""
        return (v for v in (getattr(self, name) for name in type(self).model_fields) if v is not None)


_FIELD_OF = {"async": "async_"}


# ---- control flow -----------------------------------------------------------------------------------


class Tiles(OpArgs):
    """The persistent tiles loop: run ``do`` for each work unit this CTA owns (``tile`` = its ordinal)."""

    every: CountExpr | None = None
    """Take every n-th unit (ping-pong replicas: 2); unset: every unit."""
    offset: IndexExpr | None = None
    """Start at this ordinal (ping-pong: ``r``); unset: 0."""


class ForLoop(OpArgs):
    """``for: {k: KT}`` (k = 0..KT-1) or ``for: {k: [start, stop]}``; the variable tags stages."""

    var: str
    """Loop variable."""
    start: AnyExpr = Expr(0)
    """First value."""
    stop: AnyExpr
    """One past the last value."""


def _for_from_yaml(value: dict[str, Any]) -> ForLoop:
    ((var, bounds),) = value.items()
    if isinstance(bounds, tuple):
        return ForLoop(var=var, start=bounds[0], stop=bounds[1])
    return ForLoop(var=var, stop=bounds)


ForArg = Annotated[
    dict[str, AnyExpr | tuple[AnyExpr, AnyExpr]],
    Field(min_length=1, max_length=1),
    AfterValidator(_for_from_yaml),
]


class Turn(OpArgs):
    """Run ``do`` when this replica's turn on a turnstile comes, then pass the turn on."""

    name: str
    """The turnstile barrier."""


# ---- pipelines and barriers ---------------------------------------------------------------------------


class Acquire(OpArgs):
    """Producer: wait for an empty stage of a buffer (tagged by the enclosing loop variables)."""

    buf: str
    """Buffer with a protocol."""


class Commit(OpArgs):
    """Producer: mark the acquired stage full (threads/umma producers; TMA and cp.async fill by bytes)."""

    buf: str
    """Buffer with a protocol."""


class Wait(OpArgs):
    """Consumer: wait for a full stage of a buffer, or for an event barrier's tile."""

    buf: str | None = None
    """Buffer with a protocol (or give ``bar``)."""
    bar: str | None = None
    """Event barrier (or give ``buf``)."""
    chunk: IndexExpr | None = None
    """Chunked buffers: which chunk to wait for (unset: 0)."""
    at: dict[str, AnyExpr] = Field(default_factory=dict)
    """Loop-variable overrides naming the stage (e.g. ``{n: n - 1}``)."""

    @model_validator(mode="after")
    def _one_target(self) -> Wait:
        if (self.buf is None) == (self.bar is None):
            raise ValueError("give exactly one of 'buf' or 'bar'")
        return self


class Release(OpArgs):
    """Consumer: free the stages it holds, keeping the newest ``keep`` (release one behind: 1)."""

    buf: str
    """Buffer with a protocol."""
    keep: IndexExpr | None = None
    """Stages to keep held (unset: 0)."""


class Arrive(OpArgs):
    """Arrive at a named barrier (without waiting) or signal an event barrier for the current tile."""

    bar: str
    """Named or event barrier."""
    at: dict[str, AnyExpr] = Field(default_factory=dict)
    """Loop-variable overrides (event barriers are tagged by tile)."""


class Sync(OpArgs):
    """Arrive at a named barrier and wait until its warp count has arrived (bar.sync)."""

    bar: str
    """Named barrier."""


class Syncthreads(OpArgs):
    """``__syncthreads()``: every warp of the roles using it meets."""


class WaitAsync(OpArgs):
    """Wait until at most ``pending`` ops of an async queue are in flight (wgmma.wait_group N, ...)."""

    queue: QueueName
    """The queue."""
    pending: IndexExpr
    """Ops allowed to stay in flight."""


# ---- data movement --------------------------------------------------------------------------------------


class TmaLoad(OpArgs):
    """TMA load of ``bytes`` into a buffer stage (or chunks); completes by transaction bytes."""

    buf: str
    """Destination buffer."""
    bytes: SizeExpr
    """Bytes moved (per issuing CTA, before multicast sharing)."""
    operand: str | None = None
    """Operand for the L2 tile cache and multicast peers."""
    multicast: CountExpr | None = None
    """CTAs of the cluster receiving the same bytes (each CTA issues 1/multicast of them); unset: 1."""
    chunk: IndexExpr | None = None
    """Chunked buffers: the chunk filled (unset: 0)."""
    chunks: tuple[IndexExpr, IndexExpr] | None = None
    """Chunked buffers: [first, stop) chunks filled evenly."""
    at: dict[str, AnyExpr] = Field(default_factory=dict)
    """Loop-variable overrides naming the stage."""


class TmaStore(OpArgs):
    """TMA store of ``bytes`` from shared memory to global; joins the ``tma_store`` queue."""

    buf: str | None = None
    """Source buffer (documentation; the store reads shared memory)."""
    bytes: SizeExpr
    """Bytes written."""


class CpAsync(OpArgs):
    """cp.async of ``bytes`` global -> shared; joins the ``cp_async`` queue (and fills a cp_async buffer)."""

    buf: str | None = None
    """Destination buffer."""
    bytes: SizeExpr
    """Bytes moved."""
    operand: str | None = None
    """Operand for the L2 tile cache."""


class Ldg(OpArgs):
    """Global load to registers; joins the ``ldg`` queue."""

    bytes: SizeExpr
    """Bytes loaded."""
    operand: str | None = None
    """Operand for the L2 tile cache."""


class Stg(OpArgs):
    """Global store from registers (completes before the kernel ends)."""

    bytes: SizeExpr
    """Bytes stored."""


class Reduce(OpArgs):
    """Split-K / stream-K partial results written to the reduction workspace; the role waits for it."""

    bytes: SizeExpr
    """Bytes of partials written."""
    mode: Literal["deterministic", "atomic"] = "deterministic"
    """Deterministic (ordered, CUTLASS ReductionMode::Deterministic) or atomic."""


class Lds(OpArgs):
    """Shared-memory reads (ld.shared / ldmatrix) on the SM's shared-memory bandwidth."""

    buf: str | None = None
    """Source buffer."""
    bytes: SizeExpr
    """Bytes read."""
    ways: CountExpr | None = None
    """Bank-conflict ways: shared-memory wavefronts per conflict-free one (unset: 1, a swizzled or padded
    layout). ldmatrix reads 8 rows of 16 bytes per wavefront; rows of a plain tile whose pitch is P bytes
    (a power of two) fall on min(8, P / 16) times the same banks."""
    async_: AnyExpr | None = Field(default=None, alias="async")
    """True: software-pipelined fragment loads that complete through ``wait_async: {queue: lds}``
    (unset: false, the role waits for the read)."""


class Sts(OpArgs):
    """Shared-memory writes (st.shared / stmatrix)."""

    buf: str | None = None
    """Destination buffer."""
    bytes: SizeExpr
    """Bytes written."""
    ways: CountExpr | None = None
    """Bank-conflict ways, as for ``lds`` (unset: 1)."""


class TmemLoad(OpArgs):
    """tcgen05.ld: TMEM -> registers; joins the ``tmem_ld`` queue."""

    bytes: SizeExpr
    """Bytes read from tensor memory."""


class TmemStore(OpArgs):
    """tcgen05.st: registers -> TMEM."""

    bytes: SizeExpr
    """Bytes written to tensor memory."""


# ---- compute ----------------------------------------------------------------------------------------------


def _names(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class Mma(OpArgs):
    """Tensor-core work: an M x N x K product issued as instructions of shape ``instr``."""

    unit: MmaUnitName
    """mma_sync (warp), wgmma (warpgroup, async: joins the ``wgmma`` queue) or tcgen05 (one thread, TMEM)."""
    mnk: tuple[SizeExpr, SizeExpr, SizeExpr]
    """[M, N, K] of this op's work."""
    instr: tuple[SizeExpr, SizeExpr, SizeExpr] | Literal["auto"] | None = None
    """Instruction shape [m, n, k], checked against the arch; ``auto``: the largest legal shape that
    divides the tile (from the arch file)."""
    a: OperandSpaceName | None = None
    """Where A is read from (smem, rmem, tmem)."""
    dtype: str | None = None
    """Operand dtype (a dtype name or a symbol holding one, e.g. ``acc_dtype``); default: the problem dtype."""
    cta_group: CountExpr | None = None
    """tcgen05: 2 = one MMA across the two CTAs of a pair (unset: 1)."""
    acc: str | None = None
    """Accumulator buffer (documentation)."""
    reads: Annotated[tuple[str, ...], BeforeValidator(_names)] = ()
    """Buffers read (documentation)."""
    a_major: str = "k"
    """Majorness of A in shared memory: k or mn (or a symbol holding one)."""
    b_major: str = "k"
    """Majorness of B in shared memory: k or mn (or a symbol holding one)."""
    scale_vec: IndexExpr | None = None
    """Block-scaled formats: K elements per scale (0: none)."""
    scale_dtype: str | None = None
    """Block-scaled formats: scale format (ue8m0, ue4m3; or a symbol holding one)."""


class Cuda(OpArgs):
    """CUDA-core / SFU work: ``elems`` elements times an instruction mix (ops per element by class)."""

    mix: str | None = None
    """A named mix from ``mixes:`` (or give ``ops``)."""
    ops: dict[InstrClass, OpsPerElement] | None = None
    """An inline mix: ops per element by class (or give ``mix``)."""
    elems: SizeExpr
    """Elements processed by the role (all its warps together)."""

    @model_validator(mode="after")
    def _one_mix(self) -> Cuda:
        if (self.mix is None) == (self.ops is None):
            raise ValueError("give exactly one of 'mix' or 'ops'")
        return self


# ---- statements: one op key plus modifiers ------------------------------------------------------------------


def _shorthand(model: type[OpArgs], primary: str) -> Any:
    """An argument that is the op's model, or a bare name for its ``primary`` field."""

    def expand(value: Any) -> Any:
        return {primary: value} if isinstance(value, str) else value

    return Annotated[model, BeforeValidator(expand), _OrName(primary)]


class _OrName:
    """JSON Schema of a shorthand argument: the op's mapping, or a bare name for its primary field."""

    def __init__(self, primary: str) -> None:
        self.primary = primary

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        return {"anyOf": [{"type": "string", "description": f"shorthand for {{{self.primary}: <name>}}"},
                          handler(core_schema)]}  # fmt: skip


def _empty(value: Any) -> Any:
    return {} if value is None else value


class StatementBase(StrictModel):
    """Modifiers every statement may carry."""

    if_: AnyExpr | None = Field(default=None, alias="if")
    """Guard: the statement runs only when this is true."""
    label: str | None = None
    """Trace label."""


class TilesStmt(StatementBase):
    tiles: Annotated[Tiles, BeforeValidator(_empty)]
    do: Program


class ForStmt(StatementBase):
    for_: ForArg = Field(alias="for")
    do: Program


class TurnStmt(StatementBase):
    turn: _shorthand(Turn, "name")  # type: ignore[valid-type]
    do: Program


class AcquireStmt(StatementBase):
    acquire: _shorthand(Acquire, "buf")  # type: ignore[valid-type]


class CommitStmt(StatementBase):
    commit: _shorthand(Commit, "buf")  # type: ignore[valid-type]


class WaitStmt(StatementBase):
    wait: _shorthand(Wait, "buf")  # type: ignore[valid-type]


class ReleaseStmt(StatementBase):
    release: _shorthand(Release, "buf")  # type: ignore[valid-type]


class ArriveStmt(StatementBase):
    arrive: _shorthand(Arrive, "bar")  # type: ignore[valid-type]


class SyncStmt(StatementBase):
    sync: _shorthand(Sync, "bar")  # type: ignore[valid-type]


class SyncthreadsStmt(StatementBase):
    syncthreads: Annotated[Syncthreads, BeforeValidator(_empty)]


class WaitAsyncStmt(StatementBase):
    wait_async: WaitAsync


class TmaLoadStmt(StatementBase):
    tma_load: TmaLoad


class TmaStoreStmt(StatementBase):
    tma_store: TmaStore


class CpAsyncStmt(StatementBase):
    cp_async: CpAsync


class LdgStmt(StatementBase):
    ldg: Ldg


class StgStmt(StatementBase):
    stg: Stg


class LdsStmt(StatementBase):
    lds: Lds


class StsStmt(StatementBase):
    sts: Sts


class MmaStmt(StatementBase):
    mma: Mma


class TmemLoadStmt(StatementBase):
    tmem_load: TmemLoad


class TmemStoreStmt(StatementBase):
    tmem_store: TmemStore


class CudaStmt(StatementBase):
    cuda: Cuda


class ReduceStmt(StatementBase):
    reduce: Reduce


class UseStmt(StrictModel):
    """Stands for a statement template's statements (resolved before validation; see compose)."""

    use: str
    """Template name."""
    with_: dict[str, Any] = Field(default_factory=dict, alias="with")
    """Template arguments."""
    if_: AnyExpr | None = Field(default=None, alias="if")
    """Guard applied to every statement of the template."""


class WhenStmt(StrictModel):
    """Stands for its statements, each guarded by ``when`` (resolved before validation; see compose)."""

    when: AnyExpr
    """Condition."""
    do: Program
    """Statements."""


STATEMENT_MODELS: dict[str, type[StatementBase]] = {
    "tiles": TilesStmt,
    "for": ForStmt,
    "turn": TurnStmt,
    "acquire": AcquireStmt,
    "commit": CommitStmt,
    "wait": WaitStmt,
    "release": ReleaseStmt,
    "arrive": ArriveStmt,
    "sync": SyncStmt,
    "syncthreads": SyncthreadsStmt,
    "wait_async": WaitAsyncStmt,
    "tma_load": TmaLoadStmt,
    "tma_store": TmaStoreStmt,
    "cp_async": CpAsyncStmt,
    "ldg": LdgStmt,
    "stg": StgStmt,
    "lds": LdsStmt,
    "sts": StsStmt,
    "mma": MmaStmt,
    "tmem_load": TmemLoadStmt,
    "tmem_store": TmemStoreStmt,
    "cuda": CudaStmt,
    "reduce": ReduceStmt,
}
"""Every op and the model of its statement."""
OPS = tuple(STATEMENT_MODELS)
BLOCK_OPS = frozenset({"tiles", "for", "turn"})
MODIFIERS = frozenset({"if", "label", "do", "with"})
COMPOSITION = {"use": UseStmt, "when": WhenStmt}


def _normalise_statement(raw: Any) -> Any:
    """Bare op names become mappings; a statement must name exactly one known op."""
    if isinstance(raw, str):
        if raw not in STATEMENT_MODELS:
            raise ValueError(f"unknown op '{raw}'; {_closest(raw, list(OPS))}")
        return {raw: None}
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"expected a statement mapping such as {{acquire: ab}}, got {raw!r}")
    op_keys = [k for k in raw if k not in MODIFIERS]
    if not op_keys:
        raise ValueError(f"statement has no op (only {', '.join(map(str, raw))})")
    if len(op_keys) > 1:
        raise ValueError(f"statement has several ops {op_keys}; write one op per statement")
    op = str(op_keys[0])
    if op in COMPOSITION:
        return raw
    if op not in STATEMENT_MODELS:
        raise ValueError(f"unknown op '{op}'; {_closest(op, list(OPS))}")
    if op in BLOCK_OPS and not raw.get("do"):
        raise ValueError(f"'{op}' needs a non-empty 'do:' list")
    if op not in BLOCK_OPS and "do" in raw:
        raise ValueError(f"only tiles, for and turn take a 'do:' body ('{op}' does not)")
    return raw


def _statement_op(value: Any) -> str | None:
    if isinstance(value, dict):
        ops = [k for k in value if k not in MODIFIERS]
        return str(ops[0]) if len(ops) == 1 else None
    if isinstance(value, StrictModel):
        models = {**STATEMENT_MODELS, **COMPOSITION}
        return next((op for op, model in models.items() if isinstance(value, model)), None)
    return None


Statement = Annotated[
    Annotated[TilesStmt, Tag("tiles")]
    | Annotated[ForStmt, Tag("for")]
    | Annotated[TurnStmt, Tag("turn")]
    | Annotated[AcquireStmt, Tag("acquire")]
    | Annotated[CommitStmt, Tag("commit")]
    | Annotated[WaitStmt, Tag("wait")]
    | Annotated[ReleaseStmt, Tag("release")]
    | Annotated[ArriveStmt, Tag("arrive")]
    | Annotated[SyncStmt, Tag("sync")]
    | Annotated[SyncthreadsStmt, Tag("syncthreads")]
    | Annotated[WaitAsyncStmt, Tag("wait_async")]
    | Annotated[TmaLoadStmt, Tag("tma_load")]
    | Annotated[TmaStoreStmt, Tag("tma_store")]
    | Annotated[CpAsyncStmt, Tag("cp_async")]
    | Annotated[LdgStmt, Tag("ldg")]
    | Annotated[StgStmt, Tag("stg")]
    | Annotated[LdsStmt, Tag("lds")]
    | Annotated[StsStmt, Tag("sts")]
    | Annotated[MmaStmt, Tag("mma")]
    | Annotated[TmemLoadStmt, Tag("tmem_load")]
    | Annotated[TmemStoreStmt, Tag("tmem_store")]
    | Annotated[CudaStmt, Tag("cuda")]
    | Annotated[ReduceStmt, Tag("reduce")]
    | Annotated[UseStmt, Tag("use")]
    | Annotated[WhenStmt, Tag("when")]
    | Annotated[Literal["syncthreads"], Tag("bare")],
    Discriminator(_statement_op),
    BeforeValidator(_normalise_statement),
]
"""One statement: the op key picks its model (a discriminated union)."""
Program = Annotated[list[Statement], Field(min_length=1)]
"""A non-empty list of statements."""

for _model in (TilesStmt, ForStmt, TurnStmt, WhenStmt):
    _model.model_rebuild()


# ---- the compiled form ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stmt:
    """One program statement as the interpreter runs it: the op, its typed arguments, the schedule path of
    the statement (for errors), an optional guard, a trace label and a body."""

    op: str
    args: Any
    """The op's typed model (:class:`Tiles`, :class:`TmaLoad`, :class:`Mma`, ...)."""
    where: str
    guard: Expr | None = None
    label: str | None = None
    body: tuple[Stmt, ...] = field(default_factory=tuple)

    def size(self, expr: Expr, env: Any) -> float:
        """Evaluate a size argument (bytes, elements): a number >= 0."""
        value = expr(env, where=self.where)
        if (value.__class__ is int or value.__class__ is float) and value >= 0:
            return float(value)
        return float(checked(value, f"{self.where}: '{expr.text}'", what="a size"))

    def count(self, expr: Expr, env: Any, minimum: float = 0, whole: bool = True) -> int:
        """Evaluate a count or index argument: a whole number >= ``minimum`` (``whole=False``: a number,
        truncated)."""
        value = expr(env, where=self.where)
        if value.__class__ is int and value >= minimum:
            return value
        value = checked(value, f"{self.where}: '{expr.text}'", minimum=minimum, whole=whole,
                        what="a whole number" if whole else "a number")  # fmt: skip
        return int(value)


def compile_program(items: list[Any], where: str) -> tuple[Stmt, ...]:
    """Turn validated statement models into :class:`Stmt` with schedule paths."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(Stmt(op=item, args=Syncthreads(), where=f"{where}[{i}].{item}"))
            continue
        op = _statement_op(item)
        if op is None or op in COMPOSITION:
            raise InputError(f"{where}[{i}]: '{op}' statements are resolved when the file is read (compose)")
        here = f"{where}[{i}].{op}"
        args = getattr(item, "for_" if op == "for" else op)
        body = compile_program(item.do, f"{here}.do") if op in BLOCK_OPS else ()  # type: ignore[attr-defined]
        out.append(Stmt(op=op, args=args, where=here, guard=item.if_, label=item.label, body=body))
    return tuple(out)


def walk(stmts: tuple[Stmt, ...], loop_vars: tuple[str, ...] = ()) -> Iterator[tuple[Stmt, tuple[str, ...]]]:
    """Every statement with the loop variables enclosing it (``tile`` for the tiles loop)."""
    for stmt in stmts:
        yield stmt, loop_vars
        if stmt.op == "tiles":
            yield from walk(stmt.body, (*loop_vars, "tile"))
        elif stmt.op == "for":
            yield from walk(stmt.body, (*loop_vars, stmt.args.var))
        elif stmt.body:
            yield from walk(stmt.body, loop_vars)


def statement_exprs(stmt: Stmt) -> Iterator[Expr]:
    """The expressions ``stmt`` itself reads: its guard and each expression among its arguments."""
    if stmt.guard is not None:
        yield stmt.guard
    for value in stmt.args.values():
        items = value if isinstance(value, tuple) else value.values() if isinstance(value, dict) else [value]
        for item in items:
            if hasattr(item, "names"):
                yield item


def names_read(programs: Iterable[tuple[Stmt, ...]], keep: Callable[[Stmt], bool] | None = None) -> set[str]:
    """Every name the statements of ``programs`` read (only those ``keep`` accepts, when given)."""
    names: set[str] = set()
    for program in programs:
        for stmt, _ in walk(program):
            if keep is None or keep(stmt):
                for expr in statement_exprs(stmt):
                    names |= expr.names
    return names
