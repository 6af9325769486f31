"""Inputs an independent fuzz corpus (2026-12-06) found accepted, crashing or hanging, each now refused
in one line (or, for a closed stdout, ended quietly)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gpusim
from gpusim.arch import archs_dir
from gpusim.calibrate.measurements import read_measurements
from gpusim.errors import InputError
from gpusim.schedule.load import schedules_dir


def test_a_closed_stdout_ends_quietly_with_status_0() -> None:
    """``gpusim archs --json | head -c0``: typer met the broken pipe first and exited 1."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([sys.executable, "-m", "gpusim", "archs", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the first write
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert err == b""


def test_a_results_file_that_is_not_parquet_is_refused(tmp_path: Path) -> None:
    from gpusim.explore.table import read_results

    garbage = tmp_path / "old.parquet"
    garbage.write_bytes(b"not a parquet file at all")
    with pytest.raises(InputError, match="not a Parquet results file"):
        read_results(garbage)


def test_static_power_at_or_over_the_board_limit_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((archs_dir() / "h100.yaml").read_text())
    data["power"]["static_power_w"] = data["power"]["board_power_limit_w"] + 1
    path = tmp_path / "hot.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=r"static_power_w .* is not below board_power_limit_w"):
        gpusim.load_arch(str(path))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("op: copy, dtype", "op: fly, dtype", "problem.op: fly stream takes op one of copy"),
        (
            "choices: {op: [copy, scale, add, triad, init, read, 3pt, 5pt]}",
            "choices: {op: []}",
            "an empty list",
        ),
    ],
    ids=["default-outside-choices", "empty-choices"],
)
def test_a_files_own_word_values_are_held_to_its_choices(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    text = (schedules_dir() / "stream.yaml").read_text()
    assert old in text
    path = tmp_path / "stream_bad.yaml"
    path.write_text(text.replace(old, new))
    with pytest.raises(InputError, match=expected):
        gpusim.predict(str(path), "h100", costs="datasheet")


def test_a_loop_count_of_zero_cannot_report_impossible_tflops() -> None:
    with pytest.raises(InputError, match=r"does less work than the .* FLOPs its problem counts"):
        gpusim.predict("gemm_ws_pingpong", "h100", M=2048, N=2048, K=2048, KT=0, costs="datasheet")


@pytest.mark.parametrize("kt", [0, 2])
def test_a_short_mainloop_is_refused_even_where_launch_overhead_hides_its_speed(kt: int) -> None:
    """256^3 with KT=0 ran no mainloop and reported 7.6 TFLOPS (launch-bound, so under the peak check)."""
    with pytest.raises(
        InputError, match=rf"issued .* tensor FLOPs of the .* its problem counts \({kt * 25}\.0%\)"
    ):
        gpusim.predict("gemm_ws_pingpong", "h100", M=256, N=256, K=256, KT=kt)
    assert gpusim.predict("gemm_ws_pingpong", "h100", M=256, N=256, K=256, KT=4).time_us > 0


def test_an_mma_of_size_zero_is_refused(tmp_path: Path) -> None:
    text = (schedules_dir() / "gemm_ws_pingpong.yaml").read_text()
    assert "mnk: [BM, BN, BK]" in text
    path = tmp_path / "zero_mma.yaml"
    path.write_text(text.replace("mnk: [BM, BN, BK]", "mnk: [0, BN, BK]"))
    with pytest.raises(InputError, match=r"mnk evaluates to \[0, .*each must be at least 1"):
        gpusim.predict(str(path), "h100", M=1024, N=1024, K=1024, costs="datasheet")


def test_a_measured_value_too_small_for_its_error_is_malformed(tmp_path: Path) -> None:
    path = tmp_path / "tiny.csv"
    path.write_text("source,arch,schedule,dtype,M,N,K,batch,heads,seqlen_q,seqlen_kv,head_dim,causal,metric,"
                    "value,unit,notes,params\n"
                    "t,h200,stream,fp32,,,,,,,,,,time,1e-320,us,,bytes=1048576\n")  # fmt: skip
    (row,) = read_measurements([path])
    assert row.error is not None and "below 1e-09" in row.error


def test_the_replays_freed_stage_record_is_bounded_and_changes_no_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadlock pre-check recorded one freed stage per jumped k-iteration: a K of 10**9 filled
    gigabytes before any event. Past its bound the replay stops jumping (and decides nothing)."""
    import gpusim.sim.replayloops as replayloops

    problem = {"M": 1024, "N": 1024, "K": 8192}
    before = gpusim.predict("gemm_ws_pingpong", "h100", costs="datasheet", **problem).time_us
    monkeypatch.setattr(replayloops, "MAX_FREED_KEYS", 4)
    assert gpusim.predict("gemm_ws_pingpong", "h100", costs="datasheet", **problem).time_us == before


def test_a_guard_that_evaluates_to_a_word_is_refused(tmp_path: Path) -> None:
    text = (schedules_dir() / "stream.yaml").read_text()
    guard = 'if: op == "scale" or op == "add" or op == "triad"'
    assert guard in text
    path = tmp_path / "word_guard.yaml"
    path.write_text(text.replace(guard, "if: op"))
    with pytest.raises(InputError, match="if: evaluates to the word 'copy', not a condition"):
        gpusim.predict(str(path), "h100", costs="datasheet")


def test_an_unknown_reference_arch_is_refused_even_with_an_arch_given(tmp_path: Path) -> None:
    text = (schedules_dir() / "stream.yaml").read_text()
    assert "reference_arch: h100" in text
    path = tmp_path / "ref.yaml"
    path.write_text(text.replace("reference_arch: h100", "reference_arch: h1000"))
    with pytest.raises(InputError, match=r"reference_arch.*unknown arch 'h1000'"):
        gpusim.predict(str(path), "a100", costs="datasheet")


def test_an_empty_arch_option_is_refused(run_cli) -> None:
    rc, _, err = run_cli(["predict", "stream", "--arch", ""])
    assert rc == 2 and err.strip().startswith("gpusim: error: --arch '': an empty arch")


@pytest.mark.parametrize(
    ("section", "field", "value", "expected"),
    [
        ("memory", "hbm_bandwidth_bytes_per_s", float("nan"), "expected a finite number"),
        ("memory", "hbm_bandwidth_bytes_per_s", 0.0, "expected a number >= "),
        ("clocks", "tensor_clock_mhz", 0, "expected a number >= 1"),
        (None, "sm_count", "x", "expected an integer"),
    ],
)
def test_an_arch_instance_changed_without_validation_is_checked_again(
    section: str | None, field: str, value: object, expected: str
) -> None:
    """``model_copy(update=...)`` skips pydantic's checks; the API checks an Arch it is handed."""
    arch = gpusim.load_arch("h100")
    update = (
        {field: value}
        if section is None
        else {section: getattr(arch, section).model_copy(update={field: value})}
    )
    with pytest.raises(InputError, match=rf"field '{(section + '.') if section else ''}{field}': {expected}"):
        gpusim.predict("stream", arch.model_copy(update=update), bytes=4096)


def test_an_arch_file_naming_an_unknown_mechanism_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((archs_dir() / "h100.yaml").read_text())
    data["mechanisms"] = ["warp_drive"]
    path = tmp_path / "h100_bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=r"field 'mechanisms': unknown mechanism 'warp_drive'"):
        gpusim.load_arch(str(path))


def test_an_overlay_with_another_origin_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((archs_dir() / "calibrated" / "h100.yaml").read_text())
    data["calibration"]["origin"] = "guessed"
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        InputError, match=r"calibration.origin: an overlay's costs are 'calibrated', got 'guessed'"
    ):
        gpusim.load_arch("h100", costs=str(path))


def test_assigning_to_a_loaded_arch_is_one_gpusim_error() -> None:
    arch = gpusim.load_arch("h100")
    with pytest.raises(
        InputError, match=r"gpusim.Arch.sm_count: read-only; make a changed copy with \.model_copy"
    ):
        arch.sm_count = 0  # type: ignore[misc]
    assert arch.model_copy(update={"sm_count": 100}).sm_count == 100
