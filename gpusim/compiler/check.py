"""Compare a schedule with a real build: registers per role, threads and shared memory per CTA, stages,
and the mainloop's instruction mix (tensor instructions and mbarrier operations per k-tile)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from gpusim.arch import Arch
from gpusim.compiler.build import BuildReport, KernelReport
from gpusim.compiler.sass import Loop
from gpusim.schedule.check import check_schedule
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import Stmt

_SYNC_OPS = frozenset({"wait", "release", "acquire", "commit", "arrive", "sync", "syncthreads"})
_TENSOR_PREFIX = {"wgmma": ("HGMMA", "QGMMA", "IGMMA", "BGMMA"), "mma_sync": ("HMMA", "IMMA", "DMMA"),
                  "tcgen05": ("UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA", "UTCMMA")}  # fmt: skip
_SHAPE = re.compile(r"\.(\d+)x(\d+)x(\d+)\b")
_SYNC_SHAPES = {
    "16816": (16, 8, 16),
    "1688": (16, 8, 8),
    "884": (8, 8, 4),
    "16832": (16, 8, 32),
    "8816": (8, 8, 16),
}
"""mma.sync shapes as SASS writes them (HMMA.16816 is m16n8k16)."""
_STAGES = re.compile(
    r"Mainloop\w*?(?:<|ILi)(\d+)"
)  # demangled or mangled (GNU demanglers reject some CUDA names)


@dataclass(frozen=True)
class Row:
    """One compared quantity: the schedule's number, the build's, and whether they agree."""

    what: str
    schedule: Any
    build: Any
    agrees: bool | None
    """None where the two are not the same kind of number (shown for information)."""
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


@dataclass
class CheckReport:
    """Every compared quantity of one schedule against one kernel of a build."""

    schedule: str
    arch: str
    kernel: str
    build: str
    rows: list[Row] = field(default_factory=list)

    @property
    def differences(self) -> list[Row]:
        """The rows where schedule and build disagree."""
        return [r for r in self.rows if r.agrees is False]

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "schedule": self.schedule,
            "arch": self.arch,
            "kernel": self.kernel,
            "build": self.build,
            "rows": [r.as_dict() for r in self.rows],
            "differences": len(self.differences),
        }


@dataclass(frozen=True)
class _LoopMma:
    role: str
    unit: str
    count_per_iteration: float
    instr: tuple[int, ...]
    sync_ops: int


def _eval(expr: Any, env: dict[str, Any]) -> Any:
    return expr(env) if callable(expr) else expr


def _innermost_mma_loops(sched: Schedule) -> list[_LoopMma]:
    """Per role, the innermost ``for`` bodies that issue an mma: instructions per iteration per issuing
    thread/warp (what one copy of the SASS loop holds) and the synchronisation ops per iteration."""
    found: list[_LoopMma] = []
    env = dict(sched.env)

    def visit(stmts: tuple[Stmt, ...], role_name: str, warps: int) -> None:
        for stmt in stmts:
            if stmt.body:
                visit(stmt.body, role_name, warps)
            if stmt.op != "for":
                continue
            mmas = [s for s in stmt.body if s.op == "mma"]
            if not mmas or any(s.op == "for" for s in stmt.body):
                continue
            syncs = sum(1 for s in stmt.body if s.op in _SYNC_OPS)
            for mma in mmas:
                unit = str(mma.args["unit"])
                mnk = [int(_eval(e, env)) for e in mma.args["mnk"]]
                instr = [int(_eval(e, env)) for e in mma.args.get("instr", mma.args["mnk"])]
                count = math.prod(a / b for a, b in zip(mnk, instr, strict=True))
                per_copy = (
                    count / warps if unit == "mma_sync" else count
                )  # wgmma: per warpgroup; tcgen05: one thread
                per_copy = int(per_copy) if float(per_copy).is_integer() else per_copy
                found.append(_LoopMma(role_name, unit, per_copy, tuple(instr), syncs))

    for role in sched.roles.values():
        visit(role.program, role.name, role.warps)
    return found


def _mainloop(kernel: KernelReport, prefixes: tuple[str, ...]) -> Loop | None:
    if kernel.sass is None:
        return None
    loops = [loop for loop in kernel.sass.innermost_loops() if not loop.is_wait]
    scored = [(sum(loop.mix.count(p) for p in prefixes), loop) for loop in loops]
    scored = [(n, loop) for n, loop in scored if n]
    return max(scored, key=lambda item: (item[0], -item[1].start))[1] if scored else None


def _build_shape(opcodes: dict[str, int], prefixes: tuple[str, ...]) -> tuple[int, ...] | None:
    for opcode in opcodes:
        if not opcode.startswith(prefixes):
            continue
        if m := _SHAPE.search(opcode):
            return tuple(int(g) for g in m.groups())
        parts = opcode.split(".")
        if len(parts) > 1 and parts[1] in _SYNC_SHAPES:
            return _SYNC_SHAPES[parts[1]]
    return None


def _register_rows(sched: Schedule, kernel: KernelReport, budgets_regs_cta: int) -> list[Row]:
    res = kernel.resources
    rows: list[Row] = []
    roles = [r for r in sched.roles.values() if r.regs is not None]
    setmaxnreg = sorted(set(res.warpgroup_registers))
    for role in roles:
        if setmaxnreg:
            build = (
                setmaxnreg[0]
                if role.regs == min(r.regs for r in roles) and len(roles) > 1
                else setmaxnreg[-1]
            )
            what = f"registers per thread, role '{role.name}' (setmaxnreg)"
            rows.append(Row(what, role.regs, build, role.regs == build))
        else:
            what = f"registers per thread, role '{role.name}'"
            note = (
                ""
                if role.regs >= res.registers_per_thread
                else "the build needs more than the schedule budgets"
            )
            rows.append(
                Row(what, role.regs, res.registers_per_thread, role.regs == res.registers_per_thread, note)
            )
    if not res.registers_per_thread:  # saved SASS alone states no register count
        return [r for r in rows if "setmaxnreg" in r.what]
    threads = res.max_threads_per_cta or sched.threads_per_cta
    regs_per_warp = -(-res.registers_per_thread * 32 // 256) * 256
    build_cta = regs_per_warp * -(-threads // 32)
    rows.append(
        Row(
            "registers per CTA at launch",
            budgets_regs_cta,
            build_cta,
            budgets_regs_cta == build_cta,
            f"build: {res.registers_per_thread} registers x {threads} threads (ptxas, allocated per warp in 256s)",
        )
    )
    return rows


def check_against_build(
    sched: Schedule, arch: Arch, build: BuildReport, kernel_name: str | None = None
) -> CheckReport:
    """Compare ``sched`` (resolved for ``arch``) with one kernel of ``build`` (the largest by default)."""
    kernel = build.kernel(kernel_name)
    res = kernel.resources
    budgets = check_schedule(sched, arch)
    report = CheckReport(sched.name, arch.id, kernel.name, build.path)
    rows = report.rows
    rows.extend(_register_rows(sched, kernel, budgets.registers_per_cta))
    if res.max_threads_per_cta:
        rows.append(Row("threads per CTA", sched.threads_per_cta, res.max_threads_per_cta,
                        sched.threads_per_cta == res.max_threads_per_cta))  # fmt: skip
    if res.dynamic_smem_bytes is not None or res.static_smem_bytes:
        delta = res.smem_bytes_per_cta - budgets.smem_bytes_per_cta
        rows.append(Row("shared memory per CTA (bytes)", budgets.smem_bytes_per_cta, res.smem_bytes_per_cta,
                        delta == 0, f"build {delta:+,} bytes ({delta / 1024:+.1f} KiB)" if delta else ""))  # fmt: skip
    stages_match = _STAGES.search(kernel.name) or _STAGES.search(res.mangled_name)
    ring = max(
        (b for b in sched.buffers.values() if b.space == "smem" and b.has_protocol),
        key=lambda b: b.stages,
        default=None,
    )
    if stages_match and ring is not None:
        build_stages = int(stages_match[1])
        rows.append(
            Row(
                f"pipeline stages (buffer '{ring.name}')",
                ring.stages,
                build_stages,
                ring.stages == build_stages,
            )
        )
    if res.spills or res.spill_warning():
        rows.append(
            Row(
                "spills (bytes stored/loaded)",
                "0/0",
                f"{res.spill_store_bytes}/{res.spill_load_bytes}",
                not res.spills,
            )
        )
    for loop_mma in _innermost_mma_loops(sched):
        prefixes = _TENSOR_PREFIX.get(loop_mma.unit, ())
        loop = _mainloop(kernel, prefixes)
        if loop is None:
            rows.append(Row(f"{loop_mma.unit} instructions per k-tile (role '{loop_mma.role}')",
                            loop_mma.count_per_iteration, None, None, "no loop with such instructions in the build"))  # fmt: skip
            continue
        built = sum(loop.mix.count(p) for p in prefixes)
        ratio = built / loop_mma.count_per_iteration if loop_mma.count_per_iteration else float("nan")
        note = f"SASS loop 0x{loop.start:04x}-0x{loop.end:04x}"
        agrees = built == loop_mma.count_per_iteration
        if not agrees and ratio.is_integer() and ratio > 1:
            note += f"; {ratio:.0f}x the schedule's: the loop body covers {ratio:.0f} k-tiles (unrolled) or the tile is larger"
        rows.append(Row(f"{loop_mma.unit} instructions per k-tile (role '{loop_mma.role}')",
                        loop_mma.count_per_iteration, built, agrees, note))  # fmt: skip
        shape = _build_shape(loop.mix.opcodes, prefixes)
        if shape is not None:
            rows.append(Row(f"{loop_mma.unit} instruction shape (m, n, k)", list(loop_mma.instr), list(shape),
                            tuple(loop_mma.instr) == shape))  # fmt: skip
        rows.append(Row("mbarrier/barrier instructions per k-tile (SYNCS, BAR)", loop_mma.sync_ops,
                        loop.mix.count("SYNCS") + loop.mix.count("BAR"), None,
                        "schedule: wait/release/sync statements; build: SASS instructions (a wait is a try-wait plus its retry branch)"))  # fmt: skip
    return report
