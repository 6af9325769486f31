"""Build the simulated SMs, CTAs and roles for a schedule on an arch, run simpy, and collect the result."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy

from gpusim.arch import Arch
from gpusim.errors import (
    DeadlockError,
    HorizonReached,
    InputError,
    ScheduleRefused,
    SimulationLimitExceeded,
    UnknownNameError,
    quote,
)
from gpusim.mechanisms import mechanisms_of
from gpusim.schedule.check import Budgets, check_schedule
from gpusim.schedule.expr import ExprError
from gpusim.schedule.ir import Schedule
from gpusim.schedule.program import walk
from gpusim.sim.fastforward import FastForward, Jump, stale_timer
from gpusim.sim.hardware import PIPES, Rates, SimSM, issued_tensor_flops
from gpusim.sim.interp import Cta, RoleRunner
from gpusim.sim.l2cache import WaveMisses, panel_misses
from gpusim.sim.limits import DEFAULT_MAX_EVENTS, HOPELESS_CHECKS, WorkBudget, hopeless, start_budget
from gpusim.sim.memory import FlowNetwork
from gpusim.sim.mma_sync_rate import WarpRate, mma_sync_fraction
from gpusim.sim.scheduler import ClusterUnit, SmGroup, WorkPlan, plan_work
from gpusim.sim.sync import ChunkBuffer, EventBarrier, NamedBarrier, StageRing, Turnstile, couple
from gpusim.sim.tilequeue import ClusterTiles, DynamicUnits, TileQueue
from gpusim.sim.untimed import MAX_STEPS as UNTIMED_MAX_STEPS
from gpusim.sim.untimed import check_untimed


@dataclass
class SimRun:
    """Raw outcome of one simulation, before reporting."""

    sched: Schedule
    arch: Arch
    budgets: Budgets
    plan: WorkPlan
    kernel_ns: float
    sms: list[SimSM]
    net: FlowNetwork
    runners: list[RoleRunner]
    rings: list[StageRing] = field(default_factory=list)
    wall_s: float = 0.0
    events: int = 0
    """Events simulated in detail (what the work limit counts)."""
    skipped_events: int = 0
    """Events the fast-forward stood for (about what an exact run would add)."""
    jumps: list[Jump] = field(default_factory=list)
    """Fast-forwarded spans (whole periods skipped), for traces and timelines."""
    exact: bool = False
    fast_forward_off: str | None = None
    """Why the fast-forward was off in a run that asked for it (None: it was on, or exact)."""
    resident_bytes: float = 0.0
    """Bytes of ``resident`` operands (left by the previous kernel) the L2 starts with."""


def _roles_touching(sched: Schedule, buf: str, ops: tuple[str, ...]) -> list[str]:
    return [
        r.name
        for r in sched.roles.values()
        if any(s.op in ops and s.args.get("buf") == buf for s, _ in walk(r.program))
    ]


def _tile_filter(sched: Schedule, role_name: str, replica: int) -> tuple[int, int]:
    role = sched.roles[role_name]
    env = {**sched.env, "r": replica}
    for stmt, _ in walk(role.program):
        if stmt.op == "tiles":
            every = int(stmt.args["every"](env)) if "every" in stmt.args else 1
            offset = int(stmt.args["offset"](env)) if "offset" in stmt.args else 0
            return every, offset
    return 1, 0


def _runs_on(role_cta: str, rank: int, pair: bool) -> bool:
    return role_cta == "all" or not pair or rank % 2 == 0


def _tma_multicasts(sched: Schedule) -> dict[str, dict[str, int]]:
    """Buffer -> operand -> largest TMA multicast factor (> 1) of loads of that operand into the
    buffer; a factor that depends on loop symbols counts as multicast to the whole cluster."""
    found: dict[str, dict[str, int]] = {}
    for role in sched.roles.values():
        for stmt, _ in walk(role.program):
            if stmt.op != "tma_load" or "multicast" not in stmt.args:
                continue
            try:
                mc = int(stmt.args["multicast"](sched.env))
            except (UnknownNameError, ExprError):
                mc = sched.launch.cluster_size
            if mc > 1:
                per_buffer = found.setdefault(stmt.args["buf"], {})
                operand = stmt.args["operand"]
                per_buffer[operand] = max(per_buffer.get(operand, 1), mc)
    return found


def _operand_multicast(multicasts: dict[str, dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for per_buffer in multicasts.values():
        for operand, mc in per_buffer.items():
            out[operand] = max(out.get(operand, 1), mc)
    return out


class _Builder:
    def __init__(self, sched: Schedule, arch: Arch, env: simpy.Environment, net: FlowNetwork, rates: Rates,
                 miss: WaveMisses, record: bool | Literal["spans"], dynamic_names: frozenset[str],
                 work: WorkBudget) -> None:  # fmt: skip
        self.sched, self.arch, self.env, self.net, self.rates, self.miss = sched, arch, env, net, rates, miss
        self.record = bool(record)
        self.record_everything = record is True
        self.dynamic_names = dynamic_names
        self.sms: list[SimSM] = []
        self.runners: list[RoleRunner] = []
        self.rings: list[StageRing] = []
        self.pending_roles: list[simpy.Process] = []
        self.ff: FastForward | None = None
        self.queue: TileQueue | None = None
        """The tile counter of a dynamic_persistent launch, or a non-persistent grid, whose units differ
        (None otherwise)."""
        self.multicast = _tma_multicasts(sched)
        self.memo: dict[tuple, Any] = {}
        self.work = work
        self.sync_warps = sum(
            r.warps * r.replicas
            for r in sched.roles.values()
            if any(s.op == "syncthreads" for s, _ in walk(r.program))
        )

    def build_group(self, group: SmGroup) -> None:
        sched = self.sched
        csize = sched.launch.cluster_size
        sms = [SimSM(self.env, len(self.sms) + i, group.weight, self.rates, self.net, record_spans=self.record,
                      span_labels=self.record_everything)
               for i in range(csize)]  # fmt: skip
        self.sms.extend(sms)
        warps_per_cta = sum(r.warps * r.replicas for r in sched.roles.values())
        for position, slot in enumerate(group.slots):
            if not slot:
                continue
            first_warp = position * warps_per_cta
            if self.queue is not None and not sched.launch.persistent:
                process = self.env.process(self._dispatched_slot(sms, self.queue, first_warp))
                if self.ff is not None:
                    self.ff.add_process(process)
            elif self.queue is not None:
                self._launch_cluster(
                    sms, [], wave_offset=0, first_warp=first_warp, tiles=ClusterTiles(self.queue)
                )
            elif sched.launch.persistent:
                self._launch_cluster(sms, list(slot), wave_offset=0, first_warp=first_warp)
            else:
                process = self.env.process(self._grid_slot(sms, slot, first_warp))
                if self.ff is not None:
                    self.ff.add_process(process)

    def _grid_slot(self, sms: list[SimSM], slot: Sequence[ClusterUnit], first_warp: int):
        for wave, cunit in enumerate(slot):
            procs = self._launch_cluster(sms, [cunit], wave_offset=wave, first_warp=first_warp)
            yield self.env.all_of(procs)

    def _dispatched_slot(self, sms: list[SimSM], queue: TileQueue, first_warp: int):
        """A slot of a non-persistent grid whose units differ: each time its cluster exits, the hardware
        block scheduler gives it the next cluster of the launch order."""
        while (got := queue.take()) is not None:
            index, cunit = got
            procs = self._launch_cluster(
                sms, [cunit], wave_offset=index // queue.num_slots, first_warp=first_warp
            )
            yield self.env.all_of(procs)

    def _launch_cluster(
        self,
        sms: list[SimSM],
        cunits: list[ClusterUnit],
        wave_offset: int,
        first_warp: int = 0,
        tiles: ClusterTiles | None = None,
    ) -> list[simpy.Process]:
        """Start the CTAs of one cluster on ``sms``: running ``cunits`` in order, or, with ``tiles``,
        the units its roles take from the tile counter."""
        sched = self.sched
        csize = sched.launch.cluster_size
        pair = sched.launch.cta_pair
        ctas = []
        for rank in range(csize):
            units: Any = [cu[rank] for cu in cunits] if tiles is None else DynamicUnits(tiles, rank)
            cta = Cta(
                env=self.env,
                sched=sched,
                sm=sms[rank],
                rank=rank,
                units=units,
                wave_offset=wave_offset,
                miss=self.miss,
                memo=self.memo,
                first_warp=first_warp,
                dynamic_names=self.dynamic_names,
                work=self.work,
                wave_of=None if tiles is None else units.wave,
            )
            if pair:
                base = rank - rank % 2
                cta.pair = [sms[base], sms[base + 1]]
            ctas.append(cta)
        for cta in ctas:
            self._build_sync(cta, ctas)
        for buf, operands in self.multicast.items():
            self._link_multicast(ctas, buf, operands)
        procs = []
        for cta in ctas:
            for role in sched.roles.values():
                if not _runs_on(role.cta, cta.rank, pair):
                    continue
                for replica in range(role.replicas):
                    runner = RoleRunner(cta, role, replica)
                    self.runners.append(runner)
                    process = self.env.process(runner.run())
                    procs.append(process)
                    if self.ff is not None:
                        self.ff.add_runner(runner, process)
            self.pending_roles.extend(procs)
        return procs

    def _link_multicast(self, ctas: list[Cta], buf: str, operands: dict[str, int]) -> None:
        """A multicast load of an operand reaches the CTAs of the cluster that read the same panel
        (same operand key); their rings of ``buf`` are refilled only when empty in all of them."""
        sched = self.sched
        parent = list(range(len(ctas)))  # union-find over CTA ranks

        def root(rank: int) -> int:
            while parent[rank] != rank:
                rank = parent[rank]
            return rank

        for operand, mc in operands.items():
            groups: dict[tuple[Any, ...], list[Cta]] = {}
            for cta in ctas:
                local = {**sched.env, **cta.units[0]}
                key = tuple(k(local, where=f"operands.{operand}.key") for k in sched.operands[operand].key)
                groups.setdefault(key, []).append(cta)
            for members in groups.values():
                if len(members) != mc:
                    raise ScheduleRefused(
                        f"{sched.name}: tma_load of {operand} into '{buf}' multicasts to {mc} CTAs, but "
                        f"{len(members)} CTA(s) of the {list(sched.launch.cluster)} cluster read the same {operand} "
                        "panel; multicast along the cluster dimension whose CTAs share the operand"
                    )
                for cta in members:
                    cta.peers[operand] = members
                    parent[root(cta.rank)] = root(members[0].rank)
        by_root: dict[int, list[StageRing]] = {}
        for cta in ctas:
            ring = cta.rings.get(buf)
            if ring is not None and all(ring is not r for r in by_root.get(root(cta.rank), [])):
                by_root.setdefault(root(cta.rank), []).append(ring)
        for rings in by_root.values():
            couple(rings)

    def _build_sync(self, cta: Cta, ctas: list[Cta]) -> None:
        sched, env = self.sched, self.env
        pair = sched.launch.cta_pair
        for name, b in sched.buffers.items():
            if not b.has_protocol:
                continue
            if b.consumer == "manual":
                cta.chunks[name] = ChunkBuffer(env, name, b.chunks)
                continue
            sharing = [cta]
            if b.scope == "pair" and pair:
                leader = ctas[cta.rank - cta.rank % 2]
                if leader is not cta and name in leader.rings:
                    cta.rings[name] = leader.rings[name]
                    continue
                sharing = [leader, ctas[leader.rank + 1]]
            producers = _roles_touching(sched, name, ("acquire", "commit"))
            consumers = _roles_touching(sched, name, ("wait", "release"))
            n_producers = sum(
                sched.roles[r].replicas
                for c in sharing
                for r in producers
                if _runs_on(sched.roles[r].cta, c.rank, pair)
            )
            consumer_filters = [
                _tile_filter(sched, r, rep)
                for c in sharing
                for r in consumers
                if _runs_on(sched.roles[r].cta, c.rank, pair)
                for rep in range(sched.roles[r].replicas)
            ]

            def expected(tag: dict[str, Any], filters: list[tuple[int, int]] = consumer_filters) -> int:
                tile = tag.get("tile", 0)
                return sum(1 for every, offset in filters if tile >= offset and (tile - offset) % every == 0)

            ring = StageRing(
                env, name, b.stages, b.producer or "threads", b.consumer or "threads", n_producers, expected
            )
            if self.record_everything:
                ring.in_use_samples, ring.flows, ring.stage_log = [], [], []
                ring.sm_index, ring.cta_rank = sharing[0].sm.index, sharing[0].rank
            self.rings.append(ring)
            cta.rings[name] = ring
        for name, bar in sched.barriers.items():
            if bar.kind == "named":
                cta.named[name] = NamedBarrier(env, name, bar.warps)
            elif bar.kind == "event":
                cta.events[name] = EventBarrier(env, name, bar.count)
            elif bar.kind == "turnstile":
                cta.turnstiles[name] = Turnstile(env, name, sched.roles[bar.members].replicas)  # type: ignore[index]
        cta.syncthreads = NamedBarrier(env, "__syncthreads", max(1, self.sync_warps))


EARLY_REPLAY_STEPS = 200_000
EARLY_REPLAY_RUNS = 4
"""Before simulating, the kernel's synchronisation is replayed untimed (gpusim.sim.untimed) for at most
this many statements and distinct cluster runs: a deadlock it finds, at the end of the kernel however
large, is named before any event; a replay that completes rules deadlocks out for every timing. The
run cap keeps plans of many distinct slots (causal attention: one per m-block mix) to a few runs. The
late replay (below) resumes after the runs played here, and is not run where it would give up too: when
the statements per run so far say the runs left cannot fit in its budget (causal attention at long
sequences), or when this one met a run it cannot follow."""

UNTIMED_REPLAY_AFTER_EVENTS = 20_000
"""A simulation still running after this many detailed events, whose early replay did not decide,
replays the synchronisation again with the full budget, so a deadlock at the end of a long kernel is
named then, not after simulating it all. 0: the full replay before simulating."""


def simulate(
    sched: Schedule,
    arch: Arch,
    *,
    record: bool | Literal["spans"] = False,
    group_identical: bool = True,
    exact: bool = False,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    deadline_s: float | None = None,
    shared_tensor_core: bool | None = None,
    horizon_ns: float | None = None,
    horizon_flops_per_ns: float | None = None,
    horizon_equal_units: bool = False,
    horizon_l2_read_bytes: float | None = None,
    replay: Literal["early", "late", "none"] = "early",
) -> SimRun:
    """Check and simulate ``sched`` on ``arch``; raise DeadlockError naming blocked roles.

    By default whole periods of steady state are fast-forwarded (gpusim/sim/fastforward.py; exact for
    the model); ``exact=True`` simulates every event. ``record``: keep every busy span of every agent, port
    and role, the rings' occupancy and the L2/HBM rates over time (traces, timelines); ``"spans"``: the
    busy spans only (what the bottleneck attribution reads). ``group_identical`` simulates SM groups with
    identical work once, standing for all of them; turn it off to simulate every SM (slower; the two
    agree, which a test checks). ``max_events`` bounds the events simulated in detail (simulated
    work, so the same on any machine); past it SimulationLimitExceeded is raised (None: no limit).
    ``deadline_s`` (a ``time.perf_counter()`` value) is an optional wall-clock stop for interactive
    callers; nothing in gpusim's own commands uses it, since its outcome depends on the machine.
    ``shared_tensor_core`` overrides the arch's ``shared_tensor`` mechanism (None: as the arch says).
    ``horizon_ns``: stop with HorizonReached once simulated time reaches it (the kernel then takes at
    least that long; a search uses its best time so far). ``horizon_flops_per_ns``: with a horizon, a
    rate no SM's tensor cores together can beat (FLOP/ns over the chip): stop as soon as the time
    simulated plus the schedule's FLOPs not yet issued at that rate reach the horizon (the kernel cannot
    end sooner; for schedules whose metric FLOPs are all MMA work, GEMMs). ``horizon_equal_units``: every
    work unit issues the same MMA work, at least the schedule's FLOPs over its units (GEMM output tiles:
    edge tiles issue whole tiles): the bound is then taken per SM group, whose units are fixed before
    the run when they are handed out statically (the group with the most work left bounds the end; see
    ``_GroupWork``). ``horizon_l2_read_bytes``: with a horizon, bytes the kernel reads through L2 at
    least (a GEMM's operand tiles): also stop once the time simulated plus those not yet issued, at the
    L2's bandwidth, reach the horizon. ``replay``: when the
    untimed replay of the synchronisation runs (gpusim/sim/untimed.py): ``early`` before simulating
    (and again past UNTIMED_REPLAY_AFTER_EVENTS if undecided and worth it), ``late`` only past that
    many events (a search among shipped schedules), ``none`` never (a re-simulation of a schedule
    already replayed)."""
    if not (record is True or record is False or record == "spans"):
        raise InputError(f"simulate: record={quote(repr(record))}: expected True, False or 'spans'")
    budgets = check_schedule(sched, arch)
    start = time.perf_counter()
    plan = plan_work(sched, arch, group_identical=group_identical)
    replay_at = UNTIMED_REPLAY_AFTER_EVENTS if replay != "none" else -1
    early = None
    if replay_at == 0:
        check_untimed(sched, arch, plan)
    elif replay == "early":
        early = check_untimed(sched, arch, plan, max_steps=EARLY_REPLAY_STEPS, max_runs=EARLY_REPLAY_RUNS)
        if not early.worth_repeating(UNTIMED_MAX_STEPS):
            replay_at = -1  # decided (no deadlock for any timing), or a full replay would give up too
    multicast = _operand_multicast(_tma_multicasts(sched))
    miss, resident_bytes = panel_misses(sched, plan, arch.memory.l2_size_bytes, multicast)
    rates = _rates(sched, arch, shared_tensor_core)
    env = simpy.Environment()
    net = FlowNetwork(env, rates.l2_bytes_per_ns, rates.hbm_bytes_per_ns)
    if record is True:
        net.hbm_rate_samples, net.l2_rate_samples, net.read_rate_samples = [], [], []
    dynamic = _dynamic_names(sched, plan)
    work = start_budget(max_events)
    builder = _Builder(sched, arch, env, net, rates, miss, record, dynamic, work)
    if plan.dynamic:
        builder.queue = TileQueue(plan)
    if not exact:
        builder.ff = FastForward(env, net, builder.sms, builder.rings, dynamic_names=dynamic,
                                 unit_fields=plan.unit_keys, tiles_fixed=plan.dynamic)  # fmt: skip
    for group in plan.groups:
        builder.build_group(group)
    ff = builder.ff
    horizon_rate = horizon_flops_per_ns if horizon_ns is not None and sched.flops > 0 else None
    horizon_rate_ns = horizon_ns if horizon_ns is not None else float("inf")
    group_work = (
        _GroupWork.of(sched, plan, builder.sms, horizon_rate / arch.sm_count)
        if horizon_rate and horizon_equal_units
        else None
    )
    events = skipped = 0
    limit = max_events if max_events is not None else -1
    check_every = limit // HOPELESS_CHECKS if limit >= HOPELESS_CHECKS else -1
    next_check = check_every
    step = env.step
    queue = env._queue  # type: ignore[attr-defined]
    last_ns = 0.0
    while True:
        if not queue:
            break
        head_ns, _prio, _eid, head = queue[0]
        # Only events that run simulation code count as work and can end the kernel: not an event nothing
        # waits on, nor a network or tensor-core timer whose rates changed since it was set.
        live = bool(head.callbacks) and not stale_timer(head)
        work.left = work.per_step
        step()
        if not live:
            continue
        last_ns = head_ns
        events += 1
        if events == replay_at:
            check_untimed(sched, arch, plan, after_events=events, resume=early)
        if events == limit:
            raise SimulationLimitExceeded(
                f"{sched.name} on {arch.id}: simulation stopped at its work limit of {limit:,} events "
                f"(t={env.now / 1000:.1f} us simulated); raise it with --max-events (or max_events=)"
            )
        if events == next_check:
            next_check += check_every
            why = hopeless(events, limit, _done_fraction(sched, builder.sms, net))
            if why is not None:
                raise SimulationLimitExceeded(
                    f"{sched.name} on {arch.id}: simulation stopped early: {why}, past its work limit of "
                    f"{limit:,} events (t={env.now / 1000:.1f} us simulated); raise it with --max-events (or "
                    "max_events=)"
                )
        if deadline_s is not None and events % 4096 == 0 and time.perf_counter() > deadline_s:
            raise SimulationLimitExceeded(f"{sched.name} on {arch.id}: simulation stopped at its wall-clock "
                                          f"deadline after {events:,} events")  # fmt: skip
        if ff is not None and ff.pending is not None:
            skipped += ff.checkpoint(events)
        if horizon_ns is not None and env.now >= horizon_ns:
            raise HorizonReached(f"{sched.name} on {arch.id}: simulated time reached {horizon_ns / 1000:.2f} us "
                                 f"after {events:,} events")  # fmt: skip
        if horizon_rate and events % 64 == 0:
            left = max(sched.flops - issued_tensor_flops(builder.sms), 0.0)
            left_ns = left / horizon_rate
            if group_work is not None:
                left_ns = max(left_ns, group_work.time_left_ns())
            if horizon_l2_read_bytes:
                left_ns = max(left_ns, _l2_reads_left_ns(horizon_l2_read_bytes, builder.sms, net))
            if env.now + left_ns >= horizon_rate_ns:
                raise HorizonReached(
                    f"{sched.name} on {arch.id}: at t={env.now / 1000:.2f} us, the work left ({left:.3g} MMA "
                    f"FLOPs on the chip) needs at least {left_ns / 1000:.2f} us more (the busiest SMs' MMA "
                    f"peak, the L2's bandwidth for the operand reads left) and cannot finish before "
                    f"{horizon_rate_ns / 1000:.2f} us after {events:,} events"
                )
    blocked = [r for r in builder.runners if not r.finished]
    if blocked:
        sites: dict[tuple[str, str], list[Any]] = {}
        for r in blocked:  # one entry per (role, wait site), not one per CTA: the report stays one line
            sites.setdefault((r.name, str(r.blocked_on)), []).append(r)
        lines = "; ".join(
            f"{name} (cta {rs[0].cta.rank}, sm {rs[0].sm.index}"
            + (f", and {len(rs) - 1} more like it" if len(rs) > 1 else "")
            + f") at {site}"
            for (name, site), rs in list(sites.items())[:4]
        )
        more = f" and {len(sites) - 4} more" if len(sites) > 4 else ""
        raise DeadlockError(f"{sched.name} on {arch.id}: deadlock at t={env.now / 1000:.3f} us; blocked roles: "
                            f"{lines}{more}")  # fmt: skip
    kernel_ns = last_ns  # the last event that ran simulation code (a stale timer after it ends nothing)
    return SimRun(sched=sched, arch=arch, budgets=budgets, plan=plan, kernel_ns=kernel_ns, sms=builder.sms,
                  net=net, runners=builder.runners, rings=builder.rings, wall_s=time.perf_counter() - start,
                  events=events, skipped_events=skipped, jumps=ff.jumps if ff else [], exact=exact,
                  fast_forward_off=ff.disabled if ff else None, resident_bytes=resident_bytes)  # fmt: skip


def _rates(sched: Schedule, arch: Arch, shared_tensor_core: bool | None) -> Rates:
    """The rates ``sched`` runs at on ``arch`` with the arch's mechanisms (``shared_tensor_core``
    overrides ``shared_tensor``; None: as the arch says)."""
    mechanisms = mechanisms_of(arch)
    if shared_tensor_core is None:
        shared_tensor_core = "shared_tensor" in mechanisms
    table = arch.tensor_cores.mma_sync.rate_by_warps_per_smsp
    by_issuing = bool(shared_tensor_core and table) and {"mma_sync_warps", "mma_sync_issuing"} <= mechanisms
    return Rates.from_arch(
        arch,
        shared_tensor_core=shared_tensor_core,
        pipe_coupling="pipe_coupling" in mechanisms,
        smem_fills="smem_fills" in mechanisms,
        smem_operands="smem_operands" in mechanisms,
        mma_sync_fraction=mma_sync_fraction(sched, arch)
        if "mma_sync_warps" in mechanisms and not by_issuing
        else 1.0,
        mma_sync_issuing_rate=WarpRate(table) if by_issuing and table else None,
        sync_latency="sync_latency" in mechanisms,
        l2_clock="l2_clock" in mechanisms,
    )


@dataclass(frozen=True)
class _GroupWork:
    """The MMA work each simulated SM group has left, for a search's horizon: with units handed out
    before the run (static tile schedulers, no split-K or stream-K parts) and every unit issuing the
    same MMA work, a group of SMs that runs ``u`` cluster units issues at least ``u`` times the
    schedule's FLOPs per cluster unit, and no faster than its SMs' peak rate. So the group with the most
    left bounds the kernel's end: wave quantization counts (the SMs with one tile more finish last),
    which the chip-wide count of FLOPs left does not see."""

    groups: tuple[tuple[tuple[SimSM, ...], float], ...]
    """Each group's SMs and the MMA FLOPs its units issue at least."""
    flops_per_ns_per_sm: float

    @staticmethod
    def of(
        sched: Schedule, plan: WorkPlan, sms: list[SimSM], flops_per_ns_per_sm: float
    ) -> _GroupWork | None:
        """The groups of ``plan`` (simulated as ``sms``, ``cluster_size`` per group in plan order), or None
        where the bound does not hold (units handed out at run time, or of different lengths)."""
        launch = sched.launch
        if plan.dynamic or launch.k_splits != 1 or launch.parts is not None or "stream" in launch.scheduler:
            return None
        csize = launch.cluster_size
        units = [sum(len(slot) for slot in group.slots) for group in plan.groups]
        total = sum(u * group.weight for u, group in zip(units, plan.groups, strict=True))
        if total <= 0 or len(sms) != csize * len(plan.groups) or flops_per_ns_per_sm <= 0:
            return None
        per_unit = sched.flops / total
        return _GroupWork(
            tuple((tuple(sms[i * csize : (i + 1) * csize]), u * per_unit) for i, u in enumerate(units)),
            flops_per_ns_per_sm,
        )

    def time_left_ns(self) -> float:
        """The least time the slowest group needs for its MMA work left, at its SMs' peak rate."""
        worst_ns = 0.0
        for sms, planned in self.groups:
            left = planned - sum(sm.tensor_flops for sm in sms)
            if left > 0:
                worst_ns = max(worst_ns, left / (len(sms) * self.flops_per_ns_per_sm))
        return worst_ns


