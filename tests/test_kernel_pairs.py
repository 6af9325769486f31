"""Producer-consumer kernel pairs: FlashMLA's decode + combine kernels and CUTLASS's parallel split-K
GEMM + reduction kernel, each second kernel reading partials the first just left in L2."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.errors import InputError
from gpusim.schedule.expr import Expr
from gpusim.schedule.load import load_schedule
from gpusim.schedule.splitkv import (
    mla_split_requests,
    mla_split_segments,
    request_splits,
    splitkv_balanced_parts,
)
from gpusim.sequence import load_sequence, predict_sequence
from gpusim.sim.engine import simulate

ROOT = Path(__file__).parents[1]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 600), st.integers(1, 200), st.integers(1, 160), st.integers(0, 8))
def test_split_counts_are_the_metadata_s(kv_blocks: int, batch: int, parts: int, overhead: int) -> None:
    """Every request's split count is the number of segments the metadata gives it, and the split
    totals add up: segments of split requests = all segments - unsplit requests."""
    counts = request_splits(kv_blocks, batch, parts, overhead)
    segments: dict[int, int] = {}
    for segs in splitkv_balanced_parts([kv_blocks] * batch, parts, overhead):
        for seg in segs:
            segments[seg.request] = segments.get(seg.request, 0) + 1
            assert seg.n_splits == counts[seg.request]
    assert [segments.get(r, 0) for r in range(batch)] == list(counts)
    assert all(c >= 1 for c in counts)  # every request is covered
    assert mla_split_requests(kv_blocks, batch, parts, overhead) == sum(c > 1 for c in counts)
    assert mla_split_segments(kv_blocks, batch, parts, overhead) == sum(c for c in counts if c > 1)


def test_a_split_count_outside_the_metadata_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"outside 0 \.\. 3"):
        Expr("mla_splits(4, 64, 4, 66, 5)")({})
    with pytest.raises(InputError, match="1 <= batch"):
        Expr("mla_splits(0, 64, 0, 66, 5)")({})


def _l2_read_bytes(schedule: str, arch: str, **problem: object) -> tuple[float, float]:
    """(bytes read through L2, of which from HBM) of one simulation."""
    arch_obj = load_arch(arch)
    run = simulate(load_schedule(schedule, arch_obj, problem), arch_obj)
    return run.net.l2_read_bytes, run.net.hbm_read_bytes


def test_the_combine_reads_every_split_s_partials_from_l2_and_skips_unsplit_requests() -> None:
    """16 requests of 128 KV blocks over 66 parts: each is cut in 4, and the combine reads all their
    fp32 partials and LSEs (513 floats per head and segment) once, every byte an L2 hit (the decode
    kernel just wrote them). 64 requests of 64 blocks are never split: the combine has no work."""
    read, from_hbm = _l2_read_bytes("mla_combine", "h800", batch=16, seqlen_kv=8192)
    assert request_splits(128, 16, 66, 5) == (4,) * 16
    assert read == pytest.approx(16 * 4 * 128 * 513 * 4)
    assert from_hbm == 0
    idle = predict("mla_combine", "h800", costs="datasheet", batch=64, seqlen_kv=4096)
    assert idle.hbm_read_bytes == 0 and idle.verdict is not None and idle.verdict.startswith("no work")


def test_a_resident_operand_larger_than_the_l2_starts_cold() -> None:
    """The reduction of 1024^2 x 4 fp32 partials (16 MiB) hits in A100's 40 MB L2; 4096^2 x 4 (256
    MiB) does not fit and comes from HBM."""
    read, from_hbm = _l2_read_bytes("gemm_splitk_reduce", "a100", M=1024, N=1024, SPLITS=4)
    assert read == pytest.approx(4 * 1024 * 1024 * 4) and from_hbm == 0
    read, from_hbm = _l2_read_bytes("gemm_splitk_reduce", "a100", M=4096, N=4096, SPLITS=4)
    assert from_hbm == pytest.approx(read) == pytest.approx(4 * 4096 * 4096 * 4)


def test_unfolding_the_combine_moves_its_reads_to_the_combine_kernel() -> None:
    """FOLD_COMBINE=0: the decode kernel no longer reads the partials back (its last splits end
    sooner); the combine kernel reads them instead."""
    problem = {"batch": 16, "seqlen_kv": 8192}
    folded = predict("mla_decode_flashmla", "h800", costs="datasheet", attribute=False, **problem)
    alone = predict(
        "mla_decode_flashmla", "h800", costs="datasheet", attribute=False, FOLD_COMBINE=0, **problem
    )
    partials = 16 * 4 * 128 * 513 * 4
    assert alone.time_us < folded.time_us
    decode_read, _ = _l2_read_bytes("mla_decode_flashmla", "h800", **problem)
    unfolded_read, _ = _l2_read_bytes("mla_decode_flashmla", "h800", FOLD_COMBINE=0, **problem)
    assert decode_read - unfolded_read == pytest.approx(partials)


def test_parallel_split_k_stores_every_split_s_partials_and_no_output() -> None:
    """PARALLEL_SPLIT_K=1: the GEMM kernel's splits each store BM x BN fp32 partials (SPLITS x M x N x
    4 bytes in all) and nothing else; serial split-K stores the output and parks SPLITS - 1 partials."""
    problem = {"M": 1024, "N": 1024, "K": 4096, "dtype": "fp16", "SPLITS": 4}
    parallel = predict(
        "gemm_cp_async", "a100", costs="datasheet", attribute=False, PARALLEL_SPLIT_K=1, **problem
    )
    serial = predict("gemm_cp_async", "a100", costs="datasheet", attribute=False, **problem)
    assert parallel.hbm_write_bytes == pytest.approx(4 * 1024 * 1024 * 4)
    assert serial.hbm_write_bytes == pytest.approx(3 * 1024 * 1024 * 4 + 1024 * 1024 * 2)


@pytest.mark.parametrize("name", ["flashmla_decode", "gemm_splitk_parallel"])
def test_the_pair_sequences_predict_both_kernels(name: str) -> None:
    """The example sequences run both kernels; the second is memory-bound."""
    seq = load_sequence(ROOT / "examples" / "sequences" / f"{name}.yaml")
    result = predict_sequence(seq, str(seq.arch), costs="datasheet")
    first, second = result.kernels
    assert second.prediction.schedule in ("mla_combine", "gemm_splitk_reduce")
    assert second.prediction.bottleneck == "memory"
    assert result.time_us == pytest.approx(first.time_us + second.time_us)
    assert result.time_us > first.prediction.time_us
