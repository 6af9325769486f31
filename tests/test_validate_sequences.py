"""Measured rows of kernel sequences (``a+b+c``): a parameter belongs to the kernels that have it."""

from __future__ import annotations

import pytest

from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.predictor import Skip, problem_for

FA3_BACKWARD = ("attn_bwd_preprocess", "attn_fa3_bwd", "attn_bwd_postprocess")


def _row(params: dict[str, object]) -> Measurement:
    return Measurement(index=0, file="rows.csv", line=2, source="test", arch="h100", schedule="+".join(FA3_BACKWARD),
                       dtype="bf16", dims={"batch": 4, "heads": 48, "seqlen_q": 1024, "seqlen_kv": 1024,
                                           "head_dim": 128, "causal": 0},
                       metric="bwd_throughput", value=1.0, unit="TFLOPS", params=params)  # fmt: skip


def test_a_sequence_parameter_reaches_the_kernels_that_have_it() -> None:
    """heads_kv is the main kernel's (GQA); the pre/post kernels of the same row run without it."""
    row = _row({"heads_kv": 8})
    assert problem_for("attn_fa3_bwd", row, FA3_BACKWARD[::2])["heads_kv"] == 8
    pre = problem_for("attn_bwd_preprocess", row, FA3_BACKWARD[1:])
    assert "heads_kv" not in pre and pre["heads"] == 48


def test_a_parameter_no_kernel_of_the_sequence_has_skips_the_row() -> None:
    with pytest.raises(Skip, match="no parameter 'heads_kv'"):
        problem_for("attn_bwd_preprocess", _row({"heads_kv": 8}))
    with pytest.raises(Skip, match="no parameter 'BOGUS'"):
        problem_for("attn_bwd_preprocess", _row({"BOGUS": 1}), FA3_BACKWARD[1:])
