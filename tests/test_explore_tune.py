"""The tuner: library candidate spaces, DeepGEMM's heuristic, tf32 on Hopper, exhaustive and sampled search."""

from __future__ import annotations

from typing import Any

import pytest

from gpusim.arch import load_arch
from gpusim.errors import InputError
from gpusim.explore.deepgemm import deepgemm_cluster, deepgemm_pick
from gpusim.explore.spaces import FIT, Candidate, deepgemm_space, gemm_space, space_for
from gpusim.explore.tune import tune

SMALL = {"M": 512, "N": 512, "K": 512, "dtype": "bf16"}


def test_deepgemm_space_is_the_library_list() -> None:
    space = deepgemm_space()
    blocks = {(c.overrides.get("BM", c.overrides.get("BLOCK_M")), c.overrides.get("BN", c.overrides.get("BLOCK_N")))
              for c in space}  # fmt: skip
    assert {b[0] for b in blocks} == {64, 128, 256}
    assert sorted({b[1] for b in blocks}) == list(range(16, 257, 16))
    clusters = {(c.overrides["CLUSTER_M"], c.overrides["CLUSTER_N"]) for c in space}
    assert clusters == {(1, 1), (1, 2), (2, 1)}
    assert len(space) == 3 * 16 * 3


def test_deepgemm_heuristic_fills_the_sms() -> None:
    legal = [(bm, bn) for bm in (64, 128, 256) for bn in range(16, 257, 16)]
    # 128x2112: 2 x 66 blocks of 64x32 fill 132 SMs in one wave (the default 128-row tiles used 19)
    assert deepgemm_pick(128, 2112, 1, 132, legal) == (64, 32)
    bm, bn = deepgemm_pick(4096, 7168, 1, 132, legal)  # type: ignore[misc]
    blocks = -(-4096 // bm) * -(-7168 // bn)
    assert all(-(-blocks // 132) <= -(-(-(-4096 // m) * -(-7168 // n)) // 132) for m, n in legal)
    assert deepgemm_cluster(4096, 7168, bm, bn) in {(1, 2), (2, 1)}
    assert deepgemm_cluster(128, 2112, 64, 32) == (1, 1)


def test_spaces_follow_the_generation() -> None:
    hopper = {c.schedule for c in gemm_space(load_arch("h100"), SMALL)}
    assert {"gemm_ws_cooperative", "gemm_ws_pingpong"} <= hopper and "gemm_tcgen05" not in hopper
    blackwell = {c.schedule for c in gemm_space(load_arch("b200"), SMALL)}
    assert "gemm_tcgen05" in blackwell and "gemm_ws_pingpong" not in blackwell
    tf32 = [
        c
        for c in gemm_space(load_arch("h100"), {**SMALL, "dtype": "tf32"})
        if c.schedule == "gemm_ws_pingpong"
    ]
    assert {c.overrides["BK"] for c in tf32} == {32} and all(c.overrides["STAGES"] == FIT for c in tf32)
    assert {c.schedule for c in space_for("auto:attention", load_arch("h100"), {})} == {
        "attn_fa3_fwd",
        "attn_fa2_fwd",
    }


def test_fp8_on_blackwell_considers_deepgemm_sm100() -> None:
    fp8 = {**SMALL, "dtype": "fp8_e4m3"}
    blackwell = [c for c in gemm_space(load_arch("b200"), fp8) if c.schedule.startswith("gemm_fp8_deepgemm")]
    assert [c.schedule for c in blackwell] == ["gemm_fp8_deepgemm_sm100"]
    assert "gemm_fp8_deepgemm_sm100" not in {c.schedule for c in gemm_space(load_arch("b200"), SMALL)}
    hopper = {c.schedule for c in gemm_space(load_arch("h100"), fp8)}
    assert "gemm_fp8_deepgemm" in hopper and "gemm_fp8_deepgemm_sm100" not in hopper
    result = tune("auto:gemm", "b200", fp8, candidates=blackwell)
    assert result.best["status"] == "ok" and result.best["schedule"] == "gemm_fp8_deepgemm_sm100"


def test_tf32_gemm_is_tuned_on_hopper() -> None:
    candidates = [c for c in gemm_space(load_arch("h100"), {**SMALL, "dtype": "tf32"})
                  if c.schedule == "gemm_ws_pingpong"][:2]  # fmt: skip
    result = tune("auto:gemm", "h100", {**SMALL, "dtype": "tf32"}, candidates=candidates)
    assert result.best["status"] == "ok" and result.best["dtype"] == "tf32"
    assert "stages" in result.origin(result.best)


def test_exhaustive_tune_picks_the_fastest(monkeypatch: pytest.MonkeyPatch) -> None:
    space = [c for c in gemm_space(load_arch("h100"), SMALL) if c.schedule == "gemm_ws_pingpong"][:4]
    result = tune("auto:gemm", "h100", SMALL, candidates=space)
    assert result.mode == "exhaustive"
    times = [r["time_us"] for r in result.rows if r["status"] == "ok"]
    assert result.best["time_us"] == min(times)


def test_sampled_tune_stays_in_budget_and_is_deterministic() -> None:
    space = [c for c in gemm_space(load_arch("h100"), SMALL) if c.schedule == "gemm_ws_pingpong"][:6]
    first = tune("auto:gemm", "h100", SMALL, candidates=space, budget=3)
    again = tune("auto:gemm", "h100", SMALL, candidates=space, budget=3)
    assert first.mode.startswith("optuna") and len(first.rows) <= 4
    assert first.rows == again.rows


def test_tune_refuses_schedule_parameters_for_auto() -> None:
    with pytest.raises(InputError, match="only the problem"):
        tune("auto:gemm", "h100", {"BN": 128})
    with pytest.raises(InputError, match="no candidate space"):
        tune("stream", "h100", {}, candidates=[])


def test_cli_tune_json(run_cli: Any) -> None:
    rc, stdout, stderr = run_cli(["tune", "attn_fa2_fwd", "--arch", "a100", "--set", "batch=1", "--set", "heads=4",
                                  "--set", "seqlen_q=512", "-j", "1", "--json", "--top", "3"])  # fmt: skip
    assert rc == 0, stderr
    import json

    doc = json.loads(stdout)
    assert doc["best"]["schedule"] == "attn_fa2_fwd" and doc["predicted"] >= 2
    assert doc["ranking"][0]["time_us"] <= doc["ranking"][-1]["time_us"]


def test_candidate_overrides() -> None:
    assert Candidate("gemm_sync", (("BM", 64),), "x").overrides == {"BM": 64}


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0, -4, 64.5, True])
def test_problem_sizes_must_be_whole_numbers(value: Any) -> None:
    with pytest.raises(InputError, match="whole number"):
        tune("auto:gemm", "h100", {"M": value})
