"""Issue 13, third fuzz round: inputs that raised a non-gpusim exception (exit 70), hung, or were accepted,
each now refused before any work with one line and a documented exit status, or bounded.

CLI cases run in forked children (tests/fuzzkit.py) on tiny problems; API cases call gpusim directly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzkit import describe, problems, run_forked

import gpusim
import gpusim.cli  # imported once here, so each forked run starts at once
from gpusim.explore.journal import read_journal

ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = (ROOT / "examples" / "row_softmax.yaml").read_text(encoding="utf-8")
PINGPONG = (ROOT / "schedules" / "gemm_ws_pingpong.yaml").read_text(encoding="utf-8")
SYNC = ["predict", "gemm_sync", "--arch", "v100", "--set", "M=128", "--set", "N=128", "--set", "K=64", "-q"]
SEQUENCE = """sequence: s
problem: {n: 256}
kernels:
- name: a
  schedule: gemm_ws_pingpong
  set: {M: n, N: n, K: n, dtype: bf16}
  repeat: 2
"""


def _write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _softmax(tmp: Path, name: str, old: str, new: str) -> str:
    assert old in SOFTMAX, old
    return _write(tmp, name, SOFTMAX.replace(old, new, 1))


def _template_bomb() -> str:
    """A program whose templates each use the one below eight times: 8**8 statements once expanded."""
    lines = ["templates:", "  t0: {do: [{cuda: {mix: row_max, elems: 1}}]}"]
    for i in range(1, 9):
        lines.append(f"  t{i}: {{do: [{', '.join([f'{{use: t{i - 1}}}'] * 8)}]}}")
    body = SOFTMAX.replace(
        "      - stg: {bytes: nrows * cols * elem_bytes}\n",
        "      - stg: {bytes: nrows * cols * elem_bytes}\n      - use: t8\n",
        1,
    )
    return body + "\n".join(lines) + "\n"


def _cases(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    """(name, gpusim arguments, expected exit status, a phrase the error names)."""
    pingpong = PINGPONG.replace("extends: parts/", f"extends: {ROOT / 'schedules' / 'parts'}/", 1)
    sequence = _write(tmp, "seq.yaml", SEQUENCE)
    journal_out = tmp / "sweep.csv"
    journal = tmp / "sweep.csv.partial.jsonl"
    journal.write_bytes(
        b'{"journal": 1, "costs": "calibrated"}\n5\n"x"\n{"row": 7}\n{"row": {"point": 0}}\n\xff\xfe\n'
    )
    softmax_args = ["--set", "rows=64", "--set", "cols=256"]
    return [
        *[
            (f"--set {key}", [*SYNC, "--set", f"{key}=3"], 2, "option of gpusim.predict")
            for key in ("costs", "model", "exact", "max_events", "deadline_s", "record", "on_progress")
        ],
        ("--grid on a predict option", ["sweep", "gemm_sync", "--arch", "v100", "--grid", "costs=1,2"], 2,
         "option of gpusim.predict"),
        ("--grid step in YAML base 60", ["sweep", "gemm_sync", "--arch", "v100", "--grid", "STAGES=1..5:1:2"], 2,
         "expected a number"),
        ("sequence: set: names a predict option",
         ["predict", _write(tmp, "s_costs.yaml", SEQUENCE.replace("{M: n", "{costs: 3, M: n")), "-q"], 2,
         "option of gpusim.predict"),
        ("sequence: repeat of 80 digits",
         ["predict", _write(tmp, "s_rep.yaml", SEQUENCE.replace("repeat: 2", "repeat: " + "9" * 80)), "-q"], 2,
         "repeat"),
        ("sequence: --max-events reaches its kernels", ["predict", sequence, "--arch", "h100", "--max-events", "100"],
         5, "work limit of 100 events"),
        ("sequence: --resources", ["predict", sequence, "--arch", "h100", "--resources", "x.cubin"], 2,
         "need one kernel"),
        ("schedule: a problem key the loader sets",
         ["predict", _softmax(tmp, "shadow.yaml", "problem: {rows", "problem: {num_sms: 3, rows"), "-q"], 2,
         "symbol the loader sets"),
        ("schedule: a key in problem and params",
         ["predict", _softmax(tmp, "dup.yaml", "  ROWS_PER_CTA: 4", "  ROWS_PER_CTA: 4\n  rows: 8"), "-q"], 2,
         "both a problem value and a param"),
        ("schedule: an alias of a defined name",
         ["predict", _softmax(tmp, "alias.yaml", "params:\n", "aliases: {rows: cols}\nparams:\n"), "-q"], 2,
         "already a problem value"),
        ("schedule: persistent: 'yes'",
         ["predict", _write(tmp, "pers.yaml", pingpong.replace("persistent: true", "persistent: 'yes'", 1)), "-q"],
         2, "persistent"),
        ("schedule: an empty grid",
         ["predict", _softmax(tmp, "grid.yaml", "  grid:\n    g: ceil_div(rows, ROWS_PER_CTA)\n", "  grid: {}\n"),
          *softmax_args, "-q"], 2, "launch.grid: empty"),
        ("schedule: an undeclared operand",
         ["predict", _softmax(tmp, "opz.yaml", "operand: X}", "operand: Z}"), *softmax_args, "-q"], 2,
         "unknown operand 'Z'"),
        ("schedule: templates that expand to 8**8 statements",
         ["predict", _write(tmp, "bomb.yaml", _template_bomb()), *softmax_args, "-q"], 2, "expands to more than"),
        ("sweep --scheduler without a host", ["sweep", "gemm_sync", "--arch", "v100", "--grid", "BM=64",
                                             "--scheduler", "tcp://"], 2, "expected a scheduler address"),
        ("sweep --scheduler inproc", ["sweep", "gemm_sync", "--arch", "v100", "--grid", "BM=64",
                                      "--scheduler", "inproc://nothing"], 2, "expected a scheduler address"),
        ("--trace ending in a slash", [*SYNC, "--trace", str(tmp / "t.json") + "/"], 2, "ends with '/'"),
        ("--plot-kind without --plot", ["sweep", "gemm_sync", "--arch", "v100", "--grid", "BM=64",
                                        "--plot-kind", "pie"], 2, "add --plot"),
        ("--model ''", [*SYNC, "--model", ""], 2, "no mechanism named"),
        ("--model +power,-power", [*SYNC, "--model", "+power,-power"], 2, "switched twice"),
        ("--overlay not a YAML file", [*SYNC, "--overlay", "calibrated"], 2, "expected an overlay YAML file"),
        ("validate --markdown rows over the input",
         ["validate", _write(tmp, "m_rows.csv", "x\n"), "--markdown", str(tmp / "m.md"), "-j", "1", "-q"], 2,
         "would overwrite the input"),
        ("--window nan:nan", [*SYNC, "--plot", str(tmp / "p.png"), "--window", "nan:nan"], 2, "need finite"),
        ("schedule: an infinite mix", ["predict", _softmax(tmp, "mix_inf.yaml", "row_max: {fp32: 1}",
                                                          "row_max: {fp32: .inf}"), *softmax_args, "-q"], 2, "fp32"),
        ("schedule: 1e300 ops per element", ["predict", _softmax(tmp, "mix_big.yaml", "row_max: {fp32: 1}",
                                                                 "row_max: {fp32: 1e300}"), *softmax_args, "-q"], 2,
         "fp32"),
        ("schedule: a loop variable named like a problem value",
         ["predict", _softmax(tmp, "shadow_loop.yaml", "      - cuda: {mix: row_max, elems: nrows * cols}\n",
                              "      - for: {cols: 2}\n        do: [{cuda: {mix: row_max, elems: cols}}]\n"),
          *softmax_args, "-q"], 2, "would hide"),
        ("sweep --resume into a CSV that is not a results file",
         ["sweep", "gemm_sync", "--arch", "v100", "--grid", "BM=64", "--out", _write(tmp, "notes.csv", "my notes\n"),
          "--resume", "-j", "1", "-q"], 2, "not a gpusim results file"),
        ("csv: a column twice in the header",
         ["validate", _write(tmp, "twice.csv", "source,arch,schedule,dtype,M,N,K,batch,heads,seqlen_q,seqlen_kv,"
                             "head_dim,causal,metric,value,unit,notes,params,value\n"), "-j", "1", "-q"], 2,
         "appears twice"),
        ("sweep --resume over a damaged journal",
         ["sweep", "gemm_sync", "--arch", "v100", "--grid", "BM=64", "--set", "M=128", "--set", "N=128",
          "--set", "K=64", "--out", str(journal_out), "--resume", "-j", "1", "-q"], 0, ""),
    ]  # fmt: skip


def test_round3_inputs_are_refused_in_one_line(tmp_path: Path) -> None:
    broken = []
    for name, args, expected, phrase in _cases(tmp_path):
        outcome = run_forked(args, timeout_s=60.0)
        found = problems(outcome)
        if outcome.rc != expected:
            found.append(f"exit status {outcome.rc}, expected {expected}")
        if phrase and phrase not in outcome.stderr:
            found.append(f"the error does not say {phrase!r}")
        if found:
            broken.append(f"{name}: {found}; {describe(outcome)}")
    assert not broken, "\n".join(broken)


def test_a_latin1_terminal_gets_the_table_not_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-m", "gpusim", "archs", "show", "h100"], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode("latin-1")[-500:]
    assert b"h100" in done.stdout


def test_a_damaged_journal_keeps_only_whole_rows(tmp_path: Path) -> None:
    good = {"point": 0, "schedule": "gemm_sync", "arch": "v100", "costs": "calibrated", "status": "ok",
            "time_us": 12.5}  # fmt: skip
    lines = [
        json.dumps({"journal": 1, "costs": "calibrated"}),
        json.dumps({"row": good}),
        "5",
        json.dumps({"row": {**good, "time_us": "fast"}}),
        json.dumps({"row": {**good, "time_us": -5}}),
        json.dumps({"row": {**good, "status": None}}),
        json.dumps({"row": [1, 2]}),
        '{"row": {"point": 1, "schedule": "gemm_sync", "arch": "v100", "costs": "calibrated", "status": "ok", "time_us": NaN}}',
    ]
    path = tmp_path / "j.partial.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe\n")
    header, rows = read_journal(path)
    assert header == {"journal": 1, "costs": "calibrated"}
    assert rows == [good]


SMALL: dict[str, Any] = {"M": 128, "N": 128, "K": 64}


@pytest.fixture(scope="module")
def recorded() -> gpusim.Prediction:
    return gpusim.predict("gemm_sync", "v100", record=True, **SMALL)


@pytest.mark.parametrize(
    "call",
    [
        lambda p: gpusim.predict("gemm_sync", "v100", M=np.array([1, 2]), N=128, K=64),
        lambda p: gpusim.predict("gemm_sync", "v100", costs="Q" * 5000, **SMALL),
        lambda p: gpusim.predict("gemm_sync", "v100", model=5, **SMALL),
        lambda p: gpusim.predict("gemm_sync", "v100", model="", **SMALL),
        lambda p: gpusim.predict("gemm_sync", "v100", exact=1, **SMALL),
        lambda p: gpusim.Variant(["gemm_sync"], "v100"),
        lambda p: gpusim.write_trace(p, 5),
        lambda p: gpusim.write_trace(p, "stream"),
        lambda p: gpusim.plot_timeline(p, "t.png", window_us="1:2"),
        lambda p: gpusim.plot_timeline(p, "t.png", window_us=(5, 1)),
        lambda p: gpusim.plot_compare(None, "c.png"),  # type: ignore[arg-type]
        lambda p: gpusim.plot_roofline("h100", [p], "r.png"),  # type: ignore[arg-type]
        lambda p: gpusim.roofline_point(None, None),  # type: ignore[arg-type]
        lambda p: gpusim.read_measurements(5),  # type: ignore[arg-type]
        lambda p: gpusim.predict("gemm_sync", "v100", deadline_s=0.0, **SMALL),
    ],
    ids=["numpy-array", "costs-5000-chars", "model-int", "model-empty", "exact-int", "variant-list",
         "trace-int-path", "trace-no-extension", "window-text", "window-reversed", "compare-none",
         "roofline-arch-text", "roofline-point-none", "measurements-int", "deadline-passed"],
)  # fmt: skip
def test_api_misuse_raises_one_line_gpusim_errors(recorded: gpusim.Prediction, call: Any) -> None:
    with pytest.raises(gpusim.GpusimError) as info:
        call(recorded)
    assert "\n" not in str(info.value) and len(str(info.value)) < 400


def test_a_numpy_scalar_is_its_python_value() -> None:
    assert gpusim.predict("gemm_sync", "v100", M=np.int64(128), N=128, K=64).problem["M"] == 128


def test_a_sequence_stops_past_its_work_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel stops at --max-events; the sequence predicts no further distinct kernel once its kernels
    spent SEQUENCE_EVENTS_FACTOR times it (here 0, so the second distinct kernel is refused)."""
    import gpusim.sequence as sequence

    two = SEQUENCE + "- name: b\n  schedule: gemm_ws_pingpong\n  set: {M: n, N: 2 * n, K: n, dtype: bf16}\n"
    seq = sequence.load_sequence(_write(tmp_path, "two.yaml", two))
    assert len(sequence.predict_sequence(seq, "h100").kernels) == 2
    monkeypatch.setattr(sequence, "SEQUENCE_EVENTS_FACTOR", 0)
    with pytest.raises(gpusim.LimitExceeded, match=r"kernels\[1\] \(b\).*past the sequence's work limit"):
        sequence.predict_sequence(seq, "h100")
    again = SEQUENCE + "- name: b\n  schedule: gemm_ws_pingpong\n  set: {M: n, N: n, K: n, dtype: bf16}\n"
    assert (
        len(
            sequence.predict_sequence(
                sequence.load_sequence(_write(tmp_path, "same.yaml", again)), "h100"
            ).kernels
        )
        == 2
    )


