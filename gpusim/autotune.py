"""``auto:gemm``: the fastest legal GEMM schedule and tiling gpusim finds, standing in for cuBLAS.

A small search: each built-in GEMM schedule with a handful of tile / stage / cluster choices, and
split-K for the first two of them when the output tiles alone do not fill the SMs. Candidates the arch refuses (missing unit, dtype, shared memory ...) are skipped, and a
candidate whose tensor-core bound (FLOPs at its MMA unit's peak) is already slower than the best
time found is not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import InputError, ScheduleRefused
from gpusim.result import Prediction
from gpusim.schedule.load import load_schedule, read_spec
from gpusim.schedule.program import walk
from gpusim.summarize import predict_resolved

GEMM_PROBLEM_KEYS = ("M", "N", "K", "dtype")
DEFAULT_GEMM_PROBLEM: dict[str, Any] = {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16"}
"""What ``auto:gemm`` predicts without ``--set``: an 8192-cube GEMM in bf16 (fp16 on archs without
bf16 tensor cores, i.e. Volta)."""

# Per schedule: tilings a library would try, newest MMA unit first.
GEMM_CANDIDATES: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = (
    (
        "gemm_tcgen05",
        (
            {"PAIR": 1, "BN": 256, "CLUSTER_N": 2},
            {"PAIR": 0, "BN": 128},
            {"PAIR": 1, "BN": 256},
            {"PAIR": 0, "BN": 256, "CLUSTER_N": 2},
            {"PAIR": 1, "BN": 128},
        ),
    ),
    ("gemm_ws_cooperative", ({}, {"BN": 256, "STAGES": 3}, {"CLUSTER_M": 1})),
    ("gemm_ws_pingpong", ({}, {"BN": 256, "STAGES": 4}, {"CLUSTER_N": 1})),
    ("gemm_cp_async", ({}, {"BM": 128, "BN": 128, "STAGES": 4}, {"BM": 256, "BN": 128, "STAGES": 3})),
    ("gemm_sync", ({}, {"BN": 128, "CTAS_PER_SM": 2})),
)
SPLIT_CHOICES = (2, 4, 8, 16)
AUTO_KINDS = ("auto", "auto:gemm", "auto:attn", "auto:attention")


@dataclass(frozen=True)
class Candidate:
    """One tried configuration and its outcome."""

    schedule: str
    params: dict[str, Any]
    time_us: float | None
    note: str

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"schedule": self.schedule, "params": self.params, "time_us": self.time_us, "note": self.note}


def is_auto(name: str) -> bool:
    """Whether a schedule name asks for the search."""
    return name in AUTO_KINDS


def _tensor_bound_us(sched: Any, arch: Arch) -> float:
    units = {s.args["unit"] for r in sched.roles.values() for s, _ in walk(r.program) if s.op == "mma"}
    rates = []
    for unit_name in units:
        unit = arch.tensor_cores.unit(unit_name)
        if unit is not None and sched.dtype in unit.dtypes:
            rates.append(unit.dtypes[sched.dtype].flops_per_clk_per_sm)
    if not rates:
        return 0.0
    flops_per_us = max(rates) * arch.sm_count * arch.sustained_clock_mhz
    return sched.flops / flops_per_us


def default_gemm_problem(arch: Arch) -> dict[str, Any]:
    """The documented default problem of ``auto:gemm`` on ``arch`` (see DEFAULT_GEMM_PROBLEM)."""
    problem = dict(DEFAULT_GEMM_PROBLEM)
    if "bf16" not in arch.supported_dtypes():
        problem["dtype"] = "fp16"
    return problem


def search_gemm(
    arch: Arch,
    problem: dict[str, Any],
    deadline_s: float | None = None,
    *,
    exact: bool = False,
    on_candidate: Any = None,
) -> tuple[Prediction, list[Candidate]]:
    """Simulate the candidate GEMM schedules for ``problem`` on ``arch`` (with the costs it carries)
    and return the fastest, time-only (SimulationTimeout once ``deadline_s``, a
    ``time.perf_counter()`` value, has passed). Missing problem keys take the documented default;
    ``on_candidate(n_done, n_total)`` is called after each candidate (progress bars)."""
    unknown = [k for k in problem if k not in GEMM_PROBLEM_KEYS]
    if unknown:
        raise InputError(f"auto:gemm: --set {unknown[0]}: only the problem ({', '.join(GEMM_PROBLEM_KEYS)}) can be "
                         "set for auto; name a schedule to set its parameters")  # fmt: skip
    problem = {**default_gemm_problem(arch), **problem}
    plan = []
    for name, choices in GEMM_CANDIDATES:
        options = list(choices)
        if "SPLITS" in read_spec(name).params:
            options += [{**c, "SPLITS": s} for c in choices[:2] for s in SPLIT_CHOICES]
        plan.extend((name, params) for params in options)
    tried: list[Candidate] = []
    best: Prediction | None = None
    for done, (name, params) in enumerate(plan, start=1):
        if on_candidate is not None:
            on_candidate(done - 1, len(plan))
        try:
            sched = load_schedule(name, arch, {**problem, **params})
            bound = _tensor_bound_us(sched, arch)
            if best is not None and bound >= best.time_us:
                tried.append(Candidate(name, params, None, f"skipped: tensor bound {bound:.1f} us >= best"))
                continue
            if "SPLITS" in params and sched.launch.num_units >= arch.sm_count:
                tried.append(Candidate(name, params, None, "skipped: enough tiles without split-K"))
                continue
            prediction = predict_resolved(sched, arch, attribute=False, exact=exact, deadline_s=deadline_s)
        except ScheduleRefused as exc:
            tried.append(Candidate(name, params, None, f"refused: {exc}"))
            continue
        tried.append(Candidate(name, params, prediction.time_us, "simulated"))
        if best is None or prediction.time_us < best.time_us:
            best = prediction
    if on_candidate is not None:
        on_candidate(len(plan), len(plan))
    if best is None:
        reasons = "; ".join(c.note for c in tried[:3])
        raise ScheduleRefused(f"auto:gemm on {arch.id}: no GEMM schedule is legal for {problem} ({reasons})")
    winner = min((c for c in tried if c.time_us is not None), key=lambda c: c.time_us)  # type: ignore[arg-type,return-value]
    choice = {
        "schedule": winner.schedule,
        "params": winner.params,
        "candidates": [c.as_dict() for c in tried],
    }
    return replace(best, choice=choice), tried
