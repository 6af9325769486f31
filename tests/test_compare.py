"""`gpusim compare`: schedules, parameter sets and archs side by side on one problem; refused variants
are rows; unknown --vs keys are refused."""

from __future__ import annotations

import json

from gpusim.comparison import Variant, build_variants, compare

SMALL = ["--set", "M=1024", "--set", "N=1024", "--set", "K=512"]


def test_variants_product() -> None:
    """Schedules x archs x (base + each --vs)."""
    vs = build_variants(["gemm_sync"], ["v100", "a100"], [{"BK": 64}])
    assert [(v.arch, v.overrides.get("BK")) for v in vs] == [
        ("v100", None),
        ("v100", 64),
        ("a100", None),
        ("a100", 64),
    ]
    assert len({v.name for v in vs}) == 4


def test_compare_runs_every_variant_on_one_problem() -> None:
    """Two GEMM schedules whose files default to different sizes run the first one's problem."""
    c = compare([Variant("gemm_ws_pingpong", "h100"), Variant("gemm_cp_async", "h100")], costs="datasheet",
                M=1024, N=1024, K=512)  # fmt: skip
    problems = [r.prediction.problem for r in c.rows if r.prediction is not None]
    assert len(problems) == 2 and problems[0] == problems[1] == c.problem
    c2 = compare([Variant("gemm_cp_async", "a100"), Variant("gemm_ws_pingpong", "h100")], costs="datasheet")
    assert c2.rows[1].prediction is not None
    assert c2.rows[1].prediction.problem["M"] == c2.problem["M"] == 4096  # gemm_cp_async's default, not 8192


def test_compare_schedules_json(run_cli) -> None:
    """Two schedules: a row each, with time, TFLOPS, utilization, attribution and verdict."""
    rc, out, err = run_cli(
        ["compare", "gemm_ws_pingpong", "gemm_ws_cooperative", "--arch", "h100", *SMALL, "--json"]
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["problem"]["M"] == 1024 and doc["costs"] == "calibrated"
    rows = doc["rows"]
    assert [r["schedule"] for r in rows] == ["gemm_ws_pingpong", "gemm_ws_cooperative"]
    for r in rows:
        assert r["time_us"] > 0 and r["tflops"] > 0 and r["verdict"]
        assert abs(sum(r["attribution"].values()) - 1) < 1e-6


def test_compare_refused_variant_is_a_row(run_cli) -> None:
    """Ping-pong (wgmma) on h100 and b200: exit 0, b200 is a refused row, h100 still prints."""
    rc, out, err = run_cli(["compare", "gemm_ws_pingpong", "--arch", "h100,b200", *SMALL, "--json"])
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert rows[0]["refused"] is None and rows[0]["time_us"] > 0
    assert rows[1]["arch"] == "b200" and "wgmma" in rows[1]["refused"]
    rc, out, err = run_cli(["compare", "gemm_ws_pingpong", "--arch", "h100,b200", *SMALL])
    assert rc == 0, err
    assert "b200: refused: " in out


def test_compare_vs_changes_the_parameter(run_cli) -> None:
    """--set STAGES=2 --vs STAGES=6: the deeper pipeline is faster on a K-heavy problem."""
    rc, out, err = run_cli(["compare", "gemm_ws_pingpong", "--set", "STAGES=2", "--vs", "STAGES=6",
                            "--set", "M=2048", "--set", "N=2048", "--set", "K=2048", "--json"])  # fmt: skip
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert [r["params"]["STAGES"] for r in rows] == [2, 6]
    assert rows[1]["time_us"] < rows[0]["time_us"]


def test_compare_archs_table_and_csv(run_cli) -> None:
    """Comma-separated archs: one table row per arch; --csv has a header and one line per variant."""
    rc, out, err = run_cli(["compare", "gemm_sync", "--arch", "v100,a100,h100", *SMALL])
    assert rc == 0, err
    assert all(a in out for a in ("v100", "a100", "h100"))
    rc, out, err = run_cli(["compare", "gemm_sync", "--arch", "v100,a100", *SMALL, "--csv"])
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("variant,") and len(lines) == 3


def test_vs_unknown_parameter_is_one_line(run_cli) -> None:
    """A --vs naming an unknown parameter: exit 2 with a one-line error that says --vs."""
    rc, _, err = run_cli(["compare", "gemm_ws_pingpong", "--vs", "STAGEZ=6", *SMALL])
    assert rc == 2
    assert "--vs STAGEZ: unknown parameter" in err and len(err.strip().splitlines()) == 1
