"""gpusim calibrate: determinism, bounds, cross-validation, overlays, intervals; gpusim measure without a GPU."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpusim.arch import load_arch
from gpusim.calibrate.fit import calibrate
from gpusim.calibrate.intervals import prediction_interval
from gpusim.calibrate.measurements import COLUMNS, read_measurements
from gpusim.cli import app

HEADER = ",".join(COLUMNS)


def _stream_rows(tmp_path: Path) -> Path:
    """Synthetic copy-kernel rows on h100 at 85% of datasheet HBM bandwidth, two sources."""
    lines = [HEADER]
    for i, mib in enumerate((64, 96, 128, 160)):
        nbytes = mib * 2**20
        us = 2 * nbytes / (0.85 * 3.35e12) * 1e6
        lines.append(f"src{i % 2},h100,stream,fp32,,,,1,,,,,,time,{us:.3f},us,,op=copy;bytes={nbytes}")
    path = tmp_path / "stream.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_fits_hbm_fraction_deterministically(tmp_path: Path) -> None:
    rows = read_measurements([_stream_rows(tmp_path)])
    base = load_arch("h100")
    a = calibrate(rows, base, ["hbm_bandwidth_fraction"])
    b = calibrate(rows, base, ["hbm_bandwidth_fraction"])
    assert a["calibration"] == {**b["calibration"], "provenance": {**b["calibration"]["provenance"]}}
    frac = a["calibration"]["hbm_bandwidth_fraction"]
    assert 0.78 < frac < 0.92
    prov = a["calibration"]["provenance"]
    assert prov["rows_used"] == 4
    assert prov["error_after"]["all"]["median_abs_pct"] < prov["error_before"]["all"]["median_abs_pct"]
    cv = prov["cross_validation"]
    assert cv["method"].startswith("leave-one-source-out")
    assert cv["all"]["n"] == 4
    assert "stream" in prov["residuals"]


def test_calibrate_in_processes_fits_the_same(tmp_path: Path) -> None:
    """``jobs=2`` spreads the row predictions over worker processes; the fit does not change."""
    rows = read_measurements([_stream_rows(tmp_path)])
    base = load_arch("h100")
    serial = calibrate(rows, base, ["hbm_bandwidth_fraction"])
    parallel = calibrate(rows, base, ["hbm_bandwidth_fraction"], jobs=2)
    assert parallel["calibration"] == serial["calibration"]
    assert parallel["simulations"] >= serial["simulations"]  # workers do not share the serial run's cache


def test_parameter_at_bound_is_reported(tmp_path: Path) -> None:
    lines = [HEADER]
    for mib in (64, 128):
        nbytes = mib * 2**20
        us = 2 * nbytes / (0.2 * 3.35e12) * 1e6  # 20% of peak: below the 0.5 lower bound
        lines.append(f"s,h100,stream,fp32,,,,1,,,,,,time,{us:.3f},us,,op=copy;bytes={nbytes}")
    path = tmp_path / "slow.csv"
    path.write_text("\n".join(lines) + "\n")
    res = calibrate(read_measurements([path]), load_arch("h100"), ["hbm_bandwidth_fraction"])
    at = res["calibration"]["provenance"]["at_bound"]
    assert at and "hbm_bandwidth_fraction" in at[0] and "lower bound" in at[0]


def test_calibrate_cli_writes_overlay_and_interval(tmp_path: Path) -> None:
    out = tmp_path / "h100.yaml"
    result = CliRunner().invoke(app, ["calibrate", str(_stream_rows(tmp_path)), "--arch", "h100",
                                      "--fit", "hbm_bandwidth_fraction", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "CV" in result.output and "hbm_bandwidth_fraction" in result.output
    data = yaml.safe_load(out.read_text())
    assert data["arch"] == "h100" and data["calibration"]["origin"] == "calibrated"
    assert data["calibration"]["provenance"]["residuals"]["stream"]["n"] == 4


def test_unknown_fit_name_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["calibrate", str(_stream_rows(tmp_path)), "--arch", "h100", "--fit", "bogus"]
    )
    assert result.exit_code != 0
    assert "bogus" in str(result.exception)


def test_interval_says_extrapolation_without_rows() -> None:
    iv = prediction_interval(load_arch("b100"), "attn_fa4_fwd", 100.0)
    assert iv.extrapolation is True
    assert "extrapolation" in iv.text and iv.contains(100.0)


def test_measure_without_gpu_exits_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "measured.csv"
    proc = subprocess.run([sys.executable, "-m", "gpusim", "measure", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "GPU" in proc.stderr or "PyTorch" in proc.stderr
    assert not out.exists()


def test_a_parameter_the_last_iteration_still_moved_is_reported() -> None:
    """A fit that ran out of iterations says which parameters were still moving, and which moved by the
    whole trust region (their optimum lies further out; no bound stopped them)."""
    import math

    import numpy as np

    from gpusim.calibrate.fit import TRUST_LOG_STEP, _still_moving
    from gpusim.calibrate.params import FitParam

    params = [FitParam("tensor_cuda_overlap", 0.05, 1.0), FitParam("energy_scale", 0.4, 1.5),
              FitParam("hbm_bandwidth_fraction", 0.5, 1.0)]  # fmt: skip
    x = np.log([0.4066, 1.0, 0.74])
    notes = _still_moving(params, x, np.array([-TRUST_LOG_STEP, 0.005, 0.1]), 3)
    assert len(notes) == 2
    assert notes[0].startswith("tensor_cuda_overlap=0.4066 still moving down") and "not converged" in notes[0]
    assert (
        notes[1].startswith("hbm_bandwidth_fraction=0.74 still moving up") and "not converged" not in notes[1]
    )
    assert f"x{math.exp(0.1):.3g}" in notes[1]
    assert "in the last of 3 iterations" in notes[0]
    assert _still_moving(params, x, np.zeros(3), 3) == []


def test_calibrate_names_the_rows_of_its_arch_it_cannot_use(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("source,arch,schedule,dtype,M,N,K,batch,heads,seqlen_q,seqlen_kv,head_dim,causal,metric,value,"
                    "unit,notes,params\n"
                    "t,h100,stream,fp32,,,,,,,,,,time,nan,us,,op=copy;bytes=4194304\n"
                    "t,h100,micro:tensor_clock,bf16,,,,,,,,,,sm_clock_mhz,-1500,MHz,,variant=x\n"
                    "t,h100,gemm_ws_pingpong,bf16,512,512,512,,,,,,,time,20,us,,\n")  # fmt: skip
    rc, out, err = run_cli(["calibrate", path, "--arch", "h100", "--dry-run", "--json", "--max-rows", "3"])
    assert rc == 0, err
    result = json.loads(out)
    assert "is not a positive finite number" in result["skipped"]["0"]
    assert list(result["micro"]["malformed"]) == ["1"]


def test_broyden_fit_matches_the_fresh_one_with_fewer_simulations(tmp_path: Path) -> None:
    """The secant update replaces the per-iteration perturbations; every point is still simulated, so on
    rows whose time is a smooth function of the parameters both reach the same fit."""
    path = tmp_path / "rows.csv"
    lines = [HEADER]
    for i, mib in enumerate((1, 4, 64, 160)):
        nbytes = mib * 2**20
        us = 2 * nbytes / (0.8 * 3.35e12) * 1e6 + 6.0  # 80% of HBM and 6 us per launch
        lines.append(f"src{i % 2},h100,stream,fp32,,,,1,,,,,,time,{us:.3f},us,,op=copy;bytes={nbytes}")
    path.write_text("\n".join(lines) + "\n")
    rows = read_measurements([path])
    names = ["hbm_bandwidth_fraction", "launch_overhead_ns"]
    fresh = calibrate(rows, load_arch("h100"), names, jacobian="fresh")
    broyden = calibrate(rows, load_arch("h100"), names)
    assert broyden["calibration"]["provenance"]["jacobian"] == "broyden"
    assert broyden["simulations"] < fresh["simulations"]
    for name in names:
        f, b = fresh["calibration"][name], broyden["calibration"][name]
        assert abs(b - f) <= 0.01 * max(abs(f), 1.0), (name, f, b)


def test_the_secant_update_follows_the_step_and_keeps_the_rest() -> None:
    """Along the step the new slope reproduces the simulated change; across it nothing moves."""
    import numpy as np

    from gpusim.calibrate.fit import FitRow, _secant_update

    row = FitRow(
        m=None, family="gemm", measured_us=1.0, base_us=1.0, pins=(), elasticity=np.array([0.5, -1.0, 0.2])
    )  # type: ignore[arg-type]
    step = np.array([0.1, 0.0, 0.3])  # parameter 1 is analytic (the energy scale): its part is taken out
    row.m = type("M", (), {"index": 7})()  # type: ignore[assignment]
    before, now = {7: 100.0}, {7: 100.0 * math.exp(0.09)}
    _secant_update([row], [0, 2], step, before, now, {7})
    s = step[[0, 2]]
    assert float(row.elasticity[[0, 2]] @ s) == pytest.approx(0.09 - (-1.0 * 0.0))
    assert row.elasticity[1] == -1.0
    across = np.array([0.3, -0.1])  # orthogonal to the step in the simulated parameters
    assert float((row.elasticity[[0, 2]] - np.array([0.5, 0.2])) @ across) == pytest.approx(0.0, abs=1e-12)
