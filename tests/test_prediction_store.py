"""gpusim.calibrate.store: simulation results kept on disk (``calibrate --cache``) are reused only when
nothing the prediction reads changed, survive a run stopped mid-write, and give the same fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusim.arch import load_arch
from gpusim.calibrate import store as store_module
from gpusim.calibrate.fit import _arch_with, calibrate
from gpusim.calibrate.measurements import COLUMNS, read_measurements
from gpusim.calibrate.predictor import PartPrediction, Predictor
from gpusim.calibrate.store import PredictionStore, prediction_key
from gpusim.errors import InputError
from gpusim.sim.power import ClockSensitivity, ClockStart

HEADER = ",".join(COLUMNS)


def _stream_rows(tmp_path: Path) -> list:
    lines = [HEADER]
    for i, mib in enumerate((64, 128, 192)):
        nbytes = mib * 2**20
        us = 2 * nbytes / (0.8 * 3.35e12) * 1e6
        lines.append(f"src{i % 2},h100,stream,fp32,,,,1,,,,,,time,{us:.3f},us,,op=copy;bytes={nbytes}")
    path = tmp_path / "stream.csv"
    path.write_text("\n".join(lines) + "\n")
    return read_measurements([path])


def test_a_record_round_trips(tmp_path: Path) -> None:
    part = PartPrediction(
        "auto:gemm",
        123.456789012345,
        ("gemm_ws_pingpong", (("BM", 128), ("BN", 256))),
        1755.25,
        ClockSensitivity(2.5, -0.875),
    )
    first = PredictionStore(tmp_path)
    first.put("k1", part)
    first.put("k2", "attn_fa3_fwd: needs more than the work limit")
    again = PredictionStore(tmp_path)
    assert again.get("k1") == part
    assert again.get("k2") == "attn_fa3_fwd: needs more than the work limit"
    assert again.get("k3") is None


def test_a_cut_short_or_garbled_record_is_ignored(tmp_path: Path) -> None:
    part = PartPrediction("stream", 10.0)
    PredictionStore(tmp_path).put("good", part)
    stray = tmp_path / "sims-other-1.jsonl"
    stray.write_text(
        'not json\n{"format": 1, "key": "bad", "value": {"time_us": 1}}\n{"format": 1, "key": "cut'
    )
    store = PredictionStore(tmp_path)
    assert store.get("good") == part
    assert store.get("bad") is None and store.get("cut") is None
    # the line finished later by its writer is read then
    with stray.open("a") as f:
        f.write('", "value": {"skip": "late"}}\n')
    assert store.get("cut") == "late"


def test_the_key_covers_arch_problem_start_limit_and_code(monkeypatch: pytest.MonkeyPatch) -> None:
    arch = load_arch("h100")
    problem = {"M": 1024, "N": 1024, "K": 1024}
    key = prediction_key("gemm_ws_pingpong", arch, problem, None, None, 1000)
    assert key == prediction_key("gemm_ws_pingpong", arch, dict(problem), None, None, 1000)
    others = [
        prediction_key(
            "gemm_ws_pingpong", _arch_with(arch, {"hbm_bandwidth_fraction": 0.9}), problem, None, None, 1000
        ),
        prediction_key("gemm_ws_pingpong", arch, {**problem, "K": 2048}, None, None, 1000),
        prediction_key("gemm_ws_pingpong", arch, problem, None, ClockStart(1600.0, 2.0), 1000),
        prediction_key("gemm_ws_pingpong", arch, problem, None, None, 2000),
        prediction_key("gemm_ws_cooperative", arch, problem, None, None, 1000),
    ]
    assert key not in others and len(set(others)) == len(others)
    # the overlay's provenance (dates, rows) does not change a prediction
    noted = _arch_with(arch, {"provenance": {"date": "2026-01-01"}})
    assert prediction_key("gemm_ws_pingpong", noted, problem, None, None, 1000) == prediction_key(
        "gemm_ws_pingpong", _arch_with(arch, {}), problem, None, None, 1000
    )
    monkeypatch.setattr(store_module, "code_digest", lambda: "another version of gpusim")
    assert prediction_key("gemm_ws_pingpong", arch, problem, None, None, 1000) != key


def test_a_stored_result_is_what_the_simulation_gives(tmp_path: Path) -> None:
    arch = load_arch("h100")
    problem = {"op": "copy", "bytes": 2**26}
    fresh = Predictor(store=PredictionStore(tmp_path)).part("stream", arch, problem)
    reader = Predictor(store=PredictionStore(tmp_path))
    assert reader.part("stream", arch, problem) == fresh
    assert reader.simulations == 0 and reader.store is not None and reader.store.hits == 1


def test_a_cached_fit_repeats_without_simulating_and_fits_the_same(tmp_path: Path) -> None:
    rows = _stream_rows(tmp_path)
    base = load_arch("h100")
    plain = calibrate(rows, base, ["hbm_bandwidth_fraction"])
    first = calibrate(rows, base, ["hbm_bandwidth_fraction"], jobs=2, cache_dir=str(tmp_path / "cache"))
    second = calibrate(rows, base, ["hbm_bandwidth_fraction"], cache_dir=str(tmp_path / "cache"))
    assert first["simulations"] > 0 and second["simulations"] == 0
    assert first["reused"] == 0 and second["reused"] > 0
    strip = [{k: v for k, v in r["calibration"].items() if k != "provenance"} for r in (plain, first, second)]
    assert strip[0] == strip[1] == strip[2]
    assert (
        first["calibration"]["provenance"]["error_after"]
        == second["calibration"]["provenance"]["error_after"]
    )
    files = list((tmp_path / "cache").glob("sims-*.jsonl"))
    assert files and all(
        json.loads(line)["format"] == 1 for f in files for line in f.read_text().splitlines()
    )


def test_a_cache_path_that_is_a_file_is_refused(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "taken"
    path.write_text("x")
    rows = tmp_path / "rows.csv"
    rows.write_text(HEADER + "\n")
    rc, out, err = run_cli(["calibrate", str(rows), "--arch", "h100", "--dry-run", "--cache", str(path)])
    assert rc == 2 and "--cache" in err and "not a directory" in err and "Traceback" not in err + out


def test_rows_over_the_fit_event_cap_are_left_out_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text(
        HEADER
        + "\nsrc0,h100,stream,fp32,,,,1,,,,,,time,90,us,,op=copy;bytes=134217728"
        + "\nsrc1,h100,stream,fp32,,,,1,,,,,,time,180,us,,op=copy;bytes=268435456"
        + "\nsrc1,h100,gemm_ws_pingpong,bf16,1024,1024,1024,,,,,,,time,12,us,,\n"
    )
    rows = read_measurements([path])
    base = load_arch("h100")
    predictor = Predictor()
    events = [predictor.row_parts(m, base)[0].events for m in rows]
    assert all(e > 0 for e in events) and len(set(events)) > 1
    cap = sorted(events)[1]
    res = calibrate(rows, base, ["hbm_bandwidth_fraction"], max_fit_events=cap)
    left = {i for i, why in res["skipped"].items() if why.startswith("left out of the fit")}
    assert left == {m.index for m, e in zip(rows, events, strict=True) if e > cap}
    assert res["calibration"]["provenance"]["rows_used"] == len(rows) - len(left)
    assert all(f"over --max-fit-events {cap:,}" in res["skipped"][i] for i in left)
    with pytest.raises(InputError, match="every usable row of h100 simulates more than --max-fit-events 1 "):
        calibrate(rows, base, ["hbm_bandwidth_fraction"], max_fit_events=1)


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path / "cache")
    store._own.mkdir()  # a directory where its file should be: every append fails
    with pytest.raises(InputError, match=r"--cache .*cache: cannot write sims-.*\.jsonl \("):
        store.put("k", "reason")


def test_the_driver_files_left_out_of_the_code_digest_exist() -> None:
    """A renamed driver file would otherwise drop out of the list silently (and a file that reaches a
    simulation must never be in it: none of these is imported by gpusim.sim or gpusim.schedule)."""
    root = Path(store_module.__file__).resolve().parent.parent
    assert all((root / name).is_file() for name in store_module.DRIVER_FILES)
    for module in (root / "sim").rglob("*.py"):
        text = module.read_text()
        assert "gpusim.calibrate.fit" not in text and "gpusim.cli" not in text


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--max-fit-events", "-1", "--max-fit-events -1: expected 0"),
        ("--jacobian", "newton", "--jacobian newton: expected broyden or fresh"),
        ("--max-iterations", "0", "--max-iterations 0: expected 1 or more"),
    ],
)
def test_bad_fit_options_are_one_line(tmp_path: Path, run_cli, option: str, value: str, says: str) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(HEADER + "\n")
    rc, out, err = run_cli(["calibrate", str(rows), "--arch", "h100", "--dry-run", option, value])
    assert rc == 2 and says in err and "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1
