"""FlashMLA's split-KV metadata (``get_mla_metadata``): how every request's KV blocks are cut over the
persistent parts, shared by the decode kernel's scheduler (gpusim/sim/scheduler.py) and by the
expression functions ``mla_splits``, ``mla_split_requests`` and ``mla_split_segments`` the separate
combine kernel reads (schedules/mla_combine.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

MAX_REQUESTS = 1 << 20
"""The most requests (batch) ``request_splits`` lays out: its work is linear in them."""
MAX_PARTS = 1 << 16
"""The most parts ``request_splits`` lays out."""


@dataclass(frozen=True)
class KvSegment:
    """One part's share of one request's KV blocks (FlashMLA ``get_mla_metadata``)."""

    request: int
    block_begin: int
    block_end: int
    split: int
    """Index of this segment among the request's segments."""
    n_splits: int
    """Segments the request was cut into (1: not split, no combine needed)."""


def splitkv_balanced_parts(blocks_per_request: list[int], parts: int, overhead: int) -> list[list[KvSegment]]:
    """FlashMLA's get_mla_metadata: cut every request's KV blocks into ``parts`` contiguous shares of
    about ``ceil(total / parts) + overhead`` blocks, charging ``overhead`` blocks per segment (the
    cost of starting a request: loading Q, writing O and LSE). Returns each part's segments in order."""
    parts = max(1, parts)
    total = sum(b + overhead for b in blocks_per_request)
    payload = -(-total // parts) + overhead
    out: list[list[tuple[int, int, int, int]]] = []
    idx, block, split = 0, 0, 0
    n = len(blocks_per_request)
    for _ in range(parts):
        segs: list[tuple[int, int, int, int]] = []
        remain = payload
        while idx < n:
            left = blocks_per_request[idx] - block
            if remain >= left + overhead:
                segs.append((idx, block, blocks_per_request[idx], split))
                remain -= left + overhead
                idx, block, split = idx + 1, 0, 0
            else:
                if remain - overhead > 0:
                    take = remain - overhead
                    segs.append((idx, block, block + take, split))
                    block += take
                    split += 1
                break
        out.append(segs)
    n_splits: dict[int, int] = {}
    for segs in out:
        for req, _b0, _b1, sp in segs:
            n_splits[req] = max(n_splits.get(req, 0), sp + 1)
    return [[KvSegment(r, b0, b1, sp, n_splits[r]) for r, b0, b1, sp in segs] for segs in out]


@lru_cache(maxsize=32)
def request_splits(kv_blocks: int, batch: int, parts: int, overhead: int) -> tuple[int, ...]:
    """Segments each of ``batch`` requests of ``kv_blocks`` KV blocks is cut into over ``parts`` parts
    (0 for a request no part reaches). ValueError outside 1 <= batch <= MAX_REQUESTS,
    1 <= parts <= MAX_PARTS, kv_blocks >= 1, overhead >= 0."""
    if not (1 <= batch <= MAX_REQUESTS and 1 <= parts <= MAX_PARTS and kv_blocks >= 1 and overhead >= 0):
        raise ValueError(
            f"mla_splits needs 1 <= batch <= {MAX_REQUESTS:,}, 1 <= parts <= {MAX_PARTS:,}, kv_blocks >= 1 "
            f"and overhead >= 0 (got kv_blocks={kv_blocks}, batch={batch}, parts={parts}, overhead={overhead})"
        )
    counts = [0] * batch
    for segs in splitkv_balanced_parts([kv_blocks] * batch, parts, overhead):
        for seg in segs:
            counts[seg.request] = seg.n_splits
    return tuple(counts)


def mla_splits(request: float, kv_blocks: float, batch: float, parts: float, overhead: float) -> int:
    """The expression function ``mla_splits(request, kv_blocks, batch, parts, overhead)``: how many
    segments FlashMLA's metadata cuts request ``request`` into (``request_splits``)."""
    counts = request_splits(int(kv_blocks), int(batch), int(parts), int(overhead))
    index = int(request)
    if not 0 <= index < len(counts):
        raise ValueError(f"mla_splits: request {index} is outside 0 .. {len(counts) - 1}")
    return counts[index]


def _split_requests(kv_blocks: float, batch: float, parts: float, overhead: float) -> list[int]:
    counts = request_splits(int(kv_blocks), int(batch), int(parts), int(overhead))
    return [c for c in counts if c > 1]


def mla_split_requests(kv_blocks: float, batch: float, parts: float, overhead: float) -> int:
    """The expression function ``mla_split_requests(kv_blocks, batch, parts, overhead)``: requests cut
    into more than one segment (those the combine kernel merges)."""
    return len(_split_requests(kv_blocks, batch, parts, overhead))


def mla_split_segments(kv_blocks: float, batch: float, parts: float, overhead: float) -> int:
    """The expression function ``mla_split_segments(kv_blocks, batch, parts, overhead)``: segments of
    the requests cut into more than one (the partials the combine kernel reads)."""
    return sum(_split_requests(kv_blocks, batch, parts, overhead))
