"""Static checks before simulation: budgets, occupancy and legality on the arch, with the numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import DeadlockError, InputError, ScheduleRefused, UnknownNameError, quote
from gpusim.schedule.balance import check_balance
from gpusim.schedule.expr import ExprError
from gpusim.schedule.ir import Role, Schedule
from gpusim.schedule.program import walk
from gpusim.schedule.protocols import check_protocols
from gpusim.schedule.symbols import check_symbols

MBARRIER_BYTES = 8


@dataclass(frozen=True)
class Budgets:
    """What one CTA and one SM use, next to the arch's limits."""

    smem_bytes_per_cta: int
    smem_bytes_per_sm: int
    smem_limit_per_block: int
    smem_limit_per_sm: int
    registers_per_cta: int
    registers_per_sm: int
    registers_limit_per_sm: int
    max_regs_per_thread: int
    tmem_cols_per_cta: int
    tmem_cols_limit: int
    threads_per_cta: int
    warps_per_sm: int
    ctas_per_sm: int

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def _pow2_at_least(x: int, floor: int) -> int:
    v = max(floor, 1)
    while v < x:
        v *= 2
    return v


def _fail(sched: Schedule, arch: Arch, text: str) -> ScheduleRefused:
    return ScheduleRefused(f"{sched.name} on {arch.id}: {text}")


def _buffer_users(sched: Schedule) -> dict[str, set[str]]:
    users: dict[str, set[str]] = {b: set() for b in sched.buffers}
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            buf = getattr(stmt.args, "buf", None)
            if buf is not None:
                users.setdefault(buf, set()).add(role.name)
    return users


def smem_bytes_per_cta(sched: Schedule) -> int:
    """Shared memory of one CTA: every smem buffer's stages (per replica where asked) plus the full/empty
    mbarriers of its protocol."""
    users = _buffer_users(sched)
    smem = 0
    for b in sched.buffers.values():
        if b.space != "smem" or b.alias is not None:
            continue
        copies = 1
        if b.per == "replica":
            copies = max(
                (sched.roles[r].replicas for r in users.get(b.name, ()) if r in sched.roles), default=1
            )
        smem += b.bytes * b.stages * copies
        if b.has_protocol:
            smem += 2 * MBARRIER_BYTES * b.stages * max(1, b.chunks)
    return smem


