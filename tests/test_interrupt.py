"""Ctrl-C during a multi-process ``gpusim validate``: one line, exit status 130, no worker tracebacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpusim.resources import builtin_dir


def _start_parallel_validate(tmp_path: Path) -> subprocess.Popen[str]:
    """``gpusim validate`` of every measurement file in 2 worker processes, in its own process group
    (as a terminal's foreground job)."""
    files = sorted(str(p) for p in (builtin_dir("data") / "measurements").glob("*.csv"))
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.Popen(
        [sys.executable, "-m", "gpusim", "validate", *files, "--jobs", "2", "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_ctrl_c_during_parallel_validate_is_one_line(tmp_path: Path) -> None:
    proc = _start_parallel_validate(tmp_path)
    time.sleep(4.0)  # let the workers start and begin predicting
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole group gets SIGINT
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # never leave a validate run (and its workers) behind a failed test
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err[-800:])
    assert err.strip() == "gpusim: interrupted", err[-800:]
    assert "Traceback" not in out


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_to_a_parallel_validate_stops_its_workers_too(tmp_path: Path) -> None:
    """``kill PID`` (a job scheduler, a CI timeout) reaches only the parent; its worker processes must
    not go on predicting rows for nobody."""
    proc = _start_parallel_validate(tmp_path)
    time.sleep(4.0)
    os.kill(proc.pid, signal.SIGTERM)  # the parent only
    try:
        _, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        orphans = _group_alive(proc.pid)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err[-800:])
    assert err.strip() == "gpusim: terminated", err[-800:]
    assert not orphans, "worker processes outlived the terminated validate"
