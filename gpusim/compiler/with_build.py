"""``predict --resources FILE``: a schedule whose register budgets are the build's, refused where the
build's registers or shared memory do not allow the schedule's CTAs per SM, with spill warnings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpusim.arch import Arch
from gpusim.compiler.build import BuildReport, inspect_file
from gpusim.compiler.occupancy import occupancy
from gpusim.errors import ScheduleRefused
from gpusim.schedule.ir import Schedule


def schedule_with_build(
    sched: Schedule, arch: Arch, build: BuildReport | str | Path, kernel: str | None = None
) -> tuple[Schedule, list[str]]:
    """``sched`` with each role's registers taken from the build (setmaxnreg counts per warpgroup where
    the SASS sets them, else ptxas's count), and the warnings to print (spills). Refuses (one line, both
    numbers) when the build allows fewer CTAs per SM than the schedule launches."""
    report = build if isinstance(build, BuildReport) else inspect_file(build, arch.id, sass=True)
    kernel_report = report.kernel(kernel)
    res = kernel_report.resources
    warnings = [w for w in (res.spill_warning(),) if w]
    occ = occupancy(res, arch, res.max_threads_per_cta or sched.threads_per_cta)
    if occ.ctas_per_sm < sched.launch.ctas_per_sm:
        raise ScheduleRefused(
            f"{sched.name} on {arch.id}: the build ({Path(report.path).name}) allows {occ.ctas_per_sm} CTA(s) "
            f"per SM ({occ.binding.replace('_', ' ')}: {res.registers_per_thread} registers, "
            f"{res.smem_bytes_per_cta:,} bytes shared memory per CTA), the schedule launches {sched.launch.ctas_per_sm}"
        )
    counts = sorted(set(res.warpgroup_registers))
    budgeted = [r for r in sched.roles.values() if r.regs is not None]
    lowest = min((r.regs for r in budgeted), default=None)
    roles = {}
    for name, role in sched.roles.items():
        if counts and len(budgeted) > 1:
            regs = counts[0] if role.regs == lowest else counts[-1]
        else:
            regs = res.registers_per_thread
        roles[name] = replace(role, regs=regs)
    return replace(sched, roles=roles), warnings
