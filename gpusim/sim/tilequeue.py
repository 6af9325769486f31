"""A tile counter: the units of a ``dynamic_persistent`` launch, handed out at run time.

A persistent CTA takes the next unit of the launch order when one of its roles first reaches it (the
producer, ahead of the others, as in FlashAttention-3's DynamicPersistentTileScheduler, whose producer
warp increments a tile semaphore and passes the tile on through shared memory, or as a Blackwell
scheduler warp asks cluster launch control for the next cluster). The launch order is the static
round-robin plan's (unit ``g`` is slot ``g % S``'s ``g // S``-th), so the ``g``-th unit handed out
belongs to wave ``g // S`` of the L2 model whichever CTA takes it.
"""

from __future__ import annotations

from typing import Any

from gpusim.sim.scheduler import ClusterUnit, WorkPlan


class TileQueue:
    """The launch's units in launch order, each handed out once."""

    def __init__(self, plan: WorkPlan) -> None:
        self._slots = plan.slot_lists
        self.num_slots = len(plan.slot_lists)
        self.total = sum(len(s) for s in plan.slot_lists)
        self.taken = 0

    def take(self) -> tuple[int, ClusterUnit] | None:
        """The next unit and its launch index, or None once every unit was handed out."""
        index = self.taken
        if index >= self.total:
            return None
        self.taken += 1
        slot, ordinal = index % self.num_slots, index // self.num_slots
        return index, self._slots[slot][ordinal]


class ClusterTiles:
    """The units one persistent cluster took from the queue, in the order it took them."""

    def __init__(self, queue: TileQueue) -> None:
        self.queue = queue
        self.taken: list[tuple[int, ClusterUnit]] = []

    def reach(self, ordinal: int) -> bool:
        """Whether the cluster has an ``ordinal``-th unit, taking units from the queue up to it."""
        while len(self.taken) <= ordinal:
            got = self.queue.take()
            if got is None:
                return False
            self.taken.append(got)
        return True


class DynamicUnits:
    """One CTA's view of its cluster's units (a list whose end is known only when the queue runs out)."""

    def __init__(self, tiles: ClusterTiles, rank: int) -> None:
        self.tiles, self.rank = tiles, rank

    @property
    def bound(self) -> int:
        """No CTA takes more units than the launch has."""
        return self.tiles.queue.total

    def reach(self, ordinal: int) -> bool:
        """Whether there is an ``ordinal``-th unit (taking it from the queue when first asked)."""
        return self.tiles.reach(ordinal)

    def wave(self, ordinal: int) -> int:
        """The L2 model's wave of the ``ordinal``-th unit (reached before)."""
        return self.tiles.taken[ordinal][0] // self.tiles.queue.num_slots

    def __len__(self) -> int:
        return len(self.tiles.taken)

    def __getitem__(self, ordinal: int) -> dict[str, Any]:
        if not self.reach(ordinal):
            raise IndexError(ordinal)
        return self.tiles.taken[ordinal][1][self.rank]
