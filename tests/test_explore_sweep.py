"""Sweeps: refusals with reasons, identical rows from every executor, streaming, resume, killed workers."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from gpusim.explore.executors import InlineExecutor, LocalExecutor
from gpusim.explore.grid import enumerate_points, parse_axes
from gpusim.explore.journal import journal_path, read_journal
from gpusim.explore.sweep import run_sweep
from gpusim.explore.table import read_results

SMALL = {"M": 512, "N": 512, "K": 512}


def small_points() -> list[Any]:
    """8 points of a small ping-pong GEMM; 12 stages do not fit in shared memory."""
    axes = parse_axes(["BN=64,128", "STAGES=2,4,6,12"])
    return enumerate_points("gemm_ws_pingpong", ["h100"], axes, SMALL)


@pytest.fixture(scope="module")
def inline_rows() -> list[dict[str, Any]]:
    return run_sweep(small_points(), "calibrated", InlineExecutor()).rows


def test_refused_points_carry_the_reason(inline_rows: list[dict[str, Any]]) -> None:
    refused = [r for r in inline_rows if r["status"] == "refused"]
    assert len(refused) == 2, "12 stages must not fit in 227 KiB"
    assert all("shared memory" in r["reason"] and r["time_us"] is None for r in refused)
    ok = [r for r in inline_rows if r["status"] == "ok"]
    assert ok and all(r["time_us"] > 0 and r["reason"] is None for r in ok)
    assert [r["point"] for r in inline_rows] == list(range(8))


def test_local_processes_give_the_inline_rows(inline_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    out = tmp_path / "local.parquet"
    result = run_sweep(small_points(), "calibrated", LocalExecutor(jobs=2), out=out)
    assert result.rows == inline_rows
    assert not journal_path(out).exists()
    assert [{k: v for k, v in r.items() if k != "rank"} for r in read_results(out)] == inline_rows


def test_killed_local_worker_loses_nothing(inline_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    executor = LocalExecutor(jobs=2)
    killed: list[int] = []

    def kill_one(row: dict[str, Any], status: Any) -> None:
        pids = executor.worker_pids()
        if not killed and pids and row["status"] == "ok":
            killed.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

    result = run_sweep(small_points(), "calibrated", executor, on_row=kill_one)
    assert killed
    assert result.rows == inline_rows


def test_resume_predicts_only_the_missing_points(inline_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    out = tmp_path / "resumed.csv"

    class Interrupt(Exception):
        pass

    def stop_after_three(row: dict[str, Any], status: Any) -> None:
        if status.done == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(small_points(), "calibrated", InlineExecutor(), out=out, on_row=stop_after_three)
    header, rows = read_journal(journal_path(out))
    assert header is not None and header["costs"] == "calibrated" and len(rows) == 3
    with journal_path(out).open("a", encoding="utf-8") as file:
        file.write('{"row": {"point": 3, "sche')  # a line cut short by the kill
    result = run_sweep(small_points(), "calibrated", InlineExecutor(), out=out, resume=True)
    assert result.status.reused == 3
    assert result.rows == inline_rows
    assert out.read_text(encoding="utf-8").count("\n") == 9


def test_cli_sweep_writes_parquet_and_reports(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "cli.parquet"
    rc, stdout, stderr = run_cli(["sweep", "gemm_ws_pingpong", "--arch", "h100", "--grid", "BN=64,128",
                                  "--grid", "STAGES=4,12", "--set", "M=512", "--set", "N=512", "--set", "K=512",
                                  "-j", "1", "--out", out, "--plot", tmp_path / "heat.png"])  # fmt: skip
    assert rc == 0, stderr
    assert "4 points: 2 predicted, 0 reused, 2 refused" in stdout and "refused (1)" in stdout
    rows = read_results(out)
    assert len(rows) == 4 and [r["status"] for r in rows] == ["ok", "refused", "ok", "refused"]
    assert (tmp_path / "heat.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grid", "BN=1..0"], "range is empty"),
        (["--grid", "BOGUS=1,2"], "BOGUS"),
        (["--out", "x.txt"], "expected a .parquet or .csv"),
        (["--resume"], "--resume needs --out"),
        (["--scheduler", "nowhere:1"], "expected a scheduler address tcp://HOST:PORT"),
    ],
)
def test_cli_sweep_bad_input_is_one_line(run_cli: Any, args: list[str], message: str) -> None:
    rc, _, stderr = run_cli(["sweep", "gemm_ws_pingpong", "--set", "M=512", "-j", "1", *args])
    assert rc == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_a_bad_grid_value_is_named_as_the_sweep_point_gave_it(run_cli) -> None:
    rc, _, stderr = run_cli(["sweep", "stream", "--arch", "h100", "--grid", "op=copy,frob", "--set", "bytes=4096",
                             "-j", "1"])  # fmt: skip
    assert rc == 2
    assert "the sweep point's op=frob (--grid or --set): stream takes op one of" in stderr