def _role_regs_limit(arch: Arch) -> int:
    """The most registers per thread a role may ask for: setmaxnreg counts up to 256 (a multiple of 8, PTX ISA),
    though a thread addresses at most ``max_registers_per_thread`` of them; without setmaxnreg, that limit."""
    limit = arch.sm.max_registers_per_thread
    return -(-limit // 8) * 8 if arch.features.setmaxnreg else limit


def _role_register_need(sched: Schedule, role: Role) -> tuple[int, int]:
    """(registers of the role's register buffers, registers per thread they need)."""
    rmem = sum(b.bytes // 4 for b in sched.buffers.values() if b.space == "rmem" and b.role == role.name)
    return rmem, (-(-rmem // (role.warps * 32)) if rmem else 0)


def registers_per_cta(sched: Schedule, arch: Arch) -> tuple[int, int]:
    """(registers one CTA allocates, the largest per-thread count of its roles): a role's ``regs`` (or what
    its register buffers need, if more), warpgroup-granular under setmaxnreg."""
    regs_cta = 0
    max_regs = 0
    for role in sched.roles.values():
        regs = max(role.regs or 0, _role_register_need(sched, role)[1])
        max_regs = max(max_regs, regs)
        warps_alloc = (
            -(-role.warps // 4) * 4 if arch.features.setmaxnreg and role.regs is not None else role.warps
        )
        regs_cta += warps_alloc * 32 * regs * role.replicas
    return regs_cta, max_regs


def tmem_cols_per_cta(sched: Schedule, arch: Arch) -> int:
    """TMEM columns one CTA allocates (each allocation a power of two, at least the arch's minimum)."""
    sm = arch.sm
    return sum(
        _pow2_at_least(b.cols * b.stages, sm.tmem.min_alloc_columns if sm.tmem else 32)
        for b in sched.buffers.values()
        if b.space == "tmem" and b.alias is None
    )


def max_ctas_per_sm(sched: Schedule, arch: Arch) -> int:
    """Occupancy: the most CTAs per SM that the registers, shared memory, threads/warps, TMEM columns and
    the arch's CTA limit allow (at least 1; a CTA that does not fit at all is refused by the check)."""
    sm = arch.sm
    limits = [sm.max_ctas_per_sm]
    smem = smem_bytes_per_cta(sched) + sm.smem_reserved_bytes_per_block
    limits.append(sm.smem_bytes_per_sm // smem if smem else sm.max_ctas_per_sm)
    regs, _ = registers_per_cta(sched, arch)
    if regs:
        limits.append(sm.registers_per_sm // regs)
    warps = sched.threads_per_cta // 32
    limits.append(sm.max_warps_per_sm // max(1, warps))
    tmem = tmem_cols_per_cta(sched, arch)
    if tmem and sm.tmem:
        limits.append(sm.tmem.columns // tmem)
    return max(1, min(limits))


def check_schedule(sched: Schedule, arch: Arch) -> Budgets:
    """Refuse a schedule that does not fit or is not legal on ``arch``; return the budgets used."""
    launch = sched.launch
    sm = arch.sm
    _check_ops(sched, arch)
    users = _buffer_users(sched)
    for buf, roles in users.items():
        if buf not in sched.buffers:
            where = next(iter(roles))
            raise UnknownNameError("buffer", buf, sched.buffers, where=f"{sched.name}: roles.{where}")
    for name, b in sched.buffers.items():
        if b.alias is not None and b.alias not in sched.buffers:
            raise UnknownNameError(
                "buffer", b.alias, sched.buffers, where=f"{sched.name}: buffers.{name}.alias"
            )
        chain = [name]
        while (target := sched.buffers[chain[-1]].alias) is not None:
            if target in chain:
                raise InputError(f"{sched.name}: buffers.{name}.alias: the aliases form a cycle "
                                 f"({' -> '.join([*chain, target])}); an alias names a buffer that owns its memory")  # fmt: skip
            chain.append(target)
        if b.space == "rmem" and b.role not in sched.roles:
            raise UnknownNameError("role", str(b.role), sched.roles, where=f"{sched.name}: buffers.{name}.role "
                                   "(a register buffer names the role whose registers hold it)")  # fmt: skip
    for name, bar in sched.barriers.items():
        if bar.kind == "turnstile" and bar.members not in sched.roles:
            raise UnknownNameError(
                "role", str(bar.members), sched.roles, where=f"{sched.name}: barriers.{name}.members"
            )
        if bar.kind == "named" and bar.warps < 1:
            raise InputError(f"{sched.name}: barriers.{name}.warps: a named barrier needs warps >= 1")
    _check_statement_references(sched)
    _check_named_barrier_participants(sched)
    check_protocols(sched)
    check_symbols(sched)

    # shared memory
    smem = smem_bytes_per_cta(sched)
    limit_block = sm.smem_bytes_per_block
    if smem > limit_block:
        raise _fail(sched, arch, f"needs {smem / 1024:.1f} KiB shared memory per CTA, {arch.id} allows "
                                 f"{limit_block / 1024:.0f} KiB per block ({(smem - limit_block) / 1024:.1f} KiB over)")  # fmt: skip
    per_sm = launch.ctas_per_sm * (smem + sm.smem_reserved_bytes_per_block)
    if per_sm > sm.smem_bytes_per_sm:
        raise _fail(sched, arch, f"{launch.ctas_per_sm} CTAs per SM need {per_sm / 1024:.1f} KiB shared memory, "
                                 f"{arch.id} has {sm.smem_bytes_per_sm / 1024:.0f} KiB per SM")  # fmt: skip

    # registers
    regs_limit = _role_regs_limit(arch)
    for role in sched.roles.values():
        rmem, needed = _role_register_need(sched, role)
        if needed > sm.max_registers_per_thread:
            raise _fail(sched, arch, f"role '{role.name}' holds {rmem:,} registers of register buffers = {needed} "
                                     f"registers per thread > {sm.max_registers_per_thread}")  # fmt: skip
        if role.regs is not None and role.regs > regs_limit:
            raise _fail(sched, arch, f"role '{role.name}' asks {role.regs} registers per thread > {regs_limit}"
                                     + (" (setmaxnreg's largest count)" if arch.features.setmaxnreg else ""))  # fmt: skip
        if role.regs is not None and needed > role.regs:
            raise _fail(sched, arch, f"role '{role.name}' register buffers need {needed} registers per thread "
                                     f"({rmem:,} registers over {role.warps * 32} threads), more than its "
                                     f"{role.regs}")  # fmt: skip
    regs_cta, max_regs = registers_per_cta(sched, arch)
    regs_sm = regs_cta * launch.ctas_per_sm
    if regs_cta > sm.max_registers_per_block:
        raise _fail(
            sched, arch, f"needs {regs_cta:,} registers per CTA > {sm.max_registers_per_block:,} per block"
        )
    if regs_sm > sm.registers_per_sm:
        raise _fail(sched, arch, f"{launch.ctas_per_sm} CTAs per SM need {regs_sm:,} registers > "
                                 f"{sm.registers_per_sm:,} per SM")  # fmt: skip

    # tensor memory
    tmem_cols = tmem_cols_per_cta(sched, arch)
    tmem_limit = sm.tmem.columns if sm.tmem else 0
    if tmem_cols and not sm.tmem:
        raise _fail(
            sched, arch, f"uses tensor memory ({tmem_cols} columns) but {arch.id} has none (needs sm_100)"
        )
    if tmem_cols * launch.ctas_per_sm > tmem_limit:
        raise _fail(sched, arch, f"needs {tmem_cols * launch.ctas_per_sm} TMEM columns per SM > {tmem_limit}")

    # threads, warps, CTAs
    threads = sched.threads_per_cta
    if threads > sm.max_threads_per_block:
        raise _fail(sched, arch, f"needs {threads} threads per CTA > {sm.max_threads_per_block}")
    warps_sm = threads // 32 * launch.ctas_per_sm
    if warps_sm > sm.max_warps_per_sm:
        raise _fail(
            sched, arch, f"{launch.ctas_per_sm} CTAs per SM need {warps_sm} warps > {sm.max_warps_per_sm}"
        )
    if launch.ctas_per_sm > sm.max_ctas_per_sm:
        raise _fail(sched, arch, f"{launch.ctas_per_sm} CTAs per SM > {sm.max_ctas_per_sm}")

    # clusters and pairs
    feats = arch.features
    if launch.cluster_size > 1 and not feats.clusters:
        raise _fail(sched, arch, f"uses clusters of {launch.cluster_size} CTAs; {arch.id} has no thread-block clusters "
                                 "(needs sm_90)")  # fmt: skip
    if launch.cluster_size > feats.max_cluster_size_nonportable:
        raise _fail(
            sched, arch, f"cluster of {launch.cluster_size} CTAs > {feats.max_cluster_size_nonportable}"
        )
    if launch.cta_pair and (not feats.cta_pair_mma or launch.cluster[0] % 2):
        why = "needs cluster[0] even" if feats.cta_pair_mma else f"{arch.id} has no 2-CTA MMA (needs sm_100)"
        raise _fail(sched, arch, f"launch.cta_pair: {why}")
    protocol_needs = {"tma": (feats.tma, "TMA (sm_90)"), "umma": (feats.tcgen05, "tcgen05 (sm_100a)"),
                      "cp_async": (feats.cp_async, "cp.async (sm_80)"),
                      "clc": (arch.sm_version >= 100, "cluster launch control (sm_100)")}  # fmt: skip
    for name, b in sched.buffers.items():
        for side in (b.producer, b.consumer):
            present, needs = protocol_needs.get(side or "", (True, ""))
            if not present:
                raise _fail(sched, arch, f"buffers.{name}: protocol {b.producer}->{b.consumer} needs {needs}; "
                                         f"{arch.id} has none")  # fmt: skip

    check_balance(sched, arch)
    return Budgets(
        smem_bytes_per_cta=smem,
        smem_bytes_per_sm=per_sm,
        smem_limit_per_block=limit_block,
        smem_limit_per_sm=sm.smem_bytes_per_sm,
        registers_per_cta=regs_cta,
        registers_per_sm=regs_sm,
        registers_limit_per_sm=sm.registers_per_sm,
        max_regs_per_thread=max_regs,
        tmem_cols_per_cta=tmem_cols,
        tmem_cols_limit=tmem_limit,
        threads_per_cta=threads,
        warps_per_sm=warps_sm,
        ctas_per_sm=launch.ctas_per_sm,
    )


def _check_statement_references(sched: Schedule) -> None:
    """Refuse a statement naming an operand the schedule does not declare, or an ``at:`` key that is no
    role's loop variable (it would name the stage by a tag no producer sets)."""
    loops = {"tile"}
    for role in sched.roles.values():
        loops |= {stmt.args.var for stmt, _ in walk(role.program) if stmt.op == "for"}
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            operand = getattr(stmt.args, "operand", None)
            if operand is not None and operand not in sched.operands:
                raise UnknownNameError("operand", operand, sched.operands, where=f"{stmt.where}.operand")
            for key in getattr(stmt.args, "at", None) or {}:
                if key not in loops:
                    raise UnknownNameError("loop variable", key, loops, where=f"{stmt.where}.at")


def _check_named_barrier_participants(sched: Schedule) -> None:
    """A named barrier waits for more warps than all the roles that reach it have: every ``sync`` on it
    deadlocks, however long the kernel (reported here, before simulating)."""
    reach: dict[str, dict[str, int]] = {}
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.op in ("sync", "arrive"):
                reach.setdefault(stmt.args.bar, {})[role.name] = role.warps * role.replicas
    for name, bar in sched.barriers.items():
        if bar.kind != "named" or name not in reach:
            continue
        warps = sum(reach[name].values())
        if warps < bar.warps:
            roles = ", ".join(f"{r} ({w} warps)" for r, w in reach[name].items())
            raise DeadlockError(
                f"{sched.name}: barriers.{name} waits for {bar.warps} warps but only {roles} sync or arrive on "
                f"it ({warps} warps): every sync on '{name}' blocks forever"
            )


def _check_ops(sched: Schedule, arch: Arch) -> None:
    """Refuse what the arch lacks before any budget: MMA units, dtypes and shapes first, then TMA,
    cp.async and multicast (a missing feature is the reason, whatever the budgets say)."""
    launch = sched.launch
    feats = arch.features
    env = dict(sched.env)
    statements = [stmt for role in sched.roles.values() for stmt, _ in walk(role.program)]
    for stmt in sorted(statements, key=lambda st: st.op != "mma"):
        where = stmt.where
        if stmt.op in ("tma_load", "tma_store") and not feats.tma:
            raise ScheduleRefused(
                f"{where}: TMA does not exist on {arch.id} (sm_{arch.sm_version}; needs sm_90)"
            )
        if stmt.op == "cp_async" and not feats.cp_async:
            raise ScheduleRefused(
                f"{where}: cp.async does not exist on {arch.id} (sm_{arch.sm_version}; needs sm_80)"
            )
        if stmt.op == "tma_load":
            mc = 1 if stmt.args.multicast is None else _try_eval(stmt.args.multicast, env)
            if mc is not None and mc > 1 and stmt.args.operand is None:
                raise InputError(f"{where}: a multicast load needs 'operand' (which CTAs share it follows from "
                                 "the operand's key)")  # fmt: skip
            if mc is not None and mc > 1 and (not feats.tma_multicast or launch.cluster_size < mc):
                raise ScheduleRefused(f"{where}: multicast {mc} needs TMA multicast and a cluster of at least {mc} "
                                      f"CTAs (cluster is {launch.cluster_size})")  # fmt: skip
        if stmt.op == "mma":
            _check_mma(sched, arch, stmt, env, where)


def _try_eval(expr: Any, env: dict[str, Any]) -> Any:
    try:
        return expr(env)
    except (UnknownNameError, ExprError):
        return None


def _check_mma(sched: Schedule, arch: Arch, stmt: Any, env: dict[str, Any], where: str) -> None:
    args = stmt.args
    unit_name = args.unit
    unit = arch.tensor_cores.unit(unit_name)
    needs = {"wgmma": "sm_90a", "tcgen05": "sm_100a", "mma_sync": "sm_70"}.get(unit_name)
    if needs is None:
        raise UnknownNameError("MMA unit", unit_name, ("mma_sync", "wgmma", "tcgen05"), where=where)
    if unit is None:
        raise ScheduleRefused(
            f"{where}: {unit_name} does not exist on {arch.id} (sm_{arch.sm_version}; needs {needs})"
        )
    dtype_name = sched.mma_dtype(args.dtype, env)
    spec = unit.dtypes.get(dtype_name)
    if spec is None:
        raise ScheduleRefused(f"{where}: {unit_name} on {arch.id} has no {dtype_name} path (supported: "
                              f"{', '.join(unit.dtypes)})")  # fmt: skip
    a_from = args.a
    if a_from is not None and a_from not in spec.a_from:
        raise ScheduleRefused(f"{where}: {unit_name} {dtype_name} cannot read A from {a_from} (allowed: "
                              f"{', '.join(spec.a_from)})")  # fmt: skip
    cta_group = 1 if args.cta_group is None else _try_eval(args.cta_group, env)
    if cta_group is not None and cta_group not in (1, 2):
        raise InputError(
            f"{where}: cta_group must be 1 or 2 (tcgen05 cta_group::1 or ::2), got {quote(cta_group, 30)}"
        )
    if cta_group == 2 and (unit_name != "tcgen05" or 2 not in unit.cta_groups or not sched.launch.cta_pair):
        raise ScheduleRefused(f"{where}: cta_group 2 needs tcgen05 with 2-CTA support and launch.cta_pair")
    for operand in ("a", "b"):
        major = sched.mma_dtype(getattr(args, f"{operand}_major"), env)
        if major not in ("k", "mn"):
            raise InputError(f"{where}: {operand}_major must be k or mn, got {major!r}")
        if major == "mn" and spec.k_major_only and not (operand == "a" and a_from == "rmem"):
            raise ScheduleRefused(f"{where}: {unit_name} {dtype_name} on {arch.id} needs K-major operands in shared "
                                  f"memory (only 16-bit types may be MN-major); {operand.upper()} is MN-major — transpose "
                                  "it first")  # fmt: skip
    _check_block_scale(stmt, env, where, unit_name, dtype_name, spec, arch)
    if args.instr == "auto":
        auto_instr_shape(spec, args, env, where, f"{unit_name} {dtype_name} on {arch.id}")
    elif args.instr is not None:
        shape = [_try_eval(e, env) for e in args.instr]
        if None not in shape and not spec.allows_shape(*(int(v) for v in shape)):
            legal = "; ".join(s.describe() for s in spec.shapes)
            raise ScheduleRefused(f"{where}: {unit_name} {dtype_name} instruction shape "
                                  f"m{shape[0]}n{shape[1]}k{shape[2]} is not legal on {arch.id} (legal: {legal})")  # fmt: skip
        work = [_try_eval(e, env) for e in args.mnk] if args.mnk is not None else []
        if None not in shape and len(work) == 3:
            for dim, size, instr in zip("mnk", work, shape, strict=True):
                if isinstance(size, int | float) and instr and size % instr:
                    raise ScheduleRefused(f"{where}: {unit_name} {dtype_name}: the op's {dim} = {quote(size, 30)} is not "
                                          f"a whole number of m{shape[0]}n{shape[1]}k{shape[2]} instructions "
                                          f"({dim} must be a multiple of {instr})")  # fmt: skip


def _check_block_scale(stmt: Any, env: dict[str, Any], where: str, unit_name: str, dtype_name: str, spec: Any,
                       arch: Arch) -> None:  # fmt: skip
    """Block-scaled MMA (mxfp8, mxfp6, mxfp4, nvfp4) needs the arch's scale-vector size and scale format;
    other dtypes take no scales."""
    vec = _try_eval(stmt.args.scale_vec, env) if stmt.args.scale_vec is not None else None
    vec = None if vec in (None, 0) else int(vec)
    raw_fmt = stmt.args.scale_dtype
    fmt = None if raw_fmt is None else str(env.get(raw_fmt, raw_fmt))
    fmt = None if fmt in ("", "none") else fmt
    rule = spec.block_scale
    if rule is None:
        if vec is not None or fmt is not None:
            raise ScheduleRefused(f"{where}: {unit_name} {dtype_name} on {arch.id} is not a block-scaled format; "
                                  "scale_vec / scale_dtype apply to mxfp8, mxfp6, mxfp4 and nvfp4")  # fmt: skip
        return
    legal = "/".join(str(v) for v in rule.scale_vec_elems)
    if vec not in rule.scale_vec_elems or fmt != rule.scale_dtype:
        got = f"scale_vec {vec if vec is not None else 'missing'} with {fmt or 'no'} scales"
        raise ScheduleRefused(f"{where}: {dtype_name} on {arch.id} needs scale_vec {legal} with {rule.scale_dtype} "
                              f"scales (one scale per {legal} K elements), got {got}")  # fmt: skip


def auto_instr_shape(
    spec: Any, args: Any, env: dict[str, Any], where: str, what: str
) -> tuple[int, int, int]:
    """``instr: auto``: the legal instruction shape with the largest m x n x k that divides the op's
    M x N x K (an mma's work is whole instructions); refused when none does."""
    mnk = [_try_eval(e, env) for e in args.mnk]
    if None in mnk:  # depends on loop symbols: any legal shape is assumed to fit
        mnk = [0, 0, 0]
    m, n, k = (int(v) for v in mnk)
    best: tuple[int, int, int] | None = None
    for family in spec.shapes:
        for sm_ in family.m:
            for sn in family.n_values():
                for sk in family.k:
                    fits = all(
                        extent == 0 or extent % size == 0 for extent, size in ((m, sm_), (n, sn), (k, sk))
                    )
                    if fits and (best is None or sm_ * sn * sk > best[0] * best[1] * best[2]):
                        best = (sm_, sn, sk)
    if best is None:
        legal = "; ".join(s.describe() for s in spec.shapes)
        raise ScheduleRefused(f"{where}: instr: auto finds no {what} instruction shape dividing "
                              f"{m}x{n}x{k} (legal: {legal})")  # fmt: skip
    return best
