"""CUTLASS's stream-K decomposition (gpusim/sim/streamk.py): which tiles it splits and how."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from gpusim.api import load_arch
from gpusim.schedule.load import load_schedule
from gpusim.sim.scheduler import plan_work
from gpusim.sim.streamk import DECOMPOSITIONS, MIN_ITERS_PER_SK_UNIT, split_stream_k


@given(
    tiles=st.integers(1, 2000),
    kt=st.integers(1, 300),
    slots=st.integers(1, 160),
    mode=st.sampled_from(DECOMPOSITIONS),
)
def test_every_k_iteration_of_every_tile_is_computed_once(tiles: int, kt: int, slots: int, mode: str) -> None:
    split = split_stream_k(tiles, kt, slots, mode)
    done: Counter[tuple[int, int]] = Counter()
    for unit in range(split.sk_units):
        pieces = split.unit_pieces(unit)
        assert [p.tile for p in pieces] == sorted((p.tile for p in pieces), reverse=True)  # walked backwards
        for p in pieces:
            assert p.k_end - p.k_begin >= MIN_ITERS_PER_SK_UNIT
            done.update((p.tile, k) for k in range(p.k_begin, p.k_end))
    dp: Counter[int] = Counter()
    for slot in range(slots):
        _, count = split.slot_units(slot)
        dp.update(split.dp_tile(slot, i) for i in range(count))
    assert all(n == 1 for n in done.values()) and all(n == 1 for n in dp.values())
    assert set(done) == {(t, k) for t in range(split.sk_tiles) for k in range(kt)}
    assert set(dp) == set(range(split.sk_tiles, tiles))


@given(tiles=st.integers(1, 2000), kt=st.integers(9, 300), slots=st.integers(1, 160))
def test_only_a_quantized_last_wave_is_split(tiles: int, kt: int, slots: int) -> None:
    heuristic = split_stream_k(tiles, kt, slots, "heuristic")
    stream_k = split_stream_k(tiles, kt, slots, "stream_k")
    tail = tiles % slots
    assert split_stream_k(tiles, kt, slots, "data_parallel").sk_tiles == 0
    if tail == 0:
        assert heuristic.sk_tiles == stream_k.sk_tiles == 0
        return
    # the last full wave and the partial one (every tile within two waves), unless too few k-tiles
    expected = tiles - max(tiles // slots - 1, 0) * slots
    assert stream_k.sk_tiles in (expected, 0)
    assert stream_k.sk_units <= slots
    assert heuristic.sk_tiles == (0 if 2 * tail >= slots else stream_k.sk_tiles)


def test_the_tile_finishing_piece_reads_the_partials_of_every_earlier_unit_of_its_tile() -> None:
    split = split_stream_k(64, 47, 132, "heuristic")  # 64 tiles of 47 k-tiles over 132 units: ~23 each
    owners: dict[int, set[int]] = {}
    finishing = {}
    for unit in range(split.sk_units):
        for p in split.unit_pieces(unit):
            owners.setdefault(p.tile, set()).add(unit)
            if p.k_end == split.kt:
                finishing[p.tile] = (unit, p)
    for tile, (unit, piece) in finishing.items():
        assert piece.peers == len(owners[tile]) - 1 == len({u for u in owners[tile] if u < unit})
    assert max(p.peers for _, p in finishing.values()) == 2


def test_a_stream_k_gemm_beats_data_parallel_on_a_nearly_empty_last_wave() -> None:
    from gpusim.api import predict

    arch = load_arch("h100")
    problem = {"M": 5120, "N": 5120, "K": 4096}  # 800 tiles of 256x128: 6 full waves and 8 tiles
    sched = load_schedule("gemm_streamk", arch, problem)
    plan = plan_work(sched, arch, group_identical=False)
    iters = sum(u["k_iters"] for slot in plan.slot_lists for cu in slot for u in cu)
    assert iters == sched.env["TILES"] * sched.env["KT"]
    heuristic = predict("gemm_streamk", "h100", costs="datasheet", attribute=False, **problem)
    data_parallel = predict("gemm_streamk", "h100", costs="datasheet", attribute=False, **problem,
                            decomposition="data_parallel")  # fmt: skip
    assert heuristic.time_us < 0.95 * data_parallel.time_us
