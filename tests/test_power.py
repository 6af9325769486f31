"""The power model (gpusim/sim/power.py) and its switch (gpusim/mechanisms.py, ``--model +power``)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from gpusim.api import load_arch, predict
from gpusim.calibrate.fit import default_fit_names
from gpusim.cli import app
from gpusim.errors import InputError
from gpusim.mechanisms import DEFAULT_ON, model_label, parse_model, with_model
from gpusim.sim.power import Activity, average_power_w, sustained_clock

GOLDEN = Path(__file__).parent / "golden" / "power"
GEMM = {"M": 4096, "N": 4096, "K": 1024}


def _with_limit(arch_id: str, watts: float):
    arch = load_arch(arch_id, costs="datasheet")
    assert arch.power is not None
    return arch.model_copy(update={"power": arch.power.model_copy(update={"board_power_limit_w": watts})})


def test_every_builtin_arch_has_a_sourced_power_block() -> None:
    from gpusim.api import archs

    for arch_id in archs():
        arch = load_arch(arch_id, costs="datasheet")
        assert arch.power is not None, arch_id
        assert arch.power.static_power_w < arch.power.board_power_limit_w, arch_id
        assert not [f for f in arch.uncovered_fields() if f.startswith("power.")], arch_id


def test_default_is_off_and_leaves_the_prediction_alone() -> None:
    plain = predict("gemm_ws_pingpong", "h100", costs="datasheet", attribute=False, **GEMM)
    off = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="-power", attribute=False, **GEMM)
    assert "power" not in DEFAULT_ON
    assert plain.model == sorted(DEFAULT_ON) and plain.power_w is None
    assert plain.clock_mhz == load_arch("h100", costs="datasheet").clocks.tensor_clock_mhz
    assert off.time_us == plain.time_us and off.clock_mhz == plain.clock_mhz


def test_power_fits_under_the_limit_and_is_recorded() -> None:
    p = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="+power", attribute=False, **GEMM)
    limit = load_arch("h100").power.board_power_limit_w  # type: ignore[union-attr]
    assert p.model == sorted({"power", *DEFAULT_ON})
    assert p.power_w is not None and p.power_w <= limit * 1.005
    assert p.clock_mhz <= load_arch("h100").clocks.tensor_clock_mhz
    assert p.to_dict()["model"] == sorted({"power", *DEFAULT_ON}) and p.to_dict()["clock_mhz"] == p.clock_mhz


def test_more_power_never_a_lower_clock() -> None:
    clocks = []
    for watts in (300.0, 450.0, 600.0, 800.0, 2000.0):
        arch = _with_limit("h100", watts)
        p = predict("gemm_ws_pingpong", arch, costs="datasheet", model="+power", attribute=False, **GEMM)
        assert p.power_w is not None and p.power_w <= watts * 1.005
        clocks.append(p.clock_mhz)
    assert all(b >= a * (1 - 0.005) for a, b in itertools.pairwise(clocks)), clocks
    assert clocks[-1] == load_arch("h100").clocks.tensor_clock_mhz  # 2 kW: never limited
    assert clocks[0] < clocks[-1]


def test_zero_work_runs_at_the_max_clock() -> None:
    arch = load_arch("h100", costs="datasheet")
    run = SimpleNamespace(sms=[], kernel_ns=1000.0, sched=SimpleNamespace(metrics_dtype="bf16", roles={}),
                          net=SimpleNamespace(l2_read_bytes=0.0, l2_write_bytes=0.0, hbm_read_bytes=0.0,
                                              hbm_write_bytes=0.0))  # fmt: skip
    seen: list[float] = []

    def run_at(f: float):
        seen.append(f)
        return run

    sol = sustained_clock(arch, run.sched, run_at)  # type: ignore[arg-type]
    assert sol.clock_mhz == arch.clocks.boost_clock_mhz and not sol.limited and seen == [sol.clock_mhz]
    assert sol.power_w == arch.power.static_power_w  # type: ignore[union-attr]


def test_power_grows_with_clock_and_work() -> None:
    arch = load_arch("h100", costs="datasheet")
    act = Activity(1e12, "bf16", 1e9, 1e8, 1e9, 1e9, 1e9, 1e6)
    more = Activity(2e12, "bf16", 1e9, 1e8, 1e9, 1e9, 1e9, 1e6)
    assert average_power_w(arch, act, 1500) < average_power_w(arch, act, 1800)
    assert average_power_w(arch, act, 1500) < average_power_w(arch, more, 1500)
    fp8 = Activity(1e12, "fp8_e4m3", 1e9, 1e8, 1e9, 1e9, 1e9, 1e6)
    assert average_power_w(arch, fp8, 1500) < average_power_w(arch, act, 1500)  # half the energy per FLOP


def test_deterministic_and_exact_under_the_fast_forward() -> None:
    a = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="+power", attribute=False, **GEMM)
    b = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="+power", attribute=False, **GEMM)
    assert (a.time_us, a.clock_mhz, a.power_w) == (b.time_us, b.clock_mhz, b.power_w)
    exact = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="+power", attribute=False, exact=True,
                    **GEMM)  # fmt: skip
    assert exact.clock_mhz == pytest.approx(a.clock_mhz, rel=1e-6)
    assert exact.time_us == pytest.approx(a.time_us, rel=1e-6)


def test_parse_model() -> None:
    assert parse_model("+power") == {"power", *DEFAULT_ON}
    assert parse_model("power,-shared_tensor") == {"power", *DEFAULT_ON} - {"shared_tensor"}
    assert parse_model("-shared_tensor") == DEFAULT_ON - {"shared_tensor"}
    assert parse_model("default") == DEFAULT_ON
    assert model_label(frozenset({"power", *DEFAULT_ON})) == "+power"
    assert model_label(DEFAULT_ON - {"shared_tensor"}) == "-shared_tensor"
    with pytest.raises(InputError, match="unknown mechanism 'bogus'"):
        parse_model("+bogus")
    for text, message in (("", "no mechanism named"), (",,,", "no mechanism named"),
                          ("+power,-power", "switched twice")):  # fmt: skip
        with pytest.raises(InputError, match=message):
            parse_model(text)
    arch = load_arch("h100").model_copy(update={"power": None})
    with pytest.raises(InputError, match="no power block"):
        with_model(arch, "+power")


def test_calibration_fits_energy_not_the_clock_with_power_on() -> None:
    assert "sustained_clock_mhz" in default_fit_names({"gemm"}, False)
    with_power = default_fit_names({"gemm"}, False, power=True)
    assert "energy_scale" in with_power and "sustained_clock_mhz" not in with_power


def test_cli_model_switch(run_cli) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["predict", "gemm_ws_pingpong", "--datasheet", "--model", "+power", "--json",
                              *[f"-s{k}={v}" for k, v in GEMM.items()]])  # fmt: skip
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert (
        doc["model"] == sorted({"power", *DEFAULT_ON})
        and doc["power_w"] is not None
        and doc["clock_mhz"] < 1830
    )
    rc, _, err = run_cli(["predict", "gemm_ws_pingpong", "--model", "+bogus"])
    assert rc == 2 and "unknown mechanism" in err and "Traceback" not in err
    assert "--model" in runner.invoke(app, ["predict", "--help"]).output


@pytest.mark.parametrize(("schedule", "arch", "problem"), [
    ("gemm_ws_pingpong", "h100", GEMM),
    ("gemm_ws_pingpong", "h100_pcie", GEMM),
    ("stream", "h100", {"bytes": 64 * 2**20}),
])  # fmt: skip
def test_power_golden(schedule: str, arch: str, problem: dict) -> None:
    """The +power prediction matches its checked-in summary (regenerate: GPUSIM_UPDATE_GOLDEN=1)."""
    p = predict(schedule, arch, costs="datasheet", model="+power", attribute=False, **problem)
    got = {"clock_mhz": p.clock_mhz, "power_w": p.power_w, "time_us": p.time_us,
           "limited": p.sim["power_limited"]}  # fmt: skip
    path = GOLDEN / f"{schedule}_{arch}.json"
    if os.environ.get("GPUSIM_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert got["limited"] == want["limited"]
    for key in ("clock_mhz", "power_w", "time_us"):
        assert got[key] == pytest.approx(want[key], rel=1e-9), key


def _power_limited_gemm():
    from gpusim.api import _resolve_schedule

    arch = with_model(load_arch("h100", costs="datasheet"), "+power")
    return arch, _resolve_schedule("gemm_ws_pingpong", arch, dict(GEMM))


def test_clock_sensitivity_of_a_compute_bound_gemm() -> None:
    """A power-limited, compute-bound GEMM: time ~ 1/f, dynamic power rising steeply with f."""
    square = {"M": 4096, "N": 4096, "K": 4096}
    p = predict("gemm_ws_pingpong", "h100", costs="datasheet", model="+power", attribute=False, **square)
    assert p.sim["power_limited"]
    sens = p.sim["power_sensitivity"]
    assert -1.05 < sens["time_slope"] < -0.7
    assert 1.5 < sens["power_slope"] < 4.0
    unlimited = predict("gemm_ws_pingpong", "h100", costs="datasheet", attribute=False, **square)
    assert "power_sensitivity" not in unlimited.sim


@pytest.mark.parametrize("offset", [0.97, 1.0, 1.03])
def test_a_warm_start_agrees_with_the_cold_fixed_point(offset: float) -> None:
    """Started near the answer (a calibration's nearby point), the fixed point lands on the same clock
    within its tolerances, in no more simulations (one when started at the answer)."""
    from gpusim.sim.power import POWER_TOLERANCE, ClockStart
    from gpusim.summarize import predict_resolved

    arch, sched = _power_limited_gemm()
    cold = predict_resolved(sched, arch, attribute=False)
    sens = cold.sim["power_sensitivity"]
    warm = predict_resolved(
        sched, arch, attribute=False, power_start=ClockStart(cold.clock_mhz * offset, sens["power_slope"])
    )
    limit = arch.power.board_power_limit_w  # type: ignore[union-attr]
    assert warm.power_w <= limit * (1 + POWER_TOLERANCE)
    assert warm.clock_mhz == pytest.approx(cold.clock_mhz, rel=0.005)
    assert warm.time_us == pytest.approx(cold.time_us, rel=0.005)
    assert warm.sim["power_simulations"] <= cold.sim["power_simulations"]
    if offset == 1.0:  # started at the answer: one simulation confirms it
        assert warm.sim["power_simulations"] == 1 and warm.time_us == cold.time_us


def test_energy_elasticity_matches_a_finite_difference() -> None:
    """The calibration's energy-scale elasticity, from the clock sensitivity alone, against two cold
    predictions 10% apart in energy scale."""
    import math

    from gpusim.calibrate.fit import FitRow, energy_elasticity
    from gpusim.calibrate.predictor import _part_prediction
    from gpusim.costs import with_calibration

    arch, _ = _power_limited_gemm()

    def at_scale(scale: float):
        cal = {**arch.calibration.model_dump(), "energy_scale": scale}
        return predict(
            "gemm_ws_pingpong", with_calibration(arch, cal), costs="datasheet", attribute=False, **GEMM
        )

    base, lower = at_scale(1.0), at_scale(0.9)
    launch_us = arch.calibration.launch_overhead_ns / 1000.0
    row = FitRow(None, "gemm", 1.0, base.time_us, (), None, [_part_prediction("g", base, None)])  # type: ignore[arg-type]
    analytic = energy_elasticity(row, launch_us, base.time_us - launch_us)
    finite = math.log((lower.time_us - launch_us) / (base.time_us - launch_us)) / math.log(0.9)
    assert analytic > 0.1  # more energy per op: a lower clock, a longer kernel
    assert analytic == pytest.approx(finite, rel=0.15, abs=0.02)
