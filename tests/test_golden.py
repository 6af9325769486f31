"""Golden results: every schedule in schedules/ runs on its reference arch and matches its checked-in summary.

Regenerate after an intended model change with ``GPUSIM_UPDATE_GOLDEN=1 pytest tests/test_golden.py``
and review the diff: every changed number is a changed prediction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpusim.api import predict
from gpusim.schedule.load import builtin_schedule_names

GOLDEN_DIR = Path(__file__).parent / "golden"
# Problem sizes that keep each run well under a second; the reference arch comes from the schedule file.
PROBLEMS: dict[str, dict[str, Any]] = {
    "gemm_sync": {"M": 2048, "N": 2048, "K": 1024},
    "gemm_cp_async": {"M": 2048, "N": 2048, "K": 1024},
    "gemm_ws_pingpong": {"M": 4096, "N": 4096, "K": 1024},
    "gemm_ws_cooperative": {"M": 4096, "N": 4096, "K": 1024},
    "gemm_tcgen05": {"M": 4096, "N": 4096, "K": 1024},
    "stream": {"bytes": 64 * 2**20},
    "mla_decode_flashmla": {"batch": 16, "seqlen_kv": 2048},
    "mla_decode_flashmla_v1": {"batch": 16, "seqlen_kv": 2048},
    "mla_decode_flashmla_sparse_fp8": {"batch": 16, "topk": 2048},
    "gemm_fp8_deepgemm": {"M": 2048, "N": 2048, "K": 2048},
    "attn_fa2_fwd": {"batch": 1, "heads": 16, "seqlen_q": 2048},
    "attn_fa2_bwd": {"batch": 1, "heads": 8, "seqlen_q": 1024},
    "attn_fa3_fwd": {"batch": 1, "heads": 16, "seqlen_q": 2048},
    "attn_fa4_fwd": {"batch": 2, "heads": 16, "seqlen_q": 2048},
    "gemm_simt_fp32": {"M": 1024, "N": 1024, "K": 512},
    "gemm_tf32": {"M": 2048, "N": 2048, "K": 1024},
    "attn_decode_splitkv": {"batch": 4, "seqlen_kv": 4096, "PAGE_SIZE": 16},
    "gemm_streamk": {
        "M": 4096,
        "N": 2176,
        "K": 1024,
    },  # 272 tiles: 140 stream-K (the last 2 waves), 132 data-parallel
    "attn_fa3_bwd": {"batch": 1, "heads": 8, "seqlen_q": 1024},
    "attn_fa4_bwd": {"batch": 1, "heads": 8, "seqlen_q": 1024},
    "attn_fa4_bwd_hd256_dq": {"batch": 1, "heads": 4, "seqlen_q": 2048},
    "attn_fa4_bwd_hd256_dkdv": {"batch": 1, "heads": 4, "seqlen_q": 2048},
    "attn_bwd_preprocess": {"batch": 1, "heads": 8, "seqlen_q": 1024},
    "attn_bwd_postprocess": {"batch": 1, "heads": 8, "seqlen_q": 1024},
    "stream_l2": {"bytes": 8 * 2**20, "BLOCKS": 4000},
    "mla_combine": {"batch": 16, "seqlen_kv": 8192},  # every request split in 4
    "gemm_splitk_reduce": {"M": 1024, "N": 1024, "SPLITS": 4},  # 16 MiB of partials: resident in L2
    "gemm_fp8_deepgemm_sm100": {"M": 4096, "N": 2112, "K": 1024},  # 128x192 blocks, 2-CTA pairs along M
}
# More golden cases of a schedule (its other ops and regimes): file name -> (schedule, problem).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "stream_init": ("stream", {"bytes": 64 * 2**20, "op": "init"}),
    "stream_read": ("stream", {"bytes": 64 * 2**20, "op": "read"}),
    "stream_3pt": ("stream", {"bytes": 64 * 2**20, "op": "3pt", "dtype": "fp64"}),
    "stream_5pt": ("stream", {"bytes": 64 * 2**20, "op": "5pt", "dtype": "fp64"}),
    "stream_l2_beyond_l2": ("stream_l2", {"bytes": 100 * 2**20, "BLOCKS": 4000}),
    "gemm_fp8_deepgemm_sm100_masked": (
        "gemm_fp8_deepgemm_sm100",
        {"groups": 4, "layout": "masked", "M": 1024, "masked_m": 200, "N": 2048, "K": 1024},
    ),  # swap-AB, 2-CTA pairs along N, two of eight m-blocks per group scheduled
}


def _summary(name: str, problem: dict[str, Any] | None = None) -> dict[str, Any]:
    problem = PROBLEMS.get(name, {}) if problem is None else problem
    p = predict(name, costs="datasheet", **problem)
    return {
        "arch": p.arch,
        "problem": problem,
        "time_us": p.time_us,
        "tflops": p.tflops,
        "hbm_gbps": p.hbm_gbps,
        "l2_hit_rate": p.l2_hit_rate,
        "utilization": p.utilization,
        "bottleneck": p.bottleneck,
    }


def test_every_schedule_has_a_golden_problem() -> None:
    """Adding a schedule means adding its golden problem here (and its golden file)."""
    assert set(builtin_schedule_names()) == set(PROBLEMS)


@pytest.mark.parametrize("name", builtin_schedule_names())
def test_golden(name: str) -> None:
    """The summary on the reference arch equals the checked-in one (floats to 1e-9 relative)."""
    _check(GOLDEN_DIR / f"{name}.json", _summary(name))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_golden_variant(variant: str) -> None:
    """Other ops and regimes of a schedule (stream's init/read/stencils, stream_l2 beyond the L2)."""
    name, problem = VARIANTS[variant]
    _check(GOLDEN_DIR / f"{variant}.json", _summary(name, problem))


def _check(path: Path, got: dict[str, Any]) -> None:
    if os.environ.get("GPUSIM_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert got["arch"] == want["arch"] and got["bottleneck"] == want["bottleneck"]
    for key in ("time_us", "tflops", "hbm_gbps", "l2_hit_rate"):
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    assert got["utilization"] == pytest.approx(want["utilization"], rel=1e-9, abs=1e-12)
