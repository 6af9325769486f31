"""``auto:gemm`` and ``auto:attention``: the fastest legal schedule and parameters gpusim finds for a
problem, standing in for cuBLAS / a library's own heuristic.

The candidates are the tuner's (gpusim/explore/spaces.py: CUTLASS sm70/sm80/sm90/sm100 tiles, stages and
clusters, DeepGEMM's list for fp8 on sm_90 and its sm100 kernel for fp8 on sm_100, SIMT for fp32;
FlashAttention 2/3/4 tiles), resolved and
checked the way ``gpusim tune`` does (``STAGES: fit`` becomes the most stages that fit). The search is a
branch and bound: each legal candidate gets a lower bound on its time (its FLOPs at the MMA unit's rate in
the simulator, with the wave quantization of its output tiles, and its compulsory and split-K workspace
HBM bytes at the calibrated bandwidth) and an estimate (the larger of the bound and the time the L2 needs
to deliver the operand tiles, which small tiles re-read more often); the candidates are simulated (time
only) schedule by schedule in turns (those on the newest MMA instruction first), each schedule's in
estimate order (among equal estimates: fuller waves of work pieces over the SMs first, then less padding
of M and N, then larger output tiles), skipping any whose bound is no better than the best time found,
until ``max_simulations`` have run. A ``gemm_tcgen05`` pick with edge tiles is then simulated once more
with cluster launch control (CUTLASS sm100's tile scheduler; with uniform tiles it equals the static
order simulated) and the faster of the two kept. With that budget
the search is deterministic and its cost bounded; without it (None) the pick is the tuner's exhaustive
best.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gpusim.arch import Arch
from gpusim.dtypes import canonical_dtype
from gpusim.errors import DeadlockError, HorizonReached, InputError, ScheduleRefused, override_name
from gpusim.result import Prediction
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import walk
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.summarize import predict_resolved

GEMM_PROBLEM_KEYS = ("M", "N", "K", "dtype", "groups")
DEFAULT_GEMM_PROBLEM: dict[str, Any] = {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16"}
"""What ``auto:gemm`` predicts without ``--set``: an 8192-cube GEMM in bf16 (fp16 on archs without
bf16 tensor cores, i.e. Volta)."""
GEMM_KINDS = ("auto", "auto:gemm")
ATTENTION_KINDS = ("auto:attn", "auto:attention")
AUTO_KINDS = (*GEMM_KINDS, *ATTENTION_KINDS)
SEARCH_EVENTS_FACTOR = 2
"""An ``auto:*`` search simulates at most this many times ``max_events`` events over all its candidates
(each candidate still stops at ``max_events``): once fewer than ``max_events`` are left, the remaining
candidates are listed as not simulated, so the search's work is bounded whatever the problem size."""
MAX_SIMULATIONS = 8
"""Most candidates ``auto:*`` simulates (the schedules in turns, each in lower-bound order; among equal
bounds, fuller waves, then less padding, then larger tiles first); the bound prunes the rest. None: every candidate the
bound does not prune (the tuner's exhaustive best)."""


@dataclass(frozen=True)
class Candidate:
    """One tried configuration and its outcome."""

    schedule: str
    params: dict[str, Any]
    time_us: float | None
    note: str
    origin: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"schedule": self.schedule, "params": self.params, "time_us": self.time_us, "note": self.note,
                "origin": self.origin}  # fmt: skip


def is_auto(name: str) -> bool:
    """Whether a schedule name asks for the search."""
    return name in AUTO_KINDS


def default_gemm_problem(arch: Arch) -> dict[str, Any]:
    """The documented default problem of ``auto:gemm`` on ``arch`` (see DEFAULT_GEMM_PROBLEM)."""
    problem = dict(DEFAULT_GEMM_PROBLEM)
    if "bf16" not in arch.supported_dtypes():
        problem["dtype"] = "fp16"
    return problem


