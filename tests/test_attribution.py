"""Bottleneck attribution: shares add up, and kernels built to be bound by one resource are named so."""

from __future__ import annotations

import json

import pytest

from gpusim.api import predict
from gpusim.arch import load_arch
from gpusim.report.attribution import CAUSES, attribute
from gpusim.report.intervals import merge, subtract, total
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate


def _run(name: str, arch: str, **overrides):
    a = load_arch(arch)
    return simulate(load_schedule(name, a, overrides), a, record=True)


def test_interval_helpers() -> None:
    """Union and difference of interval lists."""
    assert merge([(3, 4), (0, 1), (0.5, 2), (5, 5)]) == [(0, 2), (3, 4)]
    assert subtract([(0, 10)], [(1, 2), (4, 6), (9, 12)]) == [(0, 1), (2, 4), (6, 9)]
    assert total(subtract([(0, 10)], [])) == 10


@pytest.mark.parametrize(
    ("name", "arch", "overrides"),
    [
        ("gemm_ws_pingpong", "h100", {"M": 2048, "N": 2048, "K": 1024}),
        ("gemm_sync", "v100", {"M": 1024, "N": 1024, "K": 512}),
        ("gemm_cp_async", "a100", {"M": 1024, "N": 1024, "K": 512}),
        ("stream", "h100", {"bytes": 16 * 2**20}),
    ],
)
def test_shares_sum_to_one(name: str, arch: str, overrides: dict) -> None:
    """Every cause is present, none is negative, and they add up to 100% within rounding."""
    attr = attribute(_run(name, arch, **overrides))
    assert set(attr.shares) == set(CAUSES)
    assert all(v >= 0 for v in attr.shares.values())
    assert sum(attr.shares.values()) == pytest.approx(1.0, abs=1e-6)
    assert attr.verdict and "\n" not in attr.verdict


def test_stream_verdict_names_hbm() -> None:
    """A bandwidth kernel is memory-bound on HBM."""
    attr = attribute(_run("stream", "h100", bytes=64 * 2**20))
    assert attr.verdict.startswith("memory-bound (HBM)")
    assert attr.shares["memory"] > 0.9


def test_large_gemm_verdict_names_tensor_core() -> None:
    """A huge square GEMM on Hopper's cooperative schedule is tensor-core bound."""
    attr = attribute(_run("gemm_ws_cooperative", "h100", M=8192, N=8192, K=8192))
    assert attr.verdict.startswith("tensor-core bound")
    assert attr.shares["tensor_core"] > 0.8


def test_prediction_carries_attribution_unless_time_only() -> None:
    """predict() attributes by default (verdict, bottleneck, shares); attribute=False is time-only and
    gives the same time; the JSON document is strict JSON."""
    a = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", a, {"M": 1024, "N": 1024, "K": 512})
    plain = predict(sched, a, costs="datasheet", attribute=False)
    assert plain.attribution is None and plain.verdict is None and plain.bottleneck is None
    rec = predict(sched, a, costs="datasheet")
    assert rec.attribution is not None and rec.verdict and rec.bottleneck in rec.attribution
    assert rec.time_us == plain.time_us  # recording changes nothing
    json.dumps(rec.to_dict(), allow_nan=False)


def test_predict_json_has_attribution(run_cli) -> None:
    """`gpusim predict --json` carries {cause: share} and the verdict."""
    rc, out, err = run_cli(["predict", "stream", "--set", "bytes=8388608", "--json"])
    assert rc == 0, err
    data = json.loads(out)
    assert sum(data["attribution"].values()) == pytest.approx(1.0, abs=1e-6)
    assert "HBM" in data["verdict"]


def test_auto_gemm_carries_a_tensor_core_verdict(run_cli) -> None:
    """`predict auto:gemm` re-simulates its choice with recording: a large square GEMM is tensor-core bound."""
    rc, out, err = run_cli(["predict", "auto:gemm", "--arch", "h100", "--set", "M=4096", "--set", "N=4096",
                            "--set", "K=4096", "--json"])  # fmt: skip
    assert rc == 0, err
    data = json.loads(out)
    assert data["verdict"].startswith("tensor-core bound")
    assert sum(data["attribution"].values()) == pytest.approx(1.0, abs=1e-6)
