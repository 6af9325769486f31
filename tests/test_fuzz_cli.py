"""Fuzz the ``gpusim`` command: hostile argument lists, run in forked children with a hard time bound.

Every run must end with a documented exit status (0, 2, 3, 4, 5), no traceback, one line on stderr
when it fails, and strict JSON for ``--json`` (see fuzzkit.py). The cases are chosen to fail before a
simulation starts, so the whole file stays fast."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fuzzkit import HUNG, problems, run_forked
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusim.cli  # noqa: F401  (imported once here, so each forked run starts at once)
from gpusim.arch import archs_dir

TIME_BOUND_S = 30.0
"""A run still going after this long counts as a hang (the runs here take well under a second)."""
FUZZ_EXAMPLES = int(os.environ.get("GPUSIM_FUZZ_EXAMPLES", "30"))


def _check(args: list[str]) -> None:
    outcome = run_forked(args, timeout_s=TIME_BOUND_S)
    found = problems(outcome)
    assert not found, (found, args[:6], outcome.stderr[-600:])


HOSTILE_SETS = [
    "M=10**10**10", "M=.inf", "M=.nan", "M=2.0**10000", "M=10**400", "M=" + "+".join(["1"] * 5000),
    "M=" + "(" * 300 + "1" + ")" * 300, "M=-4096", "M=0", "M=1e12", "M=abc", "M=[1, 2]", "M={a: 1}",
    "M=1/0", "M=foo + 1", "x" * 200_000 + "=1", "M", "=5", "dtype=zz", "BM=0", "M=4096.5", "M=!!float x",
    "M=&a 1", "M=*a", "M='\x00'", "M=\ufeff1", "BM=-64", "STAGES=1000000000", "SPLITS=0", "M=true",
]  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE_SETS, ids=range(len(HOSTILE_SETS)))
def test_hostile_set_values(value: str) -> None:
    _check(["predict", "gemm_sync", "--arch", "v100", "--set", value, "--json"])


def test_alias_bomb_and_deep_nesting(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(levels) + "\n")
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    deep_map = tmp_path / "deep_map.yaml"
    deep_map.write_text("".join("  " * i + f"k{i}:\n" for i in range(3000)))
    for path in (bomb, deep, deep_map):
        _check(["archs", "show", str(path)])
        _check(["predict", "gemm_sync", "--arch", str(path)])
        _check(["predict", str(path), "--arch", "v100"])


@pytest.mark.parametrize(
    "args",
    [
        [], ["bogus"], ["predict"], ["archs", "show"], ["archs", "--bogus"], ["predict", "gemm_sync", "--sm", "x"],
        ["validate"], ["validate", "--max-rows", "1"], ["calibrate", "x.csv"], ["predict", "gemm_sync", "--arch"],
        ["archs", "show", "h1\n0"], ["archs", "show", ""], ["archs", "show", "/tmp"], ["archs", "show", "/dev/zero"],
        ["predict", "/dev/urandom"], ["predict", "gemm_sync", "--arch", "x" * 100_000], ["schedules", "--json", "x"],
        ["predict", "gemm_sync", "--window", "5:1"], ["validate", "/dev/zero"], ["validate", "/nonexistent.csv"],
        ["validate", "data/measurements/x.csv", "--row-timeout", "nan"], ["validate", "x.csv", "--jobs", "-3"],
        ["predict", "--json", "--help"], ["schedules", "-h", "--json"], ["archs", "show", "--json", "--help"],
    ],
    ids=lambda a: " ".join(a)[:40],
)  # fmt: skip
def test_cli_misuse(args: list[str]) -> None:
    _check(args)


def test_help_asked_with_json_is_one_json_document() -> None:
    outcome = run_forked(["predict", "--json", "--help"], timeout_s=TIME_BOUND_S)
    assert outcome.rc == 0
    assert "Usage:" in json.loads(outcome.stdout)["help"] and "--arch" in json.loads(outcome.stdout)["help"]


def test_usage_error_is_one_line_with_a_hint() -> None:
    outcome = run_forked(["predict", "--bogus-flag"], timeout_s=TIME_BOUND_S)
    assert outcome.rc == 2
    assert outcome.stderr.count("\n") == 1 and "--help" in outcome.stderr, outcome.stderr


@pytest.mark.parametrize(
    ("option", "name"),
    [("--plot", "missing/x.png"), ("--plot", "noext"), ("--plot", "x.xyz"), ("--plot", "."), ("--trace", "d/t.json"),
     ("--trace", "t.txt")],
)  # fmt: skip
def test_output_paths_are_checked_before_work(tmp_path: Path, option: str, name: str) -> None:
    target = str(tmp_path / name) if name != "." else str(tmp_path)
    outcome = run_forked(["predict", "gemm_sync", "--arch", "v100", option, target], timeout_s=TIME_BOUND_S)
    assert outcome.rc == 2, outcome.stderr
    assert not problems(outcome)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is written anywhere"


def test_calibrate_out_to_a_directory_is_refused_before_the_fit(tmp_path: Path) -> None:
    outcome = run_forked(
        ["calibrate", "nope.csv", "--arch", "v100", "--out", str(tmp_path)], timeout_s=TIME_BOUND_S
    )
    assert outcome.rc == 2 and "is a directory" in outcome.stderr, outcome.stderr


def test_archs_json_is_strict(tmp_path: Path) -> None:
    outcome = run_forked(["archs", "--json"], timeout_s=TIME_BOUND_S)
    assert not problems(outcome)
    assert len(json.loads(outcome.stdout)) >= 14


H100 = (archs_dir() / "h100.yaml").read_text(encoding="utf-8")
ARCH_EDITS = [
    ("sm_count: 132", "sm_count: .nan"), ("sm_count: 132", "sm_count: .inf"), ("sm_count: 132", "sm_count: 0"),
    ("sm_count: 132", "sm_count: 1" + "0" * 5000), ("[8, 256, 8]", "[8, 1000000000000, 8]"),
    ("[8, 256, 8]", "[8, 256, 0]"), ("[8, 256, 8]", "[8, 256, -8]"), ("id: h100", "id: \"h1\\n00\""),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), ARCH_EDITS, ids=range(len(ARCH_EDITS)))
def test_hostile_arch_numbers(tmp_path: Path, old: str, new: str) -> None:
    assert old in H100
    path = tmp_path / "edited.yaml"
    path.write_text(H100.replace(old, new, 1))
    _check(["archs", "show", str(path), "--json"])


WORDS = ["predict", "compare", "roofline", "archs", "show", "schedules", "validate", "calibrate", "--json",
         "--arch", "--set", "--vs", "--plot", "--trace", "--sm", "--window", "--datasheet", "--calibrated",
         "--max-rows", "--jobs", "--out", "--dry-run", "--help", "gemm_sync", "auto:gemm", "h100", "v100", "h10",
         "M=0", "M=-1", "M=x", "K=.nan", "BM=7", "0", "-1", "1e999", "", "--", "-", "=", "/dev/null"]  # fmt: skip


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
def test_random_argument_lists(args: list[str]) -> None:
    starts_work = {"predict", "compare", "roofline", "validate", "calibrate"} & set(args)
    if starts_work and "--help" not in args:  # keep the fuzz quick: no run may start a long simulation
        args = [*args, "--arch", "h10"]
    outcome = run_forked(args, timeout_s=TIME_BOUND_S)
    assert outcome.rc != HUNG, args
    assert not problems(outcome), (problems(outcome), args, outcome.stderr[-400:])


ROWS_FILE_HEADER = (
    "file,line,inputs,arch,family,measured_time_us,predicted_time_us,skipped,costs,predicted_on\n"
)


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00garbage", b"a,b\n1,2\n", ROWS_FILE_HEADER.encode() + b"m.csv,notaline,x,h100,stream,1,1,,,d\n",
     ROWS_FILE_HEADER.encode() + b"m.csv,2,x,h100,stream,nan-ish,1,,,d\n", b"", None],
    ids=["binary", "foreign header", "bad line", "bad number", "empty", "a directory"],
)  # fmt: skip
def test_hostile_stored_row_results_are_refused_before_work(tmp_path: Path, content: bytes | None) -> None:
    """validate --reuse-unchanged reads <report>_rows.csv first: a file it cannot read is one line, exit 2,
    and neither the report nor the rows file is written."""
    data = tmp_path / "m.csv"
    data.write_text("source,arch,schedule,metric,value,unit\ntest,h100,stream,time,5,us\n")
    stored = tmp_path / "acc_rows.csv"
    if content is None:
        stored.mkdir()
    else:
        stored.write_bytes(content)
    before = sorted(p.name for p in tmp_path.iterdir())
    outcome = run_forked(["validate", str(data), "--markdown", str(tmp_path / "acc.md"), "--reuse-unchanged"],
                         timeout_s=TIME_BOUND_S)  # fmt: skip
    assert outcome.rc == 2, outcome.stderr
    assert not problems(outcome)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def _real_run(args: list[str], *, close: int | None = None, broken_pipe: bool = False) -> tuple[int, str]:
    """``python -m gpusim <args>`` in a real process: started with descriptor ``close`` closed, or with
    stdout a pipe whose reader is gone before the first write (``| head -c1``); (status, stderr)."""
    import subprocess
    import sys

    def start() -> None:
        if close is not None:
            os.close(close)

    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusim", *args],
        stdout=subprocess.PIPE if broken_pipe else subprocess.DEVNULL,
        stderr=subprocess.PIPE if close != 2 else subprocess.DEVNULL,
        preexec_fn=start,  # closes one descriptor in the child, nothing else
        env={**os.environ, "NO_COLOR": "1"},
    )
    if broken_pipe:
        assert proc.stdout is not None
        proc.stdout.close()
    _, err = proc.communicate(timeout=TIME_BOUND_S)
    return proc.returncode, (err or b"").decode("utf-8", "replace")


def test_closed_and_broken_standard_streams() -> None:
    """A table cut short by its reader (rich would exit 1) ends with 0 and nothing on stderr; a closed
    stdout is one line and status 2 (was an AttributeError traceback); a closed stderr keeps the status."""
    rc, err = _real_run(["archs", "show", "h100"], broken_pipe=True)
    assert (rc, err) == (0, ""), err[-400:]
    rc, err = _real_run(["schedules"], close=1)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "closed" in err, err[-400:]
    rc, _ = _real_run(["predict", "nope"], close=2)
    assert rc == 2
