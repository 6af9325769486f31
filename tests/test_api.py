"""The public API: one path from (schedule, arch, costs, problem) to a Prediction, whatever the door."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import gpusim
from gpusim.api import load_schedule, schedules
from gpusim.calibrate.measurements import COLUMNS
from gpusim.calibrate.validate import run_validate
from gpusim.errors import DeadlockError, InputError, LimitExceeded, ScheduleRefused, UnknownNameError

PROBLEM = {"M": 1024, "N": 1024, "K": 512}
SETS = [f"--set={k}={v}" for k, v in PROBLEM.items()]


def test_public_names() -> None:
    """The documented names are exported and the built-in lists are there."""
    for name in ("predict", "compare", "load_arch", "load_schedule", "schedules", "archs", "Prediction"):
        assert name in gpusim.__all__ and getattr(gpusim, name) is not None
    assert "gemm_ws_pingpong" in gpusim.schedules() and "h100" in gpusim.archs()


def test_import_is_light() -> None:
    """`import gpusim` loads neither the simulator nor the plotting, table or CLI libraries."""
    code = ("import sys, gpusim; heavy = [m for m in ('matplotlib', 'scipy', 'rich', 'typer', 'simpy', 'pydantic') "
            "if m in sys.modules]; print(','.join(heavy))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_same_time_through_every_door(run_cli, tmp_path: Path) -> None:
    """One problem through the API, predict, compare, roofline and validate: the same time, to the digit."""
    api_us = gpusim.predict("gemm_ws_pingpong", "h100", **PROBLEM).time_us
    rc, out, err = run_cli(["predict", "gemm_ws_pingpong", "--arch", "h100", *SETS, "--json"])
    assert rc == 0, err
    assert json.loads(out)["time_us"] == api_us
    rc, out, err = run_cli(["compare", "gemm_ws_pingpong", "--arch", "h100", *SETS, "--json"])
    assert rc == 0, err
    assert json.loads(out)["rows"][0]["time_us"] == api_us
    rc, out, err = run_cli(["roofline", "gemm_ws_pingpong", "--arch", "h100", *SETS, "--json"])
    assert rc == 0, err
    assert json.loads(out)["points"][0]["time_us"] == api_us
    csv_path = tmp_path / "row.csv"
    csv_path.write_text(",".join(COLUMNS) + "\n" + "test,h100,gemm_ws_pingpong,bf16,1024,1024,512,,,,,,,"
                        "time,100,us,,\n")  # fmt: skip
    results, summary = run_validate([csv_path], jobs=1)
    assert summary["costs"] == "calibrated" and results[0].skipped is None
    assert results[0].predicted_time_us == api_us


def test_costs_are_said_and_change_the_answer() -> None:
    """Calibrated (default) and datasheet costs differ and each prediction says which, with the file."""
    cal = gpusim.predict("gemm_ws_pingpong", "h100", **PROBLEM)
    sheet = gpusim.predict("gemm_ws_pingpong", "h100", costs="datasheet", **PROBLEM)
    assert cal.costs == "calibrated" and cal.overlay and cal.overlay.endswith("h100.yaml")
    assert sheet.costs == "datasheet" and sheet.overlay is None
    assert cal.time_us != sheet.time_us
    loaded = gpusim.load_arch("h100")
    assert gpusim.predict("gemm_ws_pingpong", loaded, **PROBLEM).time_us == cal.time_us


def test_schedule_as_name_path_or_object() -> None:
    """A name, a path and a loaded spec give the same prediction."""
    spec = load_schedule("gemm_ws_pingpong")
    by_name = gpusim.predict("gemm_ws_pingpong", "h100", costs="datasheet", attribute=False, **PROBLEM)
    by_spec = gpusim.predict(spec, "h100", costs="datasheet", attribute=False, **PROBLEM)
    path = Path(gpusim.__file__).parent.parent / "schedules" / "gemm_ws_pingpong.yaml"
    if not path.is_file():
        path = Path(gpusim.__file__).parent / "_data" / "schedules" / "gemm_ws_pingpong.yaml"
    by_path = gpusim.predict(str(path), "h100", costs="datasheet", attribute=False, **PROBLEM)
    assert by_name.time_us == by_spec.time_us == by_path.time_us


def test_to_dict_is_strict_json_and_frozen() -> None:
    """to_dict() is strict JSON with problem, params, interval, costs and overlay; the result is frozen."""
    p = gpusim.predict("gemm_ws_pingpong", "h100", **PROBLEM)
    doc = json.loads(json.dumps(p.to_dict(), allow_nan=False))
    assert doc["problem"]["M"] == 1024 and doc["params"]["STAGES"] == 6
    assert doc["interval"]["low_us"] <= doc["time_us"] <= doc["interval"]["high_us"]
    assert doc["costs"] == "calibrated" and doc["overlay"] and "timeline" not in doc
    with pytest.raises(AttributeError):
        p.time_us = 1.0  # type: ignore[misc]


def test_auto_gemm_without_a_problem_predicts_the_documented_default() -> None:
    """auto:gemm with no problem runs 8192³ bf16 and says what it chose."""
    p = gpusim.predict("auto:gemm", "h100", attribute=False)
    assert p.problem == {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16"}
    assert p.schedule == "auto:gemm" and p.choice and p.choice["schedule"].startswith("gemm_")


@pytest.mark.parametrize("name", schedules())
def test_interval_contains_the_point(name: str) -> None:
    """For every schedule on its reference arch with calibrated costs, the 80% interval holds the point."""
    from test_golden import PROBLEMS

    p = gpusim.predict(name, attribute=False, **PROBLEMS[name])
    assert p.interval.contains(p.time_us), p.interval
    if p.interval.low_us is not None:
        assert p.interval.low_us <= p.time_us <= p.interval.high_us


def test_errors_pickle_and_carry_exit_codes() -> None:
    """Every error class round-trips through pickle (process pools) and has its exit status."""
    errors = [InputError("bad"), ScheduleRefused("no"), DeadlockError("stuck"), LimitExceeded("long"),
              UnknownNameError("arch", "h1000", ["h100"], where="--arch")]  # fmt: skip
    for exc in errors:
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc) and str(again) == str(exc)
    assert [e.exit_code for e in errors] == [2, 3, 4, 5, 2]


def test_cli_exit_codes_and_conventions(run_cli) -> None:
    """--version, -h (with the exit codes), exit 3 for a refusal, 2 for bad input."""
    rc, out, _ = run_cli(["--version"])
    assert rc == 0 and out.startswith("gpusim ")
    rc, out, _ = run_cli(["-h"])
    assert rc == 0 and "3 refused" in out
    rc, _, err = run_cli(["predict", "gemm_ws_pingpong", "--arch", "b200", *SETS])
    assert rc == 3 and "wgmma" in err and len(err.strip().splitlines()) == 1
    rc, _, err = run_cli(["predict", "gemm_ws_pingpong", "--arch", "h1000"])
    assert rc == 2 and "h100" in err


def test_output_fits_100_columns(run_cli) -> None:
    """At COLUMNS=100 no line of predict, compare or schedules output is wider (in bytes, too)."""
    import os

    for args in (["predict", "gemm_ws_pingpong", *SETS], ["compare", "gemm_ws_pingpong", "--arch", "h100,b200", *SETS],
                 ["schedules"]):  # fmt: skip
        env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, "-m", "gpusim", *args], capture_output=True, env=env, check=True
        )
        widest = max(len(line) for line in proc.stdout.splitlines())
        assert widest <= 100, (args, widest)
