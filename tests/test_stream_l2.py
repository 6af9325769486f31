"""stream_l2 (gpu-l2-cache's repeated reads) and stream's gpu-stream ops: where the bytes come from.

A working set that fits in the L2 is read from HBM once and then hit, so it is read faster than the
same bytes streamed from HBM; past the L2 capacity the reads miss and the bandwidth falls to HBM's.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import predict
from gpusim.arch import load_arch

ARCH = "h100"
BLOCKS = 3000
CHUNK_BYTES = 1024 * 64 * 8  # TB threads x 64 doubles


def _l2_read(set_bytes: int):
    return predict("stream_l2", ARCH, costs="datasheet", attribute=False, bytes=set_bytes, BLOCKS=BLOCKS)


def _read_bandwidth_gbps(set_bytes: int) -> float:
    """Bytes the blocks read (BLOCKS x 512 KiB, as gpu-l2-cache counts them) per second."""
    return BLOCKS * CHUNK_BYTES / _l2_read(set_bytes).time_us / 1e3


def test_l2_resident_reads_beat_the_same_bytes_from_hbm() -> None:
    """An 8 MiB set read BLOCKS times hits in L2: faster than `stream` read of the same bytes, and above
    the HBM bandwidth, with nearly every read an L2 hit."""
    total = BLOCKS * CHUNK_BYTES
    resident = _l2_read(8 * 2**20)
    streamed = predict(
        "stream", ARCH, costs="datasheet", attribute=False, bytes=total, op="read", dtype="fp64"
    )
    assert resident.time_us < streamed.time_us
    assert resident.l2_hit_rate > 0.99 and streamed.l2_hit_rate < 0.01
    hbm_gbps = load_arch(ARCH).memory.hbm_bandwidth_bytes_per_s / 1e9
    assert total / resident.time_us / 1e3 > hbm_gbps


def test_bandwidth_falls_past_the_l2_capacity() -> None:
    """Half the L2 is read at L2 bandwidth, past the L2 every read comes from HBM (interleaved chunks:
    a cyclic scan under LRU keeps nothing), so the bandwidth is at most HBM's."""
    memory = load_arch(ARCH).memory
    l2 = memory.l2_size_bytes
    inside, outside = _read_bandwidth_gbps(l2 // 2), _read_bandwidth_gbps(2 * l2)
    assert inside > 1.5 * outside
    assert outside <= memory.hbm_bandwidth_bytes_per_s / 1e9 * (1 + 1e-6)
    assert _l2_read(2 * l2).l2_hit_rate == 0.0 < _l2_read(l2 // 2).l2_hit_rate


@settings(max_examples=4, deadline=None)
@given(st.lists(st.sampled_from([2, 16, 48, 80, 96, 160, 240]), min_size=2, max_size=2, unique=True))
def test_bandwidth_never_rises_with_the_working_set(chunks: list[int]) -> None:
    """A larger working set (in 512 KiB chunks, across the 50 MiB L2) is never read faster."""
    small, large = sorted(chunks)
    assert _read_bandwidth_gbps(large * CHUNK_BYTES) <= _read_bandwidth_gbps(small * CHUNK_BYTES) * (1 + 1e-9)


def test_gpu_stream_ops_move_their_arrays() -> None:
    """init writes one array, read reads one, the stencils read one and write one (HBM bytes)."""
    nbytes = 16 * 2**20
    moved = {}
    for op in ("init", "read", "3pt", "5pt", "copy"):
        p = predict("stream", ARCH, costs="datasheet", attribute=False, bytes=nbytes, op=op, dtype="fp64")
        moved[op] = (p.hbm_read_bytes, p.hbm_write_bytes)
    assert moved["init"] == (0, nbytes)
    assert moved["read"] == (nbytes, 0)
    assert moved["3pt"] == moved["5pt"] == moved["copy"] == (nbytes, nbytes)
