"""gpusim validate: measurement files, bad rows, JSON structure, FLOP conventions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpusim.calibrate.convention import measured_time_us
from gpusim.calibrate.measurements import COLUMNS, read_measurements
from gpusim.calibrate.validate import run_validate
from gpusim.cli import app
from gpusim.errors import InputError

HEADER = ",".join(COLUMNS)


def _row(**kw: object) -> str:
    vals = {c: "" for c in COLUMNS}
    vals.update({"source": "test", "batch": "1"})
    vals.update({k: str(v) for k, v in kw.items()})
    return ",".join(vals[c] for c in COLUMNS)


def _write(tmp_path: Path, name: str, lines: list[str], header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


STREAM = {"arch": "h100", "schedule": "stream", "dtype": "fp32", "metric": "time", "unit": "us",
          "params": "op=copy;bytes=4194304"}  # fmt: skip


def test_missing_columns_rejected_naming_them(tmp_path: Path) -> None:
    header = ",".join(c for c in COLUMNS if c not in ("metric", "unit"))
    path = _write(tmp_path, "bad.csv", [], header=header)
    with pytest.raises(InputError, match="missing columns metric, unit"):
        read_measurements([path])
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert isinstance(result.exception, InputError)


def test_non_numeric_value_names_row_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.csv", [_row(**STREAM, value=12.5), _row(**{**STREAM, "M": "abc"}, value=3)])
    results, _ = run_validate([path], jobs=1)
    bad = results[1]
    assert bad.skipped is not None and "column M" in bad.skipped and "'abc'" in bad.skipped
    assert f"{path}:3" in bad.skipped and "row 1" in bad.skipped
    assert results[0].skipped is None


def test_unknown_arch_and_schedule_skipped_with_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.csv", [_row(**{**STREAM, "arch": "GH200 SXM"}, value=10),
                                      _row(**{**STREAM, "schedule": "no_such_kernel"}, value=10)])  # fmt: skip
    results, summary = run_validate([path], jobs=1)
    assert results[0].skipped == "unknown arch 'GH200 SXM'"
    assert "unknown schedule 'no_such_kernel'" in (results[1].skipped or "")
    assert summary["skipped"] == 2


def test_json_structure_and_global_row_index(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.csv", [_row(**STREAM, value=20)])
    b = _write(tmp_path, "b.csv", [_row(**STREAM, value=30), _row(**{**STREAM, "arch": "L40"}, value=5)])
    result = CliRunner().invoke(app, ["validate", str(a), str(b), "--json", "--datasheet"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"rows", "summary"}
    rows = data["rows"]
    assert [r["row"] for r in rows] == [0, 1, 2]
    for r in rows:
        for key in (
            "row",
            "file",
            "arch",
            "schedule",
            "measured_time_us",
            "predicted_time_us",
            "error_pct",
            "skipped",
        ):
            assert key in r
    assert rows[0]["predicted_time_us"] > 0 and rows[0]["skipped"] is None
    assert rows[2]["predicted_time_us"] is None and rows[2]["skipped"] == "unknown arch 'L40'"
    assert rows[1]["file"] == str(b)
    fam = data["summary"]["by_arch_family"]
    assert any(g["arch"] == "h100" and g["family"] == "stream" and g["rows"] == 2 for g in fam)
    for key in ("median_abs_pct", "mean_abs_pct", "p90_abs_pct", "bias_pct", "skipped"):
        assert key in fam[0]


def test_flop_conventions(tmp_path: Path) -> None:
    lines = [
        _row(arch="h100", schedule="auto:gemm", dtype="bf16", M=1000, N=1000, K=1000, metric="throughput",
             value=2, unit="TFLOPS"),
        _row(arch="h100", schedule="attn_fa2_fwd", dtype="fp16", batch=2, heads=4, seqlen_q=1000, seqlen_kv=1000,
             head_dim=100, causal=1, metric="fwd_throughput", value=1, unit="TFLOPS"),
        _row(arch="h100", schedule="attn_fa2_fwd+attn_fa2_bwd", dtype="fp16", batch=2, heads=4, seqlen_q=1000,
             seqlen_kv=1000, head_dim=100, causal=0, metric="fwd_bwd_throughput", value=1, unit="TFLOPS"),
        _row(arch="h100", schedule="stream", dtype="fp32", metric="memory_bandwidth", value=1000, unit="GB/s",
             params="op=triad;bytes=1000000"),
        _row(arch="h100", schedule="stream", dtype="fp32", metric="time", value=2, unit="ms", params="op=copy;bytes=8"),
    ]  # fmt: skip
    rows = read_measurements([_write(tmp_path, "f.csv", lines)])
    assert measured_time_us(rows[0]) == pytest.approx(1000.0)  # 2e9 FLOP at 2 TFLOPS
    assert measured_time_us(rows[1]) == pytest.approx(4 * 2 * 1e6 * 4 * 100 / 2 / 1e12 * 1e6)
    assert measured_time_us(rows[2]) == pytest.approx(3.5 * 4 * 2 * 1e6 * 4 * 100 / 1e12 * 1e6)
    assert measured_time_us(rows[3]) == pytest.approx(3e6 / 1e12 * 1e6)
    assert measured_time_us(rows[4]) == pytest.approx(2000.0)


def test_real_file_small(tmp_path: Path) -> None:
    """One run over a small shipped file: every row is either predicted or skipped with a reason."""
    path = Path(__file__).resolve().parent.parent / "data" / "measurements" / "thunderkittens_gemm.csv"
    results, summary = run_validate([path], costs="datasheet", jobs=1)
    assert summary["rows"] == len(results) == 14
    assert all((r.predicted_time_us is None) == (r.skipped is not None) for r in results)
    predicted = [r for r in results if r.predicted_time_us is not None]
    assert len(predicted) == 3
    assert all(abs(r.error_pct) < 60 for r in predicted)


def test_tasks_group_shared_predictions_longest_first(tmp_path: Path) -> None:
    """Rows that share a prediction form one task (it runs once, in one process); tasks start longest
    expected first; a row refused before prediction is its own task."""
    from gpusim.calibrate.validate import _tasks

    attn = {"arch": "h100", "dtype": "fp16", "batch": 2, "heads": 4, "seqlen_q": 1024, "seqlen_kv": 1024,
            "head_dim": 64, "causal": 0, "metric": "time", "unit": "us"}  # fmt: skip
    lines = [
        _row(**STREAM, value=5),
        _row(**attn, schedule="attn_fa2_fwd", value=100),
        _row(**{**STREAM, "params": "op=copy;bytes=8388608"}, value=7),
        _row(**attn, schedule="attn_fa2_fwd+attn_fa2_bwd", value=300),
        _row(**{**STREAM, "arch": "GH200 SXM"}, value=10),
        _row(**STREAM, value=6),
    ]
    rows = read_measurements([_write(tmp_path, "t.csv", lines)])
    tasks = [[m.index for m in t] for t in _tasks(rows)]
    assert tasks == [[1, 3], [0, 5], [4], [2]]  # expected cost 400, 5 + 6, 10, 7


def test_parallel_validate_equals_serial(tmp_path: Path) -> None:
    """Per-row tasks in two processes give the serial run's rows, in row order, and its prediction count."""
    lines = [
        _row(**{**STREAM, "params": f"op=copy;bytes={1 << (12 + i % 6)}"}, value=3 + i) for i in range(12)
    ]
    lines += [_row(**{**STREAM, "arch": "L40"}, value=5), _row(**{**STREAM, "schedule": ""}, value=5)]
    path = _write(tmp_path, "p.csv", lines)
    serial, s_summary = run_validate([path], costs="datasheet", jobs=1)
    parallel, p_summary = run_validate([path], costs="datasheet", jobs=2)
    assert [r.as_dict() for r in parallel] == [r.as_dict() for r in serial]
    assert p_summary["predictions_run"] == s_summary["predictions_run"] == 6
    drop = ("wall_s", "jobs")
    assert {k: v for k, v in p_summary.items() if k not in drop} == {
        k: v for k, v in s_summary.items() if k not in drop
    }


