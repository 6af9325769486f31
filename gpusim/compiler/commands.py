"""The ``gpusim resources`` and ``gpusim check`` commands (registered on the main app by :func:`register`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gpusim.cli_guard import check_build_dir, check_output_path
from gpusim.errors import GpusimError, InputError, quote

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
IncludeOpt = Annotated[
    list[str] | None, typer.Option("-I", "--include", help="nvcc include directory (.cu input).")
]
DefineOpt = Annotated[
    list[str] | None, typer.Option("-D", "--define", help="nvcc macro NAME[=VALUE] (.cu input).")
]
StdOpt = Annotated[str | None, typer.Option("--std", help="C++ standard for nvcc, e.g. c++20 (.cu input).")]
NvccOpt = Annotated[
    list[str] | None, typer.Option("--nvcc", help="Extra nvcc flag, e.g. --nvcc=-lineinfo (.cu input).")
]
MaxRegOpt = Annotated[
    int | None, typer.Option("--maxrregcount", help="Cap registers per thread (nvcc -maxrregcount).")
]
KernelOpt = Annotated[str | None, typer.Option("--kernel", help="Only kernels whose name contains this.")]


def nvcc_flags(include: list[str] | None, define: list[str] | None, std: str | None, nvcc: list[str] | None,
               maxrregcount: int | None) -> list[str]:  # fmt: skip
    """The nvcc flags the CLI options stand for."""
    flags = [f"-I{d}" for d in include or []] + [f"-D{d}" for d in define or []]
    if std:
        flags.append(f"-std={std.removeprefix('=')}")
    if maxrregcount is not None:
        flags.append(f"-maxrregcount={maxrregcount}")
    return flags + list(nvcc or [])


MAX_THREADS_PER_CTA = 1024
"""Threads per block on every NVIDIA GPU since sm_20."""
MAX_REGS_PER_THREAD = 255
"""Registers a thread may hold on every NVIDIA GPU since sm_35 (nvcc's -maxrregcount ceiling)."""


def check_build_options(threads: int | None, maxrregcount: int | None) -> None:
    """Refuse ``--threads`` and ``--maxrregcount`` values no launch or build can have, before any work."""
    if threads is not None and not 1 <= threads <= MAX_THREADS_PER_CTA:
        raise InputError(f"--threads {threads}: a CTA has 1 to {MAX_THREADS_PER_CTA} threads")
    if maxrregcount is not None and not 1 <= maxrregcount <= MAX_REGS_PER_THREAD:
        raise InputError(
            f"--maxrregcount {maxrregcount}: expected 1 to {MAX_REGS_PER_THREAD} registers per thread"
        )


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _occupancy_or_note(resources: Any, arch_name: str, threads: int | None) -> tuple[Any, str]:
    from gpusim.arch import load_arch
    from gpusim.compiler.occupancy import occupancy

    try:
        arch = load_arch(arch_name)
    except GpusimError as exc:
        return None, f"no occupancy: {exc}"
    try:
        return occupancy(resources, arch, threads), ""
    except GpusimError as exc:
        return None, str(exc)


def resources_cmd(
    file: Annotated[
        str,
        typer.Argument(help=".cu source, .cubin, fatbin/executable/.so, or saved ptxas -v / cuobjdump text."),
    ],
    arch: Annotated[
        str, typer.Option("--arch", "-a", help="SM target (sm_90a, sm_80, sm_100a) or arch id.")
    ] = "sm_90a",
    as_json: JsonFlag = False,
    sass: Annotated[
        bool, typer.Option("--sass", help="Print each innermost loop's SASS, annotated by class.")
    ] = False,
    threads: Annotated[
        int | None, typer.Option("--threads", help="Threads per CTA (default: launch bounds).")
    ] = None,
    kernel: KernelOpt = None,
    include: IncludeOpt = None,
    define: DefineOpt = None,
    std: StdOpt = None,
    nvcc: NvccOpt = None,
    maxrregcount: MaxRegOpt = None,
) -> None:
    """Registers, shared memory, spills, stack, barriers and occupancy per kernel of a build, and its SASS
    instruction mix (whole kernel and innermost loops)."""
    from gpusim.compiler.build import inspect_file
    from gpusim.compiler.report import loop_listing, resources_tables

    check_build_options(threads, maxrregcount)
    report = inspect_file(file, arch, nvcc_flags(include, define, std, nvcc, maxrregcount))
    kernels = [
        k for k in report.kernels if kernel is None or kernel in k.name or kernel in k.resources.mangled_name
    ]
    occupancies = [_occupancy_or_note(k.resources, arch, threads) for k in kernels]
    if as_json:
        _print_json({
            "file": report.path, "arch": report.arch, "compile_s": report.compile_s, "command": report.command,
            "kernels": [
                {**k.as_dict(), "occupancy": occ.as_dict() if occ else None, "occupancy_note": note or None,
                 "warning": k.resources.spill_warning()}
                for k, (occ, note) in zip(kernels, occupancies, strict=True)
            ],
        })  # fmt: skip
        return
    from gpusim.report.console import make_console

    console = make_console()
    for renderable in resources_tables(report, kernels, occupancies):
        console.print(renderable)
    if sass:
        for k in kernels:
            console.print(loop_listing(k))
    for k in kernels:
        if warning := k.resources.spill_warning():
            sys.stderr.write(f"gpusim: warning: {warning}\n")


def check_cmd(
    schedule: Annotated[str, typer.Argument(help="Schedule name or YAML path.")],
    against: Annotated[
        str, typer.Option("--against", help="The build: .cu, .cubin, binary or saved tool text.")
    ],
    arch: Annotated[
        str, typer.Option("--arch", "-a", help="SM target (sm_90a) or arch id (h100).")
    ] = "sm_90a",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE schedule override.")
    ] = None,
    as_json: JsonFlag = False,
    kernel: KernelOpt = None,
    include: IncludeOpt = None,
    define: DefineOpt = None,
    std: StdOpt = None,
    nvcc: NvccOpt = None,
    maxrregcount: MaxRegOpt = None,
) -> None:
    """Compare a schedule's register, thread and shared-memory budgets and its mainloop instruction mix
    (tensor instructions and barriers per k-tile) with a real build, each difference with both numbers."""
    from gpusim.arch import load_arch
    from gpusim.compiler.build import inspect_file
    from gpusim.compiler.check import check_against_build
    from gpusim.compiler.report import check_table
    from gpusim.schedule.load import load_schedule, parse_override

    check_build_options(None, maxrregcount)
    arch_obj = load_arch(arch)
    sched = load_schedule(schedule, arch_obj, dict(parse_override(s) for s in sets or []))
    build = inspect_file(against, arch, nvcc_flags(include, define, std, nvcc, maxrregcount))
    result = check_against_build(sched, arch_obj, build, kernel)
    if as_json:
        _print_json(result.as_dict())
        return
    from gpusim.report.console import make_console

    make_console().print(check_table(result))