def default_problem(kind: str, arch: Arch) -> dict[str, Any]:
    """The problem ``kind`` predicts for the keys not given."""
    if kind in ATTENTION_KINDS:
        from gpusim.explore.tune import DEFAULT_ATTENTION_PROBLEM

        return dict(DEFAULT_ATTENTION_PROBLEM)
    return default_gemm_problem(arch)


def problem_keys(kind: str) -> tuple[str, ...]:
    """The problem names ``kind`` takes."""
    if kind in ATTENTION_KINDS:
        from gpusim.explore.spaces import ATTENTION_PROBLEM_KEYS

        return ATTENTION_PROBLEM_KEYS
    return GEMM_PROBLEM_KEYS


def _peak_flops_per_us_per_sm(sched: Schedule, arch: Arch) -> float:
    """The fastest MMA rate the schedule's ``mma`` ops reach on one SM in the simulator (the sustained
    clock and the calibrated tensor issue efficiency, gpusim/sim/hardware.py)."""
    from gpusim.sim.hardware import Rates

    rates = Rates.from_arch(arch)
    best = 0.0
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.op != "mma":
                continue
            dtype = sched.mma_dtype(stmt.args.get("dtype"), sched.env)
            try:
                best = max(best, rates.mma_flops_per_ns(stmt.args["unit"], dtype, sched.name) * 1e3)
            except ScheduleRefused:
                continue
    return best


def _output_tile(env: Any) -> tuple[Any, Any]:
    """BM and BN of the output tile (DeepGEMM's BLOCK_M / BLOCK_N aliases accepted); None where unset."""
    return env.get("BM", env.get("BLOCK_M")), env.get("BN", env.get("BLOCK_N"))


def _tile_intensity(sched: Schedule) -> float:
    """BM*BN/(BM+BN) of the output tile (MMA work per operand byte loaded; 0 when the schedule names none)."""
    env = sched.env
    bm, bn = _output_tile(env)
    if not isinstance(bm, int | float) or not isinstance(bn, int | float) or bm + bn <= 0:
        return 0.0
    pair = 2 if sched.launch.cta_pair else 1
    return pair * bm * bn / (pair * bm + bn)


def operand_read_bytes(sched: Schedule) -> float:
    """The L2 bytes a GEMM's A and B operand tiles take at least: each operand tile read once per
    cluster (TMA multicast shares A along CLUSTER_N and B along CLUSTER_M; a CTA pair shares B), every
    k-tile whole in K, edge tiles in M and N their valid rows and columns. So A is read at least N / (BN x
    CLUSTER_N) times and B M / (BM x CLUSTER_M) times: a lower bound on what a GEMM schedule's loads
    move through L2 (checked against the simulated bytes over every GEMM schedule by
    tests/test_autotune.py). 0 without BM/BN/elem_bytes."""
    env = sched.env
    bm, bn = _output_tile(env)
    elem_bytes = env.get("elem_bytes")
    if not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in (bm, bn, elem_bytes)
    ):
        return 0.0
    cluster_m, cluster_n = env.get("CLUSTER_M", 1), env.get("CLUSTER_N", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (cluster_m, cluster_n)):
        cluster_m = cluster_n = 1
    if sched.launch.cta_pair:
        cluster_m *= 2
    bytes_per_flop = elem_bytes / 2 * (1 / (bn * cluster_n) + 1 / (bm * cluster_m))
    return sched.flops * bytes_per_flop


def _operand_traffic_us(sched: Schedule, arch: Arch) -> float:
    """The time the chip's L2 needs to deliver a GEMM's A and B tiles (``operand_read_bytes``) at its
    datasheet bandwidth. An estimate that orders candidates (small tiles re-read the operands more
    often); the search's bound on a running simulation uses the simulated L2's own bandwidth. 0 without
    BM/BN."""
    return operand_read_bytes(sched) / (arch.memory.l2_bandwidth_bytes_per_s / 1e6)