def test_an_auto_search_reports_the_events_it_spent() -> None:
    p = gpusim.predict("auto:gemm", "h100", M=512, N=512, K=512, attribute=False)
    assert p.choice is not None and p.choice["events"] >= p.sim["events"] > 0


def test_a_params_key_given_twice_marks_its_row(tmp_path: Path) -> None:
    header = "source,arch,schedule,dtype,M,N,K,batch,heads,seqlen_q,seqlen_kv,head_dim,causal,metric,value,unit,notes,params"
    row = "s,h100,gemm_ws_pingpong,bf16,256,256,256,,,,,,,time,10,us,n,BN=64;BN=128"
    (m,) = gpusim.read_measurements([_write(tmp_path, "dup.csv", f"{header}\n{row}\n")])
    assert m.error is not None and "given twice" in m.error


def test_building_an_arch_from_bad_fields_is_an_input_error() -> None:
    with pytest.raises(gpusim.InputError, match=r"gpusim\.Arch: field 'id'"):
        gpusim.Arch(id=1)


def test_a_server_that_is_not_a_dask_scheduler_is_refused_before_a_client_exists() -> None:
    import socket
    import threading

    pytest.importorskip("distributed")
    from gpusim.explore.executors import DaskExecutor

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer_like_http() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer_like_http, daemon=True).start()
    try:
        with pytest.raises(gpusim.InputError, match="not a reachable Dask scheduler"):
            DaskExecutor(f"tcp://127.0.0.1:{port}", connect_timeout_s=5)
    finally:
        server.close()