def _l2_reads_left_ns(read_bytes: float, sms: list[SimSM], net: FlowNetwork) -> float:
    """The least time the L2 needs for the reads of ``read_bytes`` not yet issued: the bytes of reads
    landed and of those queued at the SMs' ingress ports (issued, counted as if moved) come off, the
    rest can move no faster than the L2's bandwidth."""
    issued = net.l2_read_bytes
    for sm in sms:
        for t in sm.ingress.queue:  # type: ignore[union-attr]
            issued += t.bytes * t.weight * t.l2_coef
    return max(read_bytes - issued, 0.0) / net.l2_capacity


def _done_fraction(sched: Schedule, sms: list[SimSM], net: FlowNetwork) -> float:
    """How much of the schedule's work is done: its tensor FLOPs issued as a fraction of its FLOPs, or
    where it has issued none (CUDA-core and memory kernels, a prologue of loads), its HBM bytes moved
    as a fraction of its compulsory bytes. Bytes are not the measure where FLOPs exist: attention and
    decode re-read K/V, so their bytes run ahead of their work (a 1M-token causal FA3 has moved 16% of
    its compulsory bytes when it has issued 1% of its FLOPs). Every shipped schedule issues at least its
    FLOPs (tests/test_fastforward.py), so the fraction never lags the work done in the end."""
    if sched.flops > 0:
        flops = issued_tensor_flops(sms)
        if flops > 0:
            return flops / sched.flops
    if sched.compulsory_bytes > 0:
        return (net.hbm_read_bytes + net.hbm_write_bytes) / sched.compulsory_bytes
    return 0.0


def _dynamic_names(sched: Schedule, plan: WorkPlan) -> frozenset[str]:
    """Names whose values change as roles run: loop variables, ``tile`` and the work units' fields."""
    names = {"tile"} | plan.unit_keys
    for role in sched.roles.values():
        names |= {s.args["var"] for s, _ in walk(role.program) if s.op == "for"}
    return frozenset(names)


__all__ = ["DEFAULT_MAX_EVENTS", "PIPES", "SimRun", "simulate"]