def _padding(sched: Schedule) -> float:
    """Output tiles' area over the problem's (1.0 when the tiles fit M and N exactly; 1 without BM/BN)."""
    env = sched.env
    bm, bn = _output_tile(env)
    m, n = env.get("M"), env.get("N")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (bm, bn, m, n)):
        return 1.0
    return (-(-m // bm) * bm * -(-n // bn) * bn) / (m * n)


def _pieces(sched: Schedule) -> int:
    """Work pieces an SM can hold: units, times split-K parts, times the two SMs of a CTA pair."""
    launch = sched.launch
    return launch.num_units * launch.k_splits * (2 if launch.cta_pair else 1)


def lower_bound_us(sched: Schedule, arch: Arch, *, equal_units: bool) -> float:
    """A time no simulation of ``sched`` can beat: the FLOPs at the MMA peak of the busiest SM, and the
    compulsory HBM bytes plus the workspace bytes of the design (split-K partials) at the full HBM
    bandwidth.

    With ``equal_units`` (GEMM tiles: every work unit has the same FLOPs) the busiest SM holds at least
    ceil(pieces / SMs) pieces, where a piece is a unit split over its split-K parts and over the two SMs
    of a CTA pair; otherwise (causal attention, stream-K) only the even share of the FLOPs counts.
    """
    rate = _peak_flops_per_us_per_sm(sched, arch)
    tensor_us = 0.0
    if rate > 0 and sched.flops > 0:
        launch = sched.launch
        pieces = _pieces(sched)
        even_share = sched.flops / (rate * min(arch.sm_count, max(1, pieces)))
        tensor_us = even_share
        if equal_units and launch.parts is None and "stream" not in launch.scheduler:
            tensor_us = max(even_share, math.ceil(pieces / arch.sm_count) * sched.flops / pieces / rate)
    hbm_bytes_per_us = arch.memory.hbm_bandwidth_bytes_per_s * arch.calibration.hbm_bandwidth_fraction / 1e6
    return max(tensor_us, (sched.compulsory_bytes + sched.workspace_bytes) / hbm_bytes_per_us)


def _interleave_schedules(ranked: list[Any]) -> list[Any]:
    """Each schedule's candidates in their order, taken in turns (the schedule whose next candidate has
    the lower estimate first), so a simulation budget is shared among the schedules; the schedules on the
    arch's newest MMA instruction take their turns first (a library on sm_90 runs wgmma kernels, not
    mma.sync ones)."""
    out: list[Any] = []
    for generation in sorted({item[4] for item in ranked}, reverse=True):
        queues: dict[str, list[Any]] = {}
        for item in ranked:
            if item[4] == generation:
                queues.setdefault(item[2].schedule, []).append(item)
        while queues:
            heads = sorted(queues.items(), key=lambda kv: kv[1][0][:2])
            for name, queue in heads:
                out.append(queue.pop(0))
                if not queue:
                    del queues[name]
    return out


MMA_GENERATIONS = {"mma_sync": 1, "wgmma": 2, "tcgen05": 3}
"""Newer MMA instructions rank higher (CUDA-core schedules are 0)."""


def _mma_generation(sched: Schedule) -> int:
    units = {
        stmt.args["unit"]
        for role in sched.roles.values()
        for stmt, _ in walk(role.program)
        if stmt.op == "mma"
    }
    return max((MMA_GENERATIONS.get(u, 0) for u in units), default=0)


def search(
    kind: str,
    arch: Arch,
    problem: dict[str, Any],
    deadline_s: float | None = None,
    *,
    exact: bool = False,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    on_candidate: Any = None,
    max_simulations: int | None = MAX_SIMULATIONS,
) -> tuple[Prediction, list[Candidate]]:
    """The fastest candidate of ``kind`` (``auto:gemm`` or ``auto:attention``) for ``problem`` on ``arch``
    (with the costs it carries), time-only, and every candidate with its outcome.

    Missing problem keys take the documented default; ``on_candidate(n_done, n_total)`` is called after
    each simulation (progress bars); SimulationTimeout once ``deadline_s`` (a ``time.perf_counter()``
    value) has passed.
    """
    from gpusim.explore.spaces import check_problem, space_for
    from gpusim.explore.tune import resolve_candidate

    if kind not in AUTO_KINDS:
        raise InputError(f"unknown search '{kind}'; known: {', '.join(AUTO_KINDS)}")
    keys = problem_keys(kind)
    unknown = [k for k in problem if k not in keys]
    if unknown:
        raise InputError(f"{kind}: {override_name(unknown[0])}: only the problem ({', '.join(keys)}) can be set for auto; "
                         "name a schedule to set its parameters")  # fmt: skip
    problem = {**default_problem(kind, arch), **problem}
    check_problem(kind, problem)
    if "dtype" in problem:
        problem["dtype"] = canonical_dtype(str(problem["dtype"]))
    tried: list[Candidate] = []
    ranked: list[tuple[float, tuple[float, float, float, int], Any, Schedule, int, float]] = []
    equal_units = kind in GEMM_KINDS
    for candidate in space_for(kind, arch, problem):
        resolved = resolve_candidate(candidate, arch, problem)
        if isinstance(resolved, str):
            tried.append(Candidate(candidate.schedule, candidate.overrides, None, f"refused: {resolved}",
                                   candidate.origin))  # fmt: skip
            continue
        legal, sched = resolved
        pieces = _pieces(sched)
        wave_use = pieces / (math.ceil(pieces / arch.sm_count) * arch.sm_count)
        order = (-round(wave_use, 6), _padding(sched), -_tile_intensity(sched), len(ranked))
        bound = lower_bound_us(sched, arch, equal_units=equal_units)
        estimate = max(bound, _operand_traffic_us(sched, arch))
        ranked.append((estimate, order, legal, sched, _mma_generation(sched), bound))
    ranked = _interleave_schedules(sorted(ranked, key=lambda item: item[:2]))
    budget = len(ranked) if max_simulations is None else min(len(ranked), max_simulations)
    best: Prediction | None = None
    best_candidate: Candidate | None = None
    best_sched: Schedule | None = None
    simulated = 0
    events_spent = 0

    def limit_spent(legal: Any, shown_bound: str) -> bool:
        """Whether the search's work limit is spent (the candidate is then listed as not simulated)."""
        if (
            max_events is None
            or best is None
            or SEARCH_EVENTS_FACTOR * max_events - events_spent >= max_events
        ):
            return False
        tried.append(Candidate(legal.schedule, legal.overrides, None, f"not simulated: the search's work limit "
                               f"({SEARCH_EVENTS_FACTOR} x --max-events) is spent{shown_bound}", legal.origin))  # fmt: skip
        return True

    def attempt(legal: Any, sched: Schedule, shown_bound: str, simulated_note: str) -> None:
        """Simulate one candidate and record its outcome."""
        nonlocal best, best_candidate, best_sched, simulated, events_spent
        params = legal.overrides
        simulated += 1
        try:
            prediction = predict_resolved(
                sched,
                arch,
                attribute=False,
                exact=exact,
                deadline_s=deadline_s,
                max_events=max_events,
                horizon_us=None if best is None else best.time_us,
                # GEMMs: every metric FLOP is MMA work, so the FLOPs left at the chip's peak bound the end
                horizon_flops_per_us=_peak_flops_per_us_per_sm(sched, arch) * arch.sm_count
                if equal_units
                else None,
                horizon_equal_units=equal_units,
                horizon_l2_read_bytes=operand_read_bytes(sched) if equal_units else None,
                replay="none",  # shipped schedules: a deadlock still ends the simulation (the replay only names it sooner)
            )
        except HorizonReached:  # it takes at least the best time so far (the time simulated plus the MMA
            # FLOPs left at the chip's peak reach it): it cannot be the pick
            tried.append(Candidate(legal.schedule, params, None, f"stopped: cannot finish before the best "
                                   f"({best.time_us:.2f} us){shown_bound}", legal.origin))  # type: ignore[union-attr]  # fmt: skip
            return
        except ScheduleRefused as exc:
            tried.append(Candidate(legal.schedule, params, None, f"refused: {exc}", legal.origin))
            return
        except DeadlockError as exc:  # a schedule bug at this configuration: skipped, and said so
            tried.append(Candidate(legal.schedule, params, None, f"deadlock: {str(exc)[:200]}", legal.origin))
            return
        events_spent += int(prediction.sim.get("events", 0))
        outcome = Candidate(legal.schedule, params, prediction.time_us, simulated_note, legal.origin)
        tried.append(outcome)
        if best is None or prediction.time_us < best.time_us:
            best, best_candidate, best_sched = prediction, outcome, sched

    for _, _, legal, sched, _, bound in ranked:
        shown_bound = f" (lower bound {bound:.2f} us)"
        if limit_spent(legal, shown_bound):
            continue
        if best is not None and bound >= best.time_us:
            tried.append(Candidate(legal.schedule, legal.overrides, None, f"pruned: lower bound {bound:.2f} us >= best",
                                   legal.origin))  # fmt: skip
            continue
        if simulated >= budget:
            tried.append(Candidate(legal.schedule, legal.overrides, None, f"not simulated: budget of {budget} "
                                   f"simulations spent{shown_bound}", legal.origin))  # fmt: skip
            continue
        if on_candidate is not None:
            on_candidate(simulated, budget)
        attempt(legal, sched, shown_bound, f"simulated{shown_bound}")
    twin = _launch_control_twin(best_candidate, best_sched, arch, problem)
    if twin is not None and not limit_spent(twin[0], ""):  # the pick with cluster launch control
        attempt(*twin, "", "simulated (the pick with cluster launch control)")
    if on_candidate is not None:
        on_candidate(budget, budget)
    if best is None or best_candidate is None:
        reasons = "; ".join(c.note for c in tried[:3]) or "no candidate for this arch"
        raise ScheduleRefused(f"{kind} on {arch.id}: no schedule is legal for {problem} ({reasons})")
    choice = {
        "schedule": best_candidate.schedule,
        "params": best_candidate.params,
        "origin": best_candidate.origin,
        "simulated": simulated,
        "events": events_spent,
        "legal": len(ranked),
        "candidates": [c.as_dict() for c in tried],
    }
    return replace(best, choice=choice), tried


def _launch_control_twin(
    pick: Candidate | None, pick_sched: Schedule | None, arch: Arch, problem: dict[str, Any]
) -> tuple[Any, Schedule] | None:
    """The pick (``pick_sched``: its resolved schedule) with Blackwell's cluster launch control
    (``gemm_tcgen05`` CLC=1, CUTLASS sm100's own tile scheduler), resolved, when it can differ from the
    static round robin the search simulates: only with edge tiles (where every tile is alike both orders
    are the same). None otherwise."""
    from gpusim.explore.spaces import Candidate as SpaceCandidate
    from gpusim.explore.tune import resolve_candidate

    if pick is None or pick_sched is None or pick.schedule != "gemm_tcgen05" or pick.params.get("CLC", 0):
        return None
    env = pick_sched.env
    rows, cols = env.get("MMA_M"), env.get("BN")
    m, n = env.get("M"), env.get("N")
    if not all(isinstance(v, int) and v > 0 for v in (rows, cols, m, n)) or (m % rows == 0 and n % cols == 0):
        return None
    twin = SpaceCandidate(
        pick.schedule, (*pick.params.items(), ("CLC", 1)), f"{pick.origin}, cluster launch control"
    )
    resolved = resolve_candidate(twin, arch, problem)
    return None if isinstance(resolved, str) else resolved


def search_gemm(
    arch: Arch,
    problem: dict[str, Any],
    deadline_s: float | None = None,
    *,
    exact: bool = False,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    on_candidate: Any = None,
    max_simulations: int | None = MAX_SIMULATIONS,
) -> tuple[Prediction, list[Candidate]]:
    """``search("auto:gemm", ...)``."""
    return search("auto:gemm", arch, problem, deadline_s, exact=exact, max_events=max_events,
                  on_candidate=on_candidate, max_simulations=max_simulations)  # fmt: skip
