"""`gpusim compare`: schedules, parameter sets and archs side by side; unknown --vs keys are refused."""

from __future__ import annotations

import json

from gpusim.report.compare import build_variants

SMALL = ["--set", "M=1024", "--set", "N=1024", "--set", "K=512"]


def test_variants_product() -> None:
    """Schedules x archs x (base + each --vs)."""
    vs = build_variants(["gemm_sync"], ["v100", "a100"], ["M=1024"], ["BK=64"])
    assert [(v.arch, v.overrides.get("BK")) for v in vs] == [
        ("v100", None),
        ("v100", 64),
        ("a100", None),
        ("a100", 64),
    ]
    assert len({v.label for v in vs}) == 4


def test_compare_schedules_json(run_cli) -> None:
    """Two schedules: a row each, with time, TFLOPS, utilization, attribution and verdict."""
    rc, out, err = run_cli(
        ["compare", "gemm_ws_pingpong", "gemm_ws_cooperative", "--arch", "h100", *SMALL, "--json"]
    )
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["schedule"] for r in rows] == ["gemm_ws_pingpong", "gemm_ws_cooperative"]
    for r in rows:
        assert r["time_us"] > 0 and r["tflops"] > 0 and r["verdict"]
        assert abs(sum(r["attribution"].values()) - 1) < 1e-6


def test_compare_vs_changes_the_parameter(run_cli) -> None:
    """--set STAGES=2 --vs STAGES=6: the deeper pipeline is faster on a K-heavy problem."""
    rc, out, err = run_cli(["compare", "gemm_ws_pingpong", "--set", "STAGES=2", "--vs", "STAGES=6",
                            "--set", "M=2048", "--set", "N=2048", "--set", "K=2048", "--json"])  # fmt: skip
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["overrides"]["STAGES"] for r in rows] == [2, 6]
    assert rows[1]["time_us"] < rows[0]["time_us"]


def test_compare_archs_table(run_cli) -> None:
    """Comma-separated archs: one table row per arch."""
    rc, out, err = run_cli(["compare", "gemm_sync", "--arch", "v100,a100,h100", *SMALL])
    assert rc == 0, err
    assert all(a in out for a in ("v100", "a100", "h100"))


def test_vs_unknown_parameter_is_one_line(run_cli) -> None:
    """A --vs naming an unknown parameter: exit 2 with a one-line error that says --vs."""
    rc, _, err = run_cli(["compare", "gemm_ws_pingpong", "--vs", "STAGEZ=6", *SMALL])
    assert rc == 2
    assert "--vs STAGEZ: unknown parameter" in err and len(err.strip().splitlines()) == 1
