"""Shared fixtures: run the CLI in a subprocess, and write modified copies of a built-in arch file."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings

# Tests see the shipped calibration only: user overlays (``gpusim calibrate`` output) go to an empty
# directory of this test session, never to the user's own.
os.environ["GPUSIM_CALIBRATION_DIR"] = tempfile.mkdtemp(prefix="gpusim-test-calibration-")

import gpusim
from gpusim.arch import archs_dir
from gpusim.yamlio import parse_yaml_text

# Deterministic, database-free property tests under CI; a few more examples locally.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

CliResult = tuple[int, str, str]
RunCli = Callable[..., CliResult]


def pytest_report_header(config: pytest.Config) -> str:
    """Show which gpusim is under test (the installed wheel under CI, the source tree when editable)."""
    return f"gpusim {gpusim.__version__} from {Path(gpusim.__file__).parent}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``.ci/run`` (GPUSIM_TEST_INSTALLED=1), refuse to test a gpusim imported from the source tree."""
    if os.environ.get("GPUSIM_TEST_INSTALLED") == "1":
        location = Path(gpusim.__file__).resolve()
        if "site-packages" not in location.parts:
            raise pytest.UsageError(f"expected the installed gpusim wheel, but imported {location}")


@pytest.fixture(scope="session")
def cli_cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A neutral working directory for CLI runs, so a source checkout in the cwd is never imported."""
    return tmp_path_factory.mktemp("cli-cwd")


@pytest.fixture(scope="session")
def run_cli(cli_cwd: Path) -> RunCli:
    """``run_cli(args, cwd=None) -> (rc, stdout, stderr)`` running ``python -P -m gpusim`` in a subprocess."""

    def run(args: Iterable[str | Path], cwd: Path | None = None) -> CliResult:
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "220", "PYTHONIOENCODING": "utf-8"}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "gpusim", *map(str, args)],
            cwd=cwd or cli_cwd,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    return run


@pytest.fixture(scope="session")
def h100_path() -> Path:
    """The built-in H100 arch file (from the installed package when testing a wheel)."""
    return archs_dir() / "h100.yaml"


@pytest.fixture(scope="session")
def h100_text(h100_path: Path) -> str:
    """The text of the built-in H100 arch file."""
    return h100_path.read_text(encoding="utf-8")


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value


def _del_dotted(data: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        node = node[key]
    del node[last]


@pytest.fixture
def arch_yaml(tmp_path: Path, h100_text: str) -> Callable[..., Path]:
    """Write a modified copy of archs/h100.yaml into tmp_path and return its path.

    ``arch_yaml(changes={"memory.hbm_bandwidth_bytes_per_s": -1}, delete=["sm_count"], name="x.yaml")``
    edits the parsed data (dotted paths) and dumps it; ``arch_yaml(text=...)`` writes raw text instead;
    with no arguments it writes an unmodified copy.
    """

    def write(
        *,
        changes: Mapping[str, Any] | None = None,
        delete: Iterable[str] = (),
        text: str | None = None,
        name: str = "arch.yaml",
    ) -> Path:
        path = tmp_path / name
        if text is None and not changes and not delete:
            text = h100_text
        if text is None:
            data = parse_yaml_text(h100_text, "h100.yaml")  # gpusim's loader: 80e9 is a float
            for dotted, value in (changes or {}).items():
                _set_dotted(data, dotted, value)
            for dotted in delete:
                _del_dotted(data, dotted)
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
        path.write_text(text, encoding="utf-8")
        return path

    return write
