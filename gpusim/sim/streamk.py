"""CUTLASS's sm90 stream-K decomposition: which tiles are data-parallel, and how the rest is cut.

The decomposition follows ``PersistentTileSchedulerSm90StreamKParams`` (include/cutlass/gemm/kernel/
tile_scheduler_params.h: ``get_num_sk_tiles``, ``get_num_sk_units``) and the work assignment of
``PersistentTileSchedulerSm90StreamK`` (sm90_tile_scheduler_stream_k.hpp: ``assign_work``), read for
understanding:

- Only a quantized last wave is worth splitting: with whole waves, or with ``KT`` at most
  ``MIN_ITERS_PER_SK_UNIT`` k-tiles per tile, every tile is data-parallel. The ``heuristic`` mode (the
  library's default) also stays data-parallel when the last wave is at least half full.
- Otherwise the last full wave and the partial one (all tiles when there are at most two waves) are
  stream-K tiles, the first ones in tile order; the rest are data-parallel.
- Their ``sk_tiles x KT`` k-iterations are cut into ``sk_units`` equal shares (at most one per CTA,
  at least ``MIN_ITERS_PER_SK_UNIT`` k-tiles each; the first ``total % sk_units`` units take one more).
  A share boundary that would leave a piece of fewer than ``MIN_ITERS_PER_SK_UNIT`` k-tiles of a tile
  moves to that tile's edge.
- Work-unit indices: the stream-K units first (0 .. sk_units-1), then one per data-parallel tile; a
  persistent CTA takes indices ``s, s + S, s + 2S, ...`` (``S`` CTAs). A stream-K unit walks its tiles
  backwards (the tile it starts gets finished last, giving the units before it time to park their
  partials).

Left out: the reduction groups (``max_sk_groups_``, which regroup the stream-K tiles among units for
the reduction's locality; the pieces and their lengths are the same), the separate-reduction mode and
the split-K short cut the heuristic takes when the units divide evenly over the stream-K tiles (the same
pieces, up to rounding).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

MIN_ITERS_PER_SK_UNIT = 8
"""``min_iters_per_sk_unit_`` of CUTLASS's sm90 stream-K scheduler params (8 k-tiles)."""

DECOMPOSITIONS = ("heuristic", "stream_k", "data_parallel")
"""``launch.scheduler.decomposition`` of a ``stream_k`` scheduler (CUTLASS ``DecompositionMode``)."""


@dataclass(frozen=True)
class Piece:
    """One tile's k-range computed by one work unit."""

    tile: int
    k_begin: int
    k_end: int
    peers: int
    """Units before this one that computed earlier k-tiles of the tile (their partials are read when
    this piece finishes the tile; 0 otherwise)."""


@dataclass(frozen=True)
class StreamKSplit:
    """Which tiles are stream-K and where each stream-K unit's share begins."""

    tiles: int
    kt: int
    slots: int
    sk_tiles: int
    sk_units: int
    bounds: tuple[int, ...]
    """``sk_units + 1`` ascending positions in the flattened stream-K k-space (tile * KT + k)."""

    @property
    def dp_tiles(self) -> int:
        """Tiles computed whole, one work unit each."""
        return self.tiles - self.sk_tiles

    def unit_pieces(self, unit: int) -> list[Piece]:
        """Stream-K unit ``unit``'s pieces, in the order it computes them (its last tile first)."""
        begin, end = self.bounds[unit], self.bounds[unit + 1]
        if end <= begin:
            return []
        kt = self.kt
        pieces = []
        for tile in range((end - 1) // kt, begin // kt - 1, -1):
            k0, k1 = max(begin, tile * kt) - tile * kt, min(end, (tile + 1) * kt) - tile * kt
            peers = 0
            if k1 == kt and k0 > 0:
                bounds = self.bounds
                peers = sum(1 for u in range(self._unit_at(tile * kt), unit) if bounds[u + 1] > bounds[u])
            pieces.append(Piece(tile, k0, k1, peers))
        return pieces

    def _unit_at(self, position: int) -> int:
        """The unit whose share holds k-space ``position`` (the last of equal bounds: shares may be empty)."""
        return bisect.bisect_right(self.bounds, position) - 1

    def slot_units(self, slot: int) -> tuple[int, int]:
        """(stream-K unit of ``slot`` or -1, number of data-parallel tiles ``slot`` runs after it)."""
        first = slot if slot < self.sk_units else -1
        count = len(range(self._first_dp_index(slot), self.sk_units + self.dp_tiles, self.slots))
        return first, count

    def dp_tile(self, slot: int, i: int) -> int:
        """The ``i``-th data-parallel tile ``slot`` runs."""
        return self.sk_tiles + self._first_dp_index(slot) + i * self.slots - self.sk_units

    def _first_dp_index(self, slot: int) -> int:
        """The work-unit index of ``slot``'s first data-parallel tile (after its stream-K unit, if any)."""
        return slot if slot >= self.sk_units else slot + self.slots


def split_stream_k(tiles: int, kt: int, slots: int, mode: str) -> StreamKSplit:
    """The decomposition of ``tiles`` tiles of ``kt`` k-tiles over ``slots`` persistent CTAs."""
    full_waves, total_waves = tiles // slots, -(-tiles // slots)
    sk_tiles = 0
    if mode != "data_parallel" and full_waves != total_waves and kt > MIN_ITERS_PER_SK_UNIT:
        tail = tiles - full_waves * slots
        if not (mode == "heuristic" and 2 * tail >= slots):
            sk_tiles = tiles - max(full_waves - 1, 0) * slots
    sk_units = min(slots, sk_tiles * kt // MIN_ITERS_PER_SK_UNIT) if sk_tiles else 0
    if sk_units == 0:
        return StreamKSplit(tiles, kt, slots, 0, 0, (0,))
    total = sk_tiles * kt
    per, big = divmod(total, sk_units)
    bounds = [0]
    for unit in range(1, sk_units):
        bounds.append(_snap(unit * per + min(unit, big), kt))
    bounds.append(total)
    return StreamKSplit(tiles, kt, slots, sk_tiles, sk_units, tuple(bounds))


def _snap(position: int, kt: int) -> int:
    """A share boundary moved to its tile's edge when it would leave a piece under the minimum."""
    k = position % kt
    if 0 < k < MIN_ITERS_PER_SK_UNIT:
        return position - k
    if k > kt - MIN_ITERS_PER_SK_UNIT:
        return position + kt - k
    return position
