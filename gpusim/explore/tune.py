"""The tuner: search a kernel's candidate space for the fastest legal configuration on an arch.

Candidates the checks refuse are dropped first (with ``STAGES: fit`` resolved to the most stages that fit).
Small spaces are predicted exhaustively (in parallel on the given executor); larger ones are sampled with
optuna's TPE sampler (seeded, so the same inputs give the same pick) within a budget of predictions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import InputError, LaunchTooLarge, ScheduleRefused, override_name
from gpusim.explore.adapter import Costs, arch_for
from gpusim.explore.executors import Executor, InlineExecutor
from gpusim.explore.grid import Point
from gpusim.explore.spaces import (
    ATTENTION_KERNELS,
    ATTENTION_PROBLEM_KEYS,
    FIT,
    GEMM_KERNELS,
    GEMM_PROBLEM_KEYS,
    Candidate,
    check_problem,
    space_for,
)
from gpusim.explore.sweep import run_sweep
from gpusim.explore.table import rank_rows

DEFAULT_BUDGET = 160
MAX_STAGES = 8
SEED = 0
DEFAULT_ATTENTION_PROBLEM: dict[str, Any] = {"batch": 4, "heads": 16, "seqlen_q": 4096, "head_dim": 128,
                                             "causal": 0, "dtype": "bf16"}  # fmt: skip
"""What ``auto:attention`` predicts for the keys not given (every candidate runs the same problem;
``seqlen_kv`` and ``heads_kv`` default, as in the schedules, to ``seqlen_q`` and ``heads``)."""


@dataclass
class TuneResult:
    """What the tuner tried and what it picked."""

    kernel: str
    arch: str
    problem: dict[str, Any]
    mode: str
    candidates: int
    legal: list[Candidate]
    refused: list[tuple[Candidate, str]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ranked(self) -> list[dict[str, Any]]:
        """Predicted configurations, fastest first."""
        return rank_rows(self.rows)

    @property
    def best(self) -> dict[str, Any]:
        """The fastest predicted configuration's row."""
        ranked = self.ranked
        if not ranked:
            raise ScheduleRefused(
                f"{self.kernel} on {self.arch}: no candidate could be predicted for {self.problem}"
            )
        return ranked[0]

    def origin(self, row: dict[str, Any]) -> str:
        """Which library configuration a row came from."""
        return self.legal[row["point"]].origin if row["point"] < len(self.legal) else ""


def _problem_keys(kernel: str) -> tuple[str, ...] | None:
    if kernel in GEMM_KERNELS:
        return GEMM_PROBLEM_KEYS
    if kernel in ATTENTION_KERNELS:
        return ATTENTION_PROBLEM_KEYS
    return None


def resolve_candidate(
    candidate: Candidate, arch: Arch, problem: dict[str, Any]
) -> tuple[Candidate, Any] | str:
    """The candidate with STAGES=fit replaced by the most stages that pass the checks, and its resolved
    schedule; or the reason the checks refuse it."""
    from gpusim.schedule.check import check_schedule
    from gpusim.schedule.load import load_schedule

    params = candidate.overrides
    fit_key = next((k for k, v in params.items() if v == FIT), None)
    counts: list[int | None] = list(range(MAX_STAGES, 1, -1)) if fit_key else [None]
    reason = "no stage count fits"
    for stages in counts:
        if fit_key is not None:
            params[fit_key] = stages
        try:
            sched = load_schedule(candidate.schedule, arch, {**problem, **params})
            check_schedule(sched, arch)
        except (ScheduleRefused, LaunchTooLarge) as exc:  # too many CTAs at this tile size: another may fit
            reason = str(exc)
            continue
        if fit_key is None:
            return candidate, sched
        return Candidate(
            candidate.schedule, tuple(params.items()), f"{candidate.origin}, {stages} stages"
        ), sched
    return reason


def _resolve_stages(
    candidate: Candidate, arch: Arch, costs: Costs, problem: dict[str, Any]
) -> Candidate | str:
    """The candidate with STAGES=fit resolved, or the refusal (see resolve_candidate)."""
    resolved = resolve_candidate(candidate, arch_for(arch, costs), problem)
    return resolved if isinstance(resolved, str) else resolved[0]


def _points(legal: Sequence[Candidate], arch_id: str, problem: dict[str, Any]) -> list[Point]:
    return [
        Point(i, c.schedule, arch_id, tuple({**problem, **c.overrides}.items())) for i, c in enumerate(legal)
    ]


