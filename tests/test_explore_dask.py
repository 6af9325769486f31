"""The Dask executor on a 2-worker loopback LocalCluster: the same rows and file as local processes, and a
worker killed mid-sweep loses no point."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpusim.explore.executors import DaskExecutor, InlineExecutor
from gpusim.explore.grid import enumerate_points, parse_axes
from gpusim.explore.sweep import run_sweep

distributed = pytest.importorskip("distributed")


def points() -> list[Any]:
    axes = parse_axes(["BN=64,128,256", "STAGES=2,4,9"])
    return enumerate_points("gemm_ws_pingpong", ["h100"], axes, {"M": 512, "N": 512, "K": 512})


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=50)  # fmt: skip
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


def test_cluster_writes_the_local_file(client: Any, tmp_path: Path) -> None:
    local, remote = tmp_path / "local.parquet", tmp_path / "cluster.parquet"
    run_sweep(points(), "calibrated", InlineExecutor(), out=local)
    executor = DaskExecutor(client.scheduler.address)  # its own client, as --scheduler makes
    try:
        result = run_sweep(points(), "calibrated", executor, out=remote)
    finally:
        executor.close()
    assert "Dask cluster" in result.executor
    assert remote.read_bytes() == local.read_bytes()


def test_killed_worker_loses_no_point(client: Any, tmp_path: Path) -> None:
    killed: list[int] = []

    def kill_a_worker(row: dict[str, Any], status: Any) -> None:
        if not killed:
            pids = sorted(client.run(os.getpid).values())
            killed.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

    expected = run_sweep(points(), "calibrated", InlineExecutor()).rows
    result = run_sweep(points(), "calibrated", DaskExecutor(client), on_row=kill_a_worker)
    assert killed
    assert result.rows == expected
