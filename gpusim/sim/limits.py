"""Limits on simulated work: they count events simulated in detail, never wall-clock seconds, so the
same command gives the same rows and the same result on a fast or a loaded machine."""

from __future__ import annotations

DEFAULT_MAX_EVENTS = 5_000_000
"""Events one simulation may simulate in detail (fast-forwarded periods do not count, nor events that
run no simulation code: one nothing waits on, a network or tensor-core timer made stale by a change of
rates). The shipped
schedules at the sizes of bench/bench_predict.py need well under a hundredth of it with the
fast-forward; an exact (``--exact``) run of a very large problem can exceed it."""


HOPELESS_CHECKS = 25
"""Times during a simulation (at each 25th of its event limit, the last excepted) that the work done so
far is compared with the events it took (:func:`hopeless`)."""

HOPELESS_FACTOR = 8
"""A simulation stops early when, at a check, the events spent so far divided by the fraction of the
schedule's work done (its tensor FLOPs, or its HBM bytes where it issues none) exceed this many
times its event limit: a prediction that would run past its limit by far stops at a 25th of it instead
of running to it (minutes for a hopeless size). The margin leaves room for a steady state the
fast-forward finds late (it would have to make the rest ~8x cheaper per unit of work than the start)."""


def hopeless(events: int, limit: int, done_fraction: float) -> str | None:
    """Why a simulation at ``events`` of its ``limit`` will not finish within it (None: it may), from
    ``done_fraction`` of the schedule's work done so far. Deterministic: it reads simulated work only."""
    if not 0.0 < done_fraction < 1.0:
        return None  # nothing measurable done yet (CUDA-core work, a long prologue): no judgement
    projected = events / done_fraction
    if projected <= HOPELESS_FACTOR * limit:
        return None
    return (
        f"{100 * done_fraction:.3g}% of the schedule's work done in {events:,} events, about {projected:,.0f} "
        f"events in all"
    )


EVENTS_PER_STEP_OP = 50
"""The events of the event limit that one program operation interpreted without waiting stands for:
with the default limit, a role may run 100,000 operations between two events (one resumption of its
process), and never fewer than :data:`MIN_OPS_PER_STEP`. A role runs a few to a few dozen operations
before it waits on something in every shipped schedule; the bound catches a program that never waits
(a loop of 10**12 async loads, an empty loop of 10**12 iterations), which the event count alone never
sees."""

MIN_OPS_PER_STEP = 10_000


class WorkBudget:
    """The program operations the running step of one simulation may still interpret, and the way a
    signal stops every role of the simulation at its next operation."""

    __slots__ = ("failure", "left", "per_step", "stop_with")

    def __init__(self, max_events: int | None) -> None:
        if max_events is None:
            self.per_step = 1 << 62
        else:
            self.per_step = max(MIN_OPS_PER_STEP, max_events // EVENTS_PER_STEP_OP)
        self.left = self.per_step
        self.stop_with: type[BaseException] | None = None
        self.failure: BaseException | None = None

    def exhausted(self, where: str) -> BaseException:
        """The exception an operation raises when ``left`` ran out (a signal sets it to zero). From then
        on every role fails at its next operation with the same error, so the simulation ends at once
        instead of letting each role run its own ``per_step`` operations first."""
        if self.failure is None:
            if self.stop_with is not None:
                self.failure = self.stop_with()
            else:
                from gpusim.errors import SimulationLimitExceeded

                self.failure = SimulationLimitExceeded(
                    f"{where}: the role ran {self.per_step:,} program operations without waiting on any "
                    "event (a loop that never waits); simulation stopped at its work limit (raise it with "
                    "--max-events, or max_events=)"
                )
            self.per_step = self.left = 0
        return type(self.failure)(*self.failure.args)


_ACTIVE: list[WorkBudget] = []


def start_budget(max_events: int | None) -> WorkBudget:
    """A new simulation's budget, registered so that :func:`stop_simulations` can reach it."""
    budget = WorkBudget(max_events)
    _ACTIVE[:] = [budget]  # a process runs one simulation at a time
    return budget


def stop_simulations(exc_type: type[BaseException]) -> None:
    """Make the running simulation raise ``exc_type`` at its next operation, in every role. Called from
    a signal handler: its own exception, raised inside a role, would only fail that role's simpy
    process while the other roles ran on."""
    for budget in _ACTIVE:
        budget.stop_with = exc_type
        budget.per_step = budget.left = 0