def test_accuracy_report_ranks_the_ablations_from_the_same_predictions(tmp_path: Path) -> None:
    """Rows of a file with an ``ablation`` column are scored pairwise in the accuracy report, from the
    predictions validate made (a 4 MiB copy is faster than a 64 MiB one, so that pair is right)."""
    from gpusim.calibrate.accuracy import accuracy_markdown

    def row(nbytes: int, us: float, group: str) -> str:
        fields = {**STREAM, "value": us, "params": f"op=copy;bytes={nbytes}"}
        return _row(**fields) + f",{group}"

    lines = [row(4 << 20, 5.0, "copy_sizes"), row(64 << 20, 50.0, "copy_sizes"), row(8 << 20, 9.0, "")]
    path = _write(tmp_path, "abl.csv", lines, header=HEADER + ",ablation")
    results, summary = run_validate([path], costs="datasheet", jobs=1)
    text = accuracy_markdown(results, summary, [str(path)])
    assert "## Rankings against measured ablations" in text
    assert "1 of 1 pairs ordered as measured (0 predicted ties" in text
    assert "| copy_sizes | h100 | 1/1 | 0 | 100.0% |" in text
    swapped = [row(4 << 20, 50.0, "copy_sizes"), row(64 << 20, 5.0, "copy_sizes")]
    path = _write(tmp_path, "abl2.csv", swapped, header=HEADER + ",ablation")
    results, summary = run_validate([path], costs="datasheet", jobs=1)
    assert "0 of 1 pairs ordered as measured" in accuracy_markdown(results, summary, [str(path)])