def _sample(points: list[Point], legal: Sequence[Candidate], costs: Costs, executor: Executor, budget: int,
            batch: int, archs: dict[str, Arch]) -> list[dict[str, Any]]:  # fmt: skip
    """Optuna TPE over (schedule, then each parameter's values); combinations outside the legal list
    are told as failed without a prediction."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    index = {(c.schedule, c.params): i for i, c in enumerate(legal)}
    schedules = sorted({c.schedule for c in legal})
    values: dict[tuple[str, str], list[Any]] = {}
    for c in legal:
        for k, v in c.params:
            options = values.setdefault((c.schedule, k), [])
            if v not in options:
                options.append(v)
    sampler = optuna.samplers.TPESampler(seed=SEED, n_startup_trials=min(16, budget // 2))
    study = optuna.create_study(direction="minimize", sampler=sampler)
    rows: dict[int, dict[str, Any]] = {}
    attempts = 0
    while len(rows) < min(budget, len(legal)) and attempts < 20 * budget:
        asked: list[tuple[Any, int]] = []
        for _ in range(batch):
            attempts += 1
            trial = study.ask()
            schedule = trial.suggest_categorical("schedule", schedules)
            params = tuple((k, trial.suggest_categorical(f"{schedule}.{k}", values[(schedule, k)]))
                           for k, _ in next(c.params for c in legal if c.schedule == schedule))  # fmt: skip
            i = index.get((schedule, params))
            if i is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            elif i in rows:
                study.tell(trial, rows[i]["time_us"] if rows[i]["status"] == "ok" else float("inf"))
            else:
                asked.append((trial, i))
        fresh = {i for _, i in asked}
        for row in executor.run([points[i] for i in sorted(fresh)], costs, archs):
            rows[row["point"]] = row
        for trial, i in asked:
            row = rows[i]
            study.tell(trial, row["time_us"] if row["status"] == "ok" else float("inf"))
    return [rows[i] for i in sorted(rows)]


def tune(kernel: str, arch: str | Arch, problem: dict[str, Any], *, costs: Costs = "calibrated",
         executor: Executor | None = None, budget: int = DEFAULT_BUDGET,
         candidates: Sequence[Candidate] | None = None,
         on_row: Callable[[dict[str, Any], Any], None] | None = None) -> TuneResult:  # fmt: skip
    """Search ``kernel``'s candidates (``auto:gemm``, ``auto:attention`` or a schedule name) for
    ``problem`` on ``arch``; exhaustive when the legal candidates fit in ``budget``, else sampled."""
    start = time.perf_counter()
    arch_obj = arch_for(arch, costs)
    if kernel in ATTENTION_KERNELS:
        problem = {**DEFAULT_ATTENTION_PROBLEM, **problem}
    keys = _problem_keys(kernel)
    if keys is not None:
        unknown = sorted(set(problem) - set(keys))
        if unknown:
            raise InputError(f"{kernel}: {override_name(unknown[0])}: only the problem ({', '.join(keys)}) can be set; "
                             "name a schedule to fix its parameters")  # fmt: skip
    check_problem(kernel, problem)
    space = list(candidates) if candidates is not None else space_for(kernel, arch_obj, problem)
    if not space:
        raise InputError(f"{kernel}: no candidate space on {arch_obj.id} (tunable: auto:gemm, auto:attention, "
                         "gemm_fp8_deepgemm, or a GEMM / attention schedule)")  # fmt: skip
    fixed = {k: v for k, v in problem.items()}
    legal: list[Candidate] = []
    refused: list[tuple[Candidate, str]] = []
    for candidate in space:
        clash = {k: v for k, v in candidate.params if k in fixed}
        candidate = Candidate(candidate.schedule, tuple((k, v) for k, v in candidate.params if k not in clash),
                              candidate.origin) if clash else candidate  # fmt: skip
        resolved = _resolve_stages(candidate, arch_obj, costs, fixed)
        if isinstance(resolved, str):
            refused.append((candidate, resolved))
        elif resolved not in legal:
            legal.append(resolved)
    result = TuneResult(kernel, arch_obj.id, dict(problem), "exhaustive", len(space), legal, refused)
    executor = executor or InlineExecutor()
    points = _points(legal, arch_obj.id, fixed)
    if len(legal) <= budget:
        result.rows = run_sweep(points, costs, executor, on_row=on_row).rows
    else:
        result.mode = f"optuna TPE, {budget} of {len(legal)} legal candidates"
        result.rows = _sample(points, legal, costs, executor, budget, batch=4, archs={arch_obj.id: arch_obj})
    result.wall_s = time.perf_counter() - start
    return result
