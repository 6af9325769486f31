"""Every schedule runs on every arch that has the hardware it needs and is refused, with the reason, elsewhere."""

from __future__ import annotations

import pytest

from gpusim.api import predict
from gpusim.arch import all_archs
from gpusim.errors import ScheduleRefused
from gpusim.schedule.load import builtin_schedule_names, load_schedule
from gpusim.sim.engine import simulate

NEEDS = {
    "gemm_sync": (lambda a: True, ""),
    "stream": (lambda a: True, ""),
    "stream_l2": (lambda a: True, ""),
    "gemm_cp_async": (lambda a: a.features.cp_async and a.generation != "volta", "no bf16 path|cp.async"),
    "gemm_ws_pingpong": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "gemm_ws_cooperative": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "gemm_tcgen05": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "mla_decode_flashmla": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "mla_decode_flashmla_v1": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "mla_decode_flashmla_sparse_fp8": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "gemm_fp8_deepgemm": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "gemm_fp8_deepgemm_sm100": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "attn_fa2_fwd": (lambda a: a.features.cp_async and a.generation != "volta", "no bf16 path|cp.async"),
    "attn_fa2_bwd": (lambda a: a.features.cp_async and a.generation != "volta", "no bf16 path|cp.async"),
    "attn_fa3_fwd": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "attn_fa4_fwd": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "attn_fa4_bwd": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "attn_fa4_bwd_hd256_dq": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "attn_fa4_bwd_hd256_dkdv": (lambda a: a.features.tcgen05, "tcgen05 does not exist"),
    "gemm_simt_fp32": (lambda a: True, ""),
    "gemm_tf32": (lambda a: a.features.cp_async and a.generation != "volta", "no tf32 path|cp.async"),
    "attn_decode_splitkv": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "gemm_streamk": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "attn_fa3_bwd": (lambda a: a.features.wgmma, "wgmma does not exist"),
    "attn_bwd_preprocess": (lambda a: True, ""),
    "attn_bwd_postprocess": (lambda a: True, ""),
    "mla_combine": (lambda a: True, ""),
    "gemm_splitk_reduce": (lambda a: True, ""),
}
SMALL = {
    "stream": {"bytes": 4 * 2**20},
    "stream_l2": {"bytes": 4 * 2**20, "BLOCKS": 1000},
    "mla_decode_flashmla": {"batch": 4, "seqlen_kv": 512},
    "mla_decode_flashmla_v1": {"batch": 4, "seqlen_kv": 512},
    "mla_decode_flashmla_sparse_fp8": {"batch": 4, "topk": 512},
    "attn_decode_splitkv": {"batch": 2, "seqlen_kv": 1024},
    "gemm_simt_fp32": {"M": 512, "N": 512, "K": 256},
    "mla_combine": {"batch": 4, "seqlen_kv": 512},
    "gemm_splitk_reduce": {"M": 1024, "N": 1024},
}
ATTN_SMALL = {"batch": 1, "heads": 4, "seqlen_q": 512}
SMALL.update(
    {
        name: ATTN_SMALL
        for name in (
            "attn_fa2_fwd",
            "attn_fa2_bwd",
            "attn_fa3_fwd",
            "attn_fa4_fwd",
            "attn_fa4_bwd",
            "attn_fa4_bwd_hd256_dq",
            "attn_fa4_bwd_hd256_dkdv",
            "attn_fa3_bwd",
            "attn_bwd_preprocess",
            "attn_bwd_postprocess",
        )
    }
)


def test_every_schedule_is_covered() -> None:
    """A new schedule must say what hardware it needs."""
    assert set(NEEDS) == set(builtin_schedule_names())


@pytest.mark.parametrize("arch", all_archs(), ids=lambda a: a.id)
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_runs_where_the_hardware_exists(name: str, arch) -> None:
    """Legal combinations simulate to a time at or above the roofline; the others are refused with why."""
    has_hardware, reason = NEEDS[name]
    sched_args = SMALL.get(name, {"M": 1024, "N": 1024, "K": 512})
    if has_hardware(arch):
        p = predict(name, arch, costs="datasheet", attribute=False, **sched_args)
        assert p.time_us >= p.roofline_us * (1 - 1e-9)
    else:
        with pytest.raises(ScheduleRefused, match=reason):
            simulate(load_schedule(name, arch, sched_args), arch)
