"""Fuzz the readers with mutations of the shipped files: an arch, a schedule, a measurement CSV.

Each mutated file is either accepted or refused with a GpusimError whose message is one line that
quotes at most a bounded piece of the input; nothing else may escape (no RecursionError, OverflowError,
TypeError...). Deterministic under the CI profile (conftest.py)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import HOSTILE_CELLS, mutated_text

from gpusim.arch import archs_dir, load_arch, load_arch_file
from gpusim.calibrate.measurements import read_measurements
from gpusim.calibrate.validate import precheck
from gpusim.errors import GpusimError
from gpusim.resources import builtin_dir
from gpusim.schedule.check import check_schedule
from gpusim.schedule.load import load_schedule

MAX_MESSAGE_CHARS = 1000
FUZZ_EXAMPLES = int(os.environ.get("GPUSIM_FUZZ_EXAMPLES", "30"))
"""Examples per fuzz test (raise it for a longer local hunt: GPUSIM_FUZZ_EXAMPLES=1000)."""
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def assert_one_line(exc: GpusimError) -> None:
    """A user-facing error message: one line, bounded."""
    message = str(exc)
    assert "\n" not in message and "\r" not in message, message[:300]
    assert 0 < len(message) <= MAX_MESSAGE_CHARS, message[:300]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


H100_TEXT = (archs_dir() / "h100.yaml").read_text(encoding="utf-8")
SCHEDULES = {p.stem: p.read_text(encoding="utf-8") for p in sorted(builtin_dir("schedules").glob("*.yaml"))}
CSV_TEXT = (builtin_dir("data") / "measurements" / "deepbench_v100_gemm.csv").read_text(encoding="utf-8")


@FUZZ
@given(st.data())
def test_mutated_arch_is_loaded_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                       data: st.DataObject) -> None:  # fmt: skip
    text = data.draw(mutated_text(H100_TEXT))
    path = _write(tmp_path_factory.mktemp("arch"), "h100_mutated.yaml", text)
    try:
        load_arch_file(path)
    except GpusimError as exc:
        assert_one_line(exc)


@FUZZ
@given(st.sampled_from(sorted(SCHEDULES)), st.data())
def test_mutated_schedule_is_loaded_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory, name: str,
                                                           data: st.DataObject) -> None:  # fmt: skip
    text = data.draw(mutated_text(SCHEDULES[name]))
    path = _write(tmp_path_factory.mktemp("sched"), f"{name}.yaml", text)
    try:
        sched = load_schedule(str(path), load_arch("h100"))
        check_schedule(sched, load_arch("h100"))
    except GpusimError as exc:
        assert_one_line(exc)


def _mutated_csv(rows: list[list[str]], picks: list[tuple[int, int, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for r, c, value in picks:
        row = rows[1 + r % (len(rows) - 1)]
        row[c % len(row)] = value
    writer.writerows(rows)
    return out.getvalue()


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 17), st.sampled_from(HOSTILE_CELLS)), max_size=4),
       st.booleans())  # fmt: skip
def test_mutated_csv_rows_are_read_or_marked_malformed(tmp_path_factory: pytest.TempPathFactory,
                                                       picks: list[tuple[int, int, str]], bom: bool) -> None:  # fmt: skip
    rows = [list(r) for r in csv.reader(io.StringIO(CSV_TEXT))]
    text = ("\ufeff" if bom else "") + _mutated_csv(rows, picks)
    path = _write(tmp_path_factory.mktemp("csv"), "m.csv", text)
    try:
        measured = read_measurements([path])
    except GpusimError as exc:
        assert_one_line(exc)
        return
    for m in measured:
        reason = precheck(m)
        assert reason is None or "\n" not in reason
        assert reason is not None or (0 < m.value < float("inf"))  # NaN never reaches the fit or a report


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe" + H100_TEXT.encode(), H100_TEXT.encode() + b"\n# \xc3\x28\n", b"\x00" * 100, b""],
    ids=["utf16-bom", "bad-utf8", "nul", "empty"],
)
def test_undecodable_arch_files_are_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(content)
    with pytest.raises(GpusimError) as info:
        load_arch_file(path)
    assert_one_line(info.value)


def test_bom_and_crlf_arch_file_loads(tmp_path: Path) -> None:
    """A UTF-8 BOM and CRLF line ends (a file saved on Windows) read like the original."""
    path = tmp_path / "h100_windows.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + H100_TEXT.replace("\n", "\r\n").encode())
    assert load_arch_file(path).sm_count == load_arch("h100").sm_count


def test_bom_csv_reads_its_header(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(b"\xef\xbb\xbf" + CSV_TEXT.encode())
    assert len(read_measurements([path])) == len(read_measurements([_write(tmp_path, "plain.csv", CSV_TEXT)]))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_without_reading(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} missing")
    with pytest.raises(GpusimError, match="not a regular file"):
        load_arch_file(Path(device))
    with pytest.raises(GpusimError, match="not a regular file"):
        read_measurements([device])


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    path = _write(tmp_path, "bomb.yaml", "\n".join(levels) + "\n")
    with pytest.raises(GpusimError, match="aliases are expanded") as info:
        load_arch_file(path)
    assert_one_line(info.value)


def test_huge_csv_field_marks_the_row_or_file(tmp_path: Path) -> None:
    rows = [list(r) for r in csv.reader(io.StringIO(CSV_TEXT))]
    rows[1][rows[0].index("notes")] = "x" * 300_000
    measured = read_measurements([_write(tmp_path, "m.csv", _mutated_csv(rows, []))])
    assert measured[0].error is not None and "longer than" in measured[0].error


@pytest.mark.parametrize("ref", ["parts/gemm " + "x" * 5000, "a\0b", "x" * 300 + ".yaml"])
def test_an_extends_name_no_file_system_takes_is_an_unknown_name(tmp_path: Path, ref: str) -> None:
    """Found by the fuzz suite: a description folded into ``extends:`` made a file name too long for the
    file system, and the OSError escaped."""
    path = _write(tmp_path, "long_extends.yaml", f"schedule: long_extends\nextends: {json.dumps(ref)}\n")
    with pytest.raises(GpusimError) as err:
        load_schedule(str(path), load_arch("h100"))
    assert "extends" in str(err.value)
    assert_one_line(err.value)


def test_a_file_name_too_long_is_quoted_short(tmp_path: Path) -> None:
    """A 5,000-character file name (the OS refuses it) is named in at most ~200 characters."""
    from gpusim.textfile import read_text_file

    with pytest.raises(GpusimError) as err:
        read_text_file(tmp_path / ("a" * 5000 + ".yaml"), what="a schedule", max_bytes=1000)
    assert len(str(err.value)) < 300
    assert_one_line(err.value)