def test_a_chunk_outside_its_buffer_is_named(tmp_path: Path) -> None:
    """A wait on chunk 99 of a 9-chunk buffer used to wait forever (a deadlock report at best)."""
    text = (ROOT / "schedules" / "mla_decode_flashmla.yaml").read_text(encoding="utf-8")
    old = "          - wait: {buf: k0, chunk: c}"
    assert old in text
    text = text.replace(old, "          - wait: {buf: k0, chunk: c + 99}", 1)
    text = text.replace("extends: parts/", f"extends: {ROOT / 'schedules' / 'parts'}/")
    path = _write(tmp_path, "mla_chunk.yaml", text)
    with pytest.raises(gpusim.InputError, match=r"chunk 99 of buffer 'k0', which has chunks 0\.\.8"):
        gpusim.predict(path, "h100", batch=1, seqlen_kv=512, attribute=False)


def test_an_override_is_named_as_the_caller_wrote_it() -> None:
    """Through the API an unknown or bad override is a keyword argument; on the command line, a --set."""
    with pytest.raises(
        gpusim.InputError, match=r"^keyword argument MM: unknown parameter 'MM'; did you mean 'M'"
    ):
        gpusim.predict("gemm_ws_pingpong", "h100", MM=64)
    with pytest.raises(gpusim.InputError, match=r"^auto:gemm: keyword argument M=0: expected a whole number"):
        gpusim.predict("auto:gemm", "h100", M=0)
    result = run_forked(["predict", "gemm_ws_pingpong", "--arch", "h100", "--set", "MM=64"])
    assert result.rc == 2 and "--set MM: unknown parameter 'MM'" in result.stderr, describe(result)
