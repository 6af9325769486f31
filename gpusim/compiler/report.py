"""Rich tables for ``gpusim resources`` and ``gpusim check`` (formatting only)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from gpusim.compiler.build import BuildReport, KernelReport
from gpusim.compiler.check import CheckReport
from gpusim.compiler.demangle import short_name
from gpusim.compiler.sass import Loop, instruction_class

_MIX_CLASSES = (
    "tensor",
    "tma",
    "shared",
    "sfu",
    "fp32",
    "fp16",
    "conversion",
    "barrier",
    "memory",
    "local",
    "integer",
)


def _opt(value: Any) -> str:
    return "?" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def resources_tables(
    report: BuildReport, kernels: list[KernelReport], occupancies: list[tuple[Any, str]]
) -> list[Any]:
    """One resources table and one instruction-mix table for the kernels of a build."""
    took = f", compiled in {report.compile_s:.1f} s" if report.compile_s is not None else ""
    table = Table(title=f"{report.path} ({report.arch}{took})", title_justify="left")
    for column in ("kernel", "regs", "smem static", "smem dynamic", "spill st/ld", "stack", "local", "barriers",
                   "threads", "setmaxnreg", "occupancy"):  # fmt: skip
        table.add_column(column, justify="left" if column in {"kernel", "occupancy"} else "right")
    for k, (occ, note) in zip(kernels, occupancies, strict=True):
        r = k.resources
        spill = f"{_opt(r.spill_store_bytes)}/{_opt(r.spill_load_bytes)}"
        table.add_row(
            short_name(k.name, 60), str(r.registers_per_thread), _opt(r.static_smem_bytes), _opt(r.dynamic_smem_bytes),
            Text(spill, style="bold red") if r.spills else spill, _opt(r.stack_frame_bytes), _opt(r.local_bytes),
            _opt(r.barriers), _opt(r.max_threads_per_cta), "/".join(map(str, r.warpgroup_registers)) or "-",
            occ.text() if occ else note,
        )  # fmt: skip
    tables: list[Any] = [table]
    with_sass = [k for k in kernels if k.sass is not None]
    if with_sass:
        mix = Table(
            title="SASS instruction mix (static counts): whole kernel | innermost loops", title_justify="left"
        )
        mix.add_column("kernel / loop")
        for name in _MIX_CLASSES:
            mix.add_column(name, justify="right")
        mix.add_column("key opcodes")
        for k in with_sass:
            assert k.sass is not None
            whole = k.sass.mix
            mix.add_row(short_name(k.name, 40), *(str(whole.classes.get(c, 0)) for c in _MIX_CLASSES), _key_opcodes(whole.opcodes))  # fmt: skip
            for loop in _key_loops(k):
                m = loop.mix
                mix.add_row(f"  loop 0x{loop.start:04x}-0x{loop.end:04x}", *(str(m.classes.get(c, 0)) for c in _MIX_CLASSES),
                            _key_opcodes(m.opcodes))  # fmt: skip
        tables.append(mix)
    return tables


def _key_loops(kernel: KernelReport, fallback: int = 3) -> list[Loop]:
    """The innermost compute loops worth a row: those with tensor, TMA or SFU instructions, else the
    ``fallback`` largest (the JSON output lists every loop)."""
    assert kernel.sass is not None
    loops = [loop for loop in kernel.sass.innermost_loops() if not loop.is_wait]
    key = [loop for loop in loops if any(c in loop.mix.classes for c in ("tensor", "tma", "sfu"))]
    return key or sorted(loops, key=lambda loop: -loop.mix.instructions)[:fallback]


def _key_opcodes(opcodes: dict[str, int], limit: int = 4) -> str:
    keys = [
        (op, n) for op, n in opcodes.items() if instruction_class(op) not in {"integer", "other", "control"}
    ]
    return ", ".join(f"{op} {n}" for op, n in keys[:limit])


def loop_listing(kernel: KernelReport) -> Table:
    """The innermost (non-wait) loops' SASS, each instruction with its class."""
    table = Table(title=f"innermost loops of {short_name(kernel.name, 80)}", title_justify="left")
    table.add_column("class")
    table.add_column("instruction")
    if kernel.sass is None:
        return table
    for loop in kernel.sass.innermost_loops():
        if loop.is_wait:
            continue
        table.add_row(
            "",
            Text(
                f"loop 0x{loop.start:04x}-0x{loop.end:04x}: {loop.mix.instructions} instructions",
                style="bold",
            ),
        )
        for ins in loop.instructions:
            table.add_row(ins.klass, ins.text())
    return table


def check_table(report: CheckReport) -> Table:
    """The schedule-vs-build comparison, differences marked."""
    n = len(report.differences)
    table = Table(
        title=f"{report.schedule} on {report.arch} vs {report.build}: {n} difference{'s' if n != 1 else ''}\n"
        f"kernel {short_name(report.kernel, 90)}",
        title_justify="left",
    )
    for column in ("", "quantity", "schedule", "build", "note"):
        table.add_column(column)
    for row in report.rows:
        mark = {True: Text("ok", style="green"), False: Text("DIFF", style="bold red"), None: Text("info", style="dim")}[row.agrees]  # fmt: skip
        table.add_row(mark, row.what, _opt(row.schedule), _opt(row.build), row.note)
    return table