MAX_KERNEL_ITERS = 100_000
"""The most timed launches ``measure-kernels`` accepts per kernel (20 is the default; more only adds time)."""


def measure_kernels_cmd(
    out: Annotated[str, typer.Option("--out", help="Measurement CSV to write.")] = "measured_kernels.csv",
    iters: Annotated[int, typer.Option("--iters", help="Timed launches per kernel.")] = 20,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Comma-separated kernel files or stems (gemm_sync,stream.cu); a kernel that faults poisons "
            "the process's CUDA context, so a script that must survive one runs each in its own process.",
        ),
    ] = None,
    build_dir: Annotated[
        str | None, typer.Option("--build-dir", help="Keep the CUTLASS builds here and reuse them.")
    ] = None,
) -> None:
    """Time the reference kernels (kernels/, the builds `gpusim check` reads) on the local GPU through
    cuda-python; rows in the measurement format. Kernels built for another SM are skipped, with a note."""
    import csv

    from gpusim.compiler.launch import default_problems, local_device, measure_kernel

    if not 1 <= iters <= MAX_KERNEL_ITERS:
        raise InputError(f"--iters {iters}: expected a count from 1 to {MAX_KERNEL_ITERS:,}")
    check_output_path(out, "--out", (".csv",))
    if build_dir is not None:
        check_build_dir(build_dir)
    problems = default_problems()
    if only is not None:
        wanted = {w.strip().removesuffix(".cu") for w in only.split(",") if w.strip()}
        if not wanted:
            raise InputError(f"--only '{quote(only)}': names no kernel; give kernel stems (gemm_sync,stream)")
        known = {k.file.removesuffix(".cu") for k, _ in problems}
        if unknown := sorted(wanted - known):
            raise InputError(f"--only {quote(only)}: no reference kernel {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")  # fmt: skip
        problems = [(k, p) for k, p in problems if k.file.removesuffix(".cu") in wanted]
    local_device()  # no GPU: one line, before any compile
    rows = []
    for kernel, problem in problems:
        try:
            rows.append(measure_kernel(kernel, problem, iters, Path(build_dir) if build_dir else None).row())
        except GpusimError as exc:
            sys.stderr.write(f"gpusim: skipped {kernel.file}: {exc}\n")
    if not rows:
        raise GpusimError("no reference kernel could be timed on this machine")
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    sys.stdout.write(f"wrote {len(rows)} rows to {out}\n")


def register(app: typer.Typer) -> None:
    """Add ``resources``, ``check`` and ``measure-kernels`` to the ``gpusim`` app."""
    app.command("resources")(resources_cmd)
    app.command("check")(check_cmd)
    app.command("measure-kernels")(measure_kernels_cmd)


def build_for_predict(schedule: str, arch: str | None, build_file: str) -> Any:
    """``predict --resources FILE``: the build (inspected once, for the schedule's arch), with its spill
    warnings printed on stderr; gpusim.predict(resources=...) takes it."""
    from gpusim.api import reference_arch
    from gpusim.compiler.build import inspect_file

    if schedule.startswith("auto"):
        raise InputError("--resources needs a named schedule (a build is one kernel, not a search)")
    report = inspect_file(build_file, arch or reference_arch(schedule))
    for kernel in report.kernels:
        if warning := kernel.resources.spill_warning():
            sys.stderr.write(f"gpusim: warning: {warning}\n")
    return report