def test_accuracy_report_lists_each_overlay_with_its_clock_fitted_values_and_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calibration section reads every overlay in effect: a user overlay (here one that still fits the
    clock, with a parameter at its bound) shows its fitted values, its cross-validated errors and the bound."""
    from gpusim.calibrate.accuracy import calibration_lines

    overlay = {
        "arch": "h100",
        "calibration": {
            "origin": "calibrated", "sustained_clock_mhz": 1500.0, "tensor_issue_efficiency": 1.0,
            "provenance": {
                "fitted": ["sustained_clock_mhz", "tensor_issue_efficiency"], "rows_used": 7,
                "at_bound": ["tensor_issue_efficiency=1 at its upper bound [0.5, 1]; pushed there by row 3"],
                "cross_validation": {"method": "5-fold", "gemm": {"n": 7, "median_abs_pct": 4.25, "p90_abs_pct": 9.0}},
            },
        },
    }  # fmt: skip
    (tmp_path / "h100.yaml").write_text(yaml.safe_dump(overlay))
    monkeypatch.setenv("GPUSIM_CALIBRATION_DIR", str(tmp_path))
    rows = [line for line in calibration_lines() if line.startswith("| h100 |")]
    assert rows == [
        "| h100 | fitted | sustained_clock_mhz 1500, tensor_issue_efficiency 1 | 7 | gemm 4.2 / 9.0 (7) | "
        "tensor_issue_efficiency=1 at its upper bound [0.5, 1] |"
    ]
    shipped_h800 = next(line for line in calibration_lines() if line.startswith("| h800 |"))
    assert shipped_h800.startswith("| h800 | power | energy_scale ")


def test_reuse_unchanged_carries_rows_whose_inputs_are_unchanged_and_repredicts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--markdown stores every row's result beside the report; --reuse-unchanged takes the rows whose
    inputs digest is unchanged from it (the same report), predicts a changed row, and re-predicts every
    row of an arch whose calibration overlay changed."""
    monkeypatch.setenv("GPUSIM_CALIBRATION_DIR", str(tmp_path / "overlays"))
    rows = [_row(**{**STREAM, "params": f"op=copy;bytes={1 << (20 + i)}"}, value=10 + i) for i in range(3)]
    rows.append(_row(**{**STREAM, "arch": "a100", "params": "op=copy;bytes=4194304"}, value=9))
    rows.append(_row(**{**STREAM, "M": "abc"}, value=3))  # refused before predicting: never carried
    csv_path = _write(tmp_path, "m.csv", rows)
    report = tmp_path / "acc.md"
    runner = CliRunner()

    def run(*extra: str) -> dict:
        result = runner.invoke(
            app, ["validate", str(csv_path), "--markdown", str(report), "-j", "1", "--json", *extra]
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    first = run()
    stored = (tmp_path / "acc_rows.csv").read_text().splitlines()
    assert stored[0] == ",".join(("file", "line", "inputs", "arch", "family", "measured_time_us",
                                  "predicted_time_us", "skipped", "costs", "predicted_on", "model"))  # fmt: skip
    assert len(stored) == 1 + 5
    assert first["summary"]["carried_over"] == 0 and "No row was carried over" in report.read_text()
    first_report = report.read_text()

    again = run("--reuse-unchanged")
    assert again["summary"]["carried_over"] == 4 and again["summary"]["predictions_run"] == 0
    assert [r["predicted_time_us"] for r in again["rows"]] == [r["predicted_time_us"] for r in first["rows"]]
    assert "4 of the 5 rows were carried over" in report.read_text()
    assert first_report.split("## Per arch")[1] == report.read_text().split("## Per arch")[1]

    csv_path.write_text(csv_path.read_text().replace("op=copy;bytes=1048576", "op=copy;bytes=8388608"))
    changed = run("--reuse-unchanged")
    assert changed["summary"]["carried_over"] == 3 and changed["summary"]["predictions_run"] == 1

    (tmp_path / "overlays").mkdir()
    overlay = {"arch": "h100", "calibration": {"origin": "calibrated", "hbm_bandwidth_fraction": 0.5}}
    (tmp_path / "overlays" / "h100.yaml").write_text(yaml.safe_dump(overlay))
    refit = run("--reuse-unchanged")
    assert refit["summary"]["carried_over"] == 1  # the a100 row; the three h100 rows are predicted again
    assert refit["rows"][0]["predicted_time_us"] > changed["rows"][0]["predicted_time_us"]


def test_reuse_unchanged_needs_the_report_and_refuses_a_foreign_rows_file(tmp_path: Path) -> None:
    csv_path = _write(tmp_path, "m.csv", [_row(**STREAM, value=10)])
    result = CliRunner().invoke(app, ["validate", str(csv_path), "--reuse-unchanged"])
    assert isinstance(result.exception, InputError) and "needs --markdown" in str(result.exception)
    (tmp_path / "acc_rows.csv").write_text("a,b\n1,2\n")
    result = CliRunner().invoke(
        app, ["validate", str(csv_path), "--markdown", str(tmp_path / "acc.md"), "--reuse-unchanged"]
    )
    assert isinstance(result.exception, InputError) and "not a row-results file" in str(result.exception)


def test_ablate_switches_each_mechanism_off_where_it_is_in_effect(tmp_path: Path) -> None:
    """--ablate predicts the rows again with one mechanism off at a time, only where it can change the
    prediction (power: the h800 overlay's model; the shared tensor core: every arch; pipe coupling: a no-op
    at every shipped overlay's overlap of 1), adds the table and stores the variant rows; --reuse-unchanged
    carries them over like the main rows."""
    gemm = {"arch": "h800", "schedule": "gemm_ws_pingpong", "dtype": "bf16", "M": 512, "N": 512, "K": 1024,
            "metric": "time", "unit": "us"}  # fmt: skip
    csv_path = _write(tmp_path, "m.csv", [_row(**gemm, value=12), _row(**STREAM, value=10)])
    report = tmp_path / "acc.md"

    def run(*extra: str) -> dict:
        result = CliRunner().invoke(
            app,
            ["validate", str(csv_path), "--markdown", str(report), "--ablate", "-j", "1", "--json", *extra],
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    first = run()
    assert first["summary"]["ablations"] == {
        "grid_dispatch": {"rows": 0, "carried_over": 0},  # both grids are persistent
        "l2_clock": {"rows": 0, "carried_over": 0},  # off by default, and no overlay is fitted with it
        "mma_sync_issuing": {"rows": 0, "carried_over": 0},  # neither schedule issues mma.sync
        "mma_sync_warps": {
            "rows": 0,
            "carried_over": 0,
        },  # h800 has the table; neither schedule issues mma.sync
        "pipe_coupling": {"rows": 0, "carried_over": 0},
        "power": {"rows": 1, "carried_over": 0},
        "shared_tensor": {"rows": 2, "carried_over": 0},
        "smem_fills": {"rows": 0, "carried_over": 0},
        "smem_operands": {"rows": 0, "carried_over": 0},
        "sync_latency": {"rows": 0, "carried_over": 0},  # off by default, and no arch has the times yet
    }
    text = report.read_text()
    assert "--markdown docs/accuracy.md --ablate`" in text.replace(str(report), "docs/accuracy.md")
    table = text.split("## Mechanism ablation")[1].split("\n## ")[0]
    assert "| pipe_coupling | - | 0 | in effect on no predicted row" in table
    assert "| power | gemm | 1 |" in table and "| shared_tensor | gemm | 1 |" in table
    stored = (tmp_path / "acc_ablation_rows.csv").read_text().splitlines()
    assert [line.rsplit(",", 1)[1] for line in stored] == [
        "model",
        "-power",
        "-shared_tensor",
        "-shared_tensor",
    ]
    again = run("--reuse-unchanged")
    assert again["summary"]["ablations"]["shared_tensor"] == {"rows": 2, "carried_over": 2}
    assert (tmp_path / "acc_ablation_rows.csv").read_text().splitlines() == stored
    result = CliRunner().invoke(app, ["validate", str(csv_path), "--ablate"])
    assert isinstance(result.exception, InputError) and "needs --markdown" in str(result.exception)


def test_reuse_unchanged_predicts_again_a_row_that_was_over_the_work_limit(tmp_path: Path) -> None:
    """The digest does not cover gpusim's code, which may have become faster: a row skipped for the work
    limit is never carried over."""
    gemm = {"arch": "h100", "schedule": "gemm_ws_pingpong", "dtype": "bf16", "M": 512, "N": 512, "K": 1024,
            "metric": "time", "unit": "us"}  # fmt: skip
    csv_path = _write(tmp_path, "m.csv", [_row(**gemm, value=12)])
    args = ["validate", str(csv_path), "--markdown", str(tmp_path / "acc.md"), "-j", "1", "--json",
            "--max-events", "50"]  # fmt: skip
    first = json.loads(CliRunner().invoke(app, args).stdout)
    assert "work limit" in first["rows"][0]["skipped"]
    again = json.loads(CliRunner().invoke(app, [*args, "--reuse-unchanged"]).stdout)
    assert again["summary"]["carried_over"] == 0 and "work limit" in again["rows"][0]["skipped"]
    kept = json.loads(CliRunner().invoke(app, [*args, "--reuse-unchanged", "--reuse-over-limit"]).stdout)
    assert kept["summary"]["carried_over"] == 1 and "work limit" in kept["rows"][0]["skipped"]
    refused = CliRunner().invoke(app, [*args, "--reuse-over-limit"])
    assert isinstance(refused.exception, InputError) and "needs --reuse-unchanged" in str(refused.exception)


def _row_digests(measurements: list) -> list[str]:
    """Each row's ``--reuse-unchanged`` inputs digest (datasheet costs), in row order."""
    from gpusim.calibrate.carryover import Carryover

    carry = Carryover(costs="datasheet", model=None, max_events=None)
    carry.digest_rows(measurements)
    return [carry.digests[m.index] for m in measurements]


def test_a_changed_schedule_file_changes_the_digests_of_the_rows_that_read_it_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's inputs digest covers the schedules its prediction can read: the ones it names, every one
    its auto: search may try, and the parts their extends chains compose; a file no row reads changes no
    digest."""
    import shutil

    import gpusim.calibrate.accuracy as accuracy
    import gpusim.calibrate.carryover as carryover
    import gpusim.schedule.compose as compose
    from gpusim.explore.spaces import GEMM_SCHEDULES
    from gpusim.schedule.load import schedules_dir

    copy = tmp_path / "schedules"
    shutil.copytree(schedules_dir(), copy)
    monkeypatch.setattr(carryover, "schedules_dir", lambda: copy)
    monkeypatch.setattr(compose, "schedules_dir", lambda: copy)  # where extends names resolve
    monkeypatch.setattr(accuracy, "schedules_dir", lambda: copy)
    gemm = {"arch": "h100", "dtype": "bf16", "M": 512, "N": 512, "K": 1024, "metric": "time", "unit": "us"}
    rows = [_row(**STREAM, value=10), _row(**{**gemm, "schedule": "gemm_ws_pingpong"}, value=12),
            _row(**{**gemm, "schedule": "auto:gemm"}, value=12),
            _row(**{**gemm, "schedule": "attn_bwd_preprocess+attn_fa3_bwd"}, value=12)]  # fmt: skip
    measurements = read_measurements([_write(tmp_path, "m.csv", rows)])

    before = _row_digests(measurements)
    assert "gemm_splitk_reduce" not in GEMM_SCHEDULES
    unread = copy / "gemm_splitk_reduce.yaml"
    unread.write_text(unread.read_text() + "\n# changed\n")
    assert _row_digests(measurements) == before  # no row reads it
    (copy / "gemm_ws_pingpong.yaml").write_text(
        (copy / "gemm_ws_pingpong.yaml").read_text() + "\n# changed\n"
    )
    after = _row_digests(measurements)
    assert [a == b for a, b in zip(before, after, strict=True)] == [True, False, False, True]
    (copy / "parts" / "attention.yaml").write_text(
        (copy / "parts" / "attention.yaml").read_text() + "\n# x\n"
    )
    again = _row_digests(
        measurements
    )  # a part: the rows whose schedules extend it (FA3 backward and its pre-kernel)
    assert [a == b for a, b in zip(after, again, strict=True)] == [True, True, True, False]
    (copy / "parts" / "gemm.yaml").write_text((copy / "parts" / "gemm.yaml").read_text() + "\n# x\n")
    last = _row_digests(measurements)
    assert [a == b for a, b in zip(again, last, strict=True)] == [True, False, False, True]
    (copy / "parts" / "unused.yaml").write_text("mixes: {}\n")  # a part nothing extends: no row reads it
    assert _row_digests(measurements) == last


def test_the_searches_name_only_the_schedules_a_row_digest_covers() -> None:
    """An auto: row's digest covers GEMM_SCHEDULES / ATTENTION_SCHEDULES: every candidate the spaces
    build must name one of them, or a carried row could hide a change to a schedule it reads."""
    from gpusim.api import archs, load_arch
    from gpusim.explore.spaces import ATTENTION_SCHEDULES, GEMM_SCHEDULES, attention_space, gemm_space

    for arch_id in archs():
        arch = load_arch(arch_id, costs="datasheet")
        for dtype in ("bf16", "fp16", "fp8_e4m3", "tf32", "fp32"):
            for size in (256, 5120, 8192):
                problem = {"M": size, "N": size, "K": size, "dtype": dtype}
                assert {c.schedule for c in gemm_space(arch, problem)} <= set(GEMM_SCHEDULES)
        assert {c.schedule for c in attention_space(arch, {})} <= set(ATTENTION_SCHEDULES)


def test_every_shipped_measurement_row_parses() -> None:
    """No row of data/measurements is malformed (a free-text ``params`` entry with ';' or ',' in it makes
    one): a malformed row is reported and never predicted, so it would drop out of the accuracy figures."""
    data = sorted((Path(__file__).resolve().parent.parent / "data" / "measurements").glob("*.csv"))
    if not data:
        pytest.skip("no measurement files next to the tests")
    rows = read_measurements(data)
    malformed = [f"{Path(m.file).name}:{m.line}: {m.error}" for m in rows if m.error]
    assert not malformed, f"{len(malformed)} malformed rows, e.g. {malformed[:3]}"
    assert len(rows) > 900


def test_a_changed_arch_file_changes_the_digests_of_that_archs_rows_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's inputs digest covers its own arch's file (reached through an alias too); a row naming no
    built-in arch covers every arch file, since any of them could come to carry its name."""
    import shutil

    import gpusim.calibrate.carryover as carryover
    from gpusim.arch import archs_dir

    copy = tmp_path / "archs"
    shutil.copytree(archs_dir(), copy)
    monkeypatch.setattr(carryover, "builtin_arch_path", lambda arch_id: copy / f"{arch_id}.yaml")
    monkeypatch.setattr(carryover, "arch_files", lambda: sorted(copy.glob("*.yaml")))
    rows = [_row(**STREAM, value=10), _row(**{**STREAM, "arch": "a100"}, value=10),
            _row(**{**STREAM, "arch": "sm_90"}, value=10), _row(**{**STREAM, "arch": "no_such_gpu"}, value=10)]  # fmt: skip
    measurements = read_measurements([_write(tmp_path, "m.csv", rows)])

    before = _row_digests(measurements)
    (copy / "a100.yaml").write_text((copy / "a100.yaml").read_text() + "\n# changed\n")
    after = _row_digests(measurements)
    assert [a == b for a, b in zip(before, after, strict=True)] == [True, False, True, False]
    (copy / "h100.yaml").write_text((copy / "h100.yaml").read_text() + "\n# changed\n")
    last = _row_digests(measurements)
    assert [a == b for a, b in zip(after, last, strict=True)] == [False, True, False, False]


def test_the_report_names_built_in_schedules_by_their_path_in_the_repository_not_this_checkout() -> None:
    from gpusim.calibrate.accuracy import portable_reason
    from gpusim.schedule.load import schedules_dir

    reason = f"auto:gemm on v100: no schedule is legal (refused: {schedules_dir() / 'gemm_sync.yaml'}: roles.warps)"
    assert (
        portable_reason(reason)
        == "auto:gemm on v100: no schedule is legal (refused: schedules/gemm_sync.yaml: roles.warps)"
    )
    assert portable_reason("/elsewhere/my.yaml: refused") == "/elsewhere/my.yaml: refused"


def test_an_ablation_variant_names_each_mechanism_once() -> None:
    """The variant of a run with ``--model +power`` that switches power off is ``-power``, not
    ``+power,-power`` (a model text naming a mechanism twice is refused)."""
    from gpusim.calibrate.ablation import variant_model
    from gpusim.mechanisms import parse_model

    assert variant_model(None, "shared_tensor") == "-shared_tensor"
    assert variant_model("+power", "shared_tensor") == "+power,-shared_tensor"
    assert variant_model("+power", "power") == "-power"
    assert variant_model("+power,-smem_fills", "power") == "-smem_fills,-power"
    for model in (None, "+power", "+power,-smem_fills"):
        parse_model(variant_model(model, "power"))


def test_a_launch_past_the_planned_size_is_skipped_with_that_limit_and_predicted_again(
    tmp_path: Path,
) -> None:
    """A 4 GiB stream is 1,048,576 grid-stride work units, past the units gpusim plans: the row says so (not
    'work limit', which --max-events would raise), and --reuse-unchanged predicts it again."""
    huge = {**STREAM, "params": "op=copy;bytes=4294967296"}
    csv_path = _write(tmp_path, "m.csv", [_row(**huge, value=3000)])
    args = ["validate", str(csv_path), "--markdown", str(tmp_path / "acc.md"), "-j", "1", "--json"]
    first = json.loads(CliRunner().invoke(app, args).stdout)
    reason = first["rows"][0]["skipped"]
    assert "1,048,576 work units" in reason and "gpusim simulates at most" in reason, reason
    again = json.loads(CliRunner().invoke(app, [*args, "--reuse-unchanged"]).stdout)
    assert again["summary"]["carried_over"] == 0


def test_an_interrupted_report_run_resumes_from_its_journal(tmp_path: Path, monkeypatch) -> None:
    """Each row predicted by `validate --markdown` is appended to a journal beside the report as it
    finishes: a run stopped midway (Ctrl-C, a machine that goes away) leaves the rows it finished there,
    the next run with --reuse-unchanged takes them instead of predicting them again (a record cut short
    is left out), and a run that completes removes the journal."""
    import gpusim.calibrate.predictor as predictor_module

    sizes = ("1048576", "2097152", "4194304")
    lines = [_row(**{**STREAM, "params": f"op=copy;bytes={b}"}, value=10 + i) for i, b in enumerate(sizes)]
    csv_path = _write(tmp_path, "m.csv", lines)
    report = tmp_path / "acc.md"
    journal = tmp_path / "acc_rows.journal.csv"
    args = ["validate", str(csv_path), "--markdown", str(report), "-j", "1", "--json"]
    real_row = predictor_module.Predictor.row
    calls: list[int] = []

    def stops_at_the_third(self, m, arch, *rest, **kw):  # type: ignore[no-untyped-def]
        calls.append(m.line)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_row(self, m, arch, *rest, **kw)

    monkeypatch.setattr(predictor_module.Predictor, "row", stops_at_the_third)
    stopped = CliRunner().invoke(app, args)
    assert stopped.exit_code != 0 and not report.exists()
    recorded = journal.read_text().splitlines()
    assert len(recorded) == 1 + 2  # header and the two rows finished
    journal.write_text("\n".join([*recorded, recorded[-1][:20]]) + "\n")  # a last record cut short

    monkeypatch.setattr(predictor_module.Predictor, "row", real_row)
    resumed = CliRunner().invoke(app, [*args, "--reuse-unchanged"])
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)["summary"]
    assert summary["carried_over"] == 2 and summary["predictions_run"] == 1
    assert not journal.exists() and len((tmp_path / "acc_rows.csv").read_text().splitlines()) == 1 + 3
    fresh = CliRunner().invoke(app, args)  # without --reuse-unchanged every row is predicted again
    assert json.loads(fresh.stdout)["summary"]["carried_over"] == 0
    assert [r["predicted_time_us"] for r in json.loads(fresh.stdout)["rows"]] == [
        r["predicted_time_us"] for r in json.loads(resumed.stdout)["rows"]
    ]


def test_a_journal_that_is_not_one_is_refused_in_one_line(tmp_path: Path) -> None:
    """A garbled journal beside the report stops --reuse-unchanged with one line naming the file and what to
    do (never a traceback); without --reuse-unchanged it is replaced."""
    csv_path = _write(tmp_path, "m.csv", [_row(**STREAM, value=10)])
    report = tmp_path / "acc.md"
    journal = tmp_path / "acc_rows.journal.csv"
    journal.write_text("not,a,journal\n1,2,3\n")
    args = ["validate", str(csv_path), "--markdown", str(report), "-j", "1", "--json"]
    refused = CliRunner().invoke(app, [*args, "--reuse-unchanged"])
    assert isinstance(refused.exception, InputError)
    assert "acc_rows.journal.csv" in str(refused.exception) and "not a row-results file" in str(
        refused.exception
    )
    assert CliRunner().invoke(app, args).exit_code == 0 and not journal.exists()
