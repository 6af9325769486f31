"""Bad inputs that used to be accepted (exit 0), ran for minutes or raised a non-gpusim exception, each now
refused before any work with one line and a documented exit status (issue 13's second corpus).

CLI cases run in forked children (tests/fuzzkit.py) on tiny problems; API cases call gpusim directly.
Deterministic; the whole file runs in a few seconds."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzkit import describe, problems, run_forked

import gpusim
import gpusim.cli  # imported once here, so each forked run starts at once
from gpusim.arch import archs_dir
from gpusim.resources import builtin_dir

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "M=128", "--set", "N=128", "--set", "K=64"]
CSV_HEADER = "source,arch,schedule,dtype,M,N,K,batch,heads,seqlen_q,seqlen_kv,head_dim,causal,metric,value,unit,notes,params"
CSV_ROW = "s,v100,gemm_sync,fp16,256,256,256,,,,,,,time,0.05,ms,n,"
H100 = (archs_dir() / "h100.yaml").read_text(encoding="utf-8")


def _arch(tmp_path: Path, name: str, old: str, new: str) -> str:
    assert old in H100
    path = tmp_path / f"{name}.yaml"
    path.write_text(H100.replace(old, new, 1).replace("id: h100", f"id: {name}", 1), encoding="utf-8")
    return str(path)


def _overlay(tmp: Path, name: str, edit: Callable[[dict[str, Any]], object]) -> str:
    """The shipped h100 overlay with ``edit`` applied to its ``provenance.residuals``."""
    data = yaml.safe_load((archs_dir() / "calibrated" / "h100.yaml").read_text(encoding="utf-8"))
    edit(data["calibration"]["provenance"]["residuals"])
    path = tmp / f"overlay_{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def _cases(tmp: Path) -> list[tuple[str, list[str], int]]:
    """(name, gpusim arguments, expected exit status)."""
    deepbench = str(builtin_dir("data") / "measurements" / "deepbench_v100_gemm.csv")
    softmax = (ROOT / "examples" / "row_softmax.yaml").read_text(encoding="utf-8")
    (tmp / "flops.yaml").write_text(softmax.replace("flops: 0 ", "flops: -1 ", 1), encoding="utf-8")
    (tmp / "unclosed.csv").write_text(
        f"{CSV_HEADER}\n{CSV_ROW.replace('n,', chr(34) + 'n,')}\n", encoding="utf-8"
    )
    (tmp / "nul.csv").write_text(
        f"{CSV_HEADER}\n{CSV_ROW.replace('n,', 'n' + chr(0) + ',')}\n", encoding="utf-8"
    )
    overlay = str(archs_dir() / "calibrated" / "h100.yaml")
    ws = ["predict", "gemm_ws_pingpong", "--arch", "h100", *TINY, "-q", "--json"]
    os.mkfifo(tmp / "fifo.json")
    tcgen05 = (ROOT / "schedules" / "gemm_tcgen05.yaml").read_text(encoding="utf-8")
    (tmp / "gemm_tcgen05.yaml").write_text(
        tcgen05.replace("        - when: is_last_split\n          do:\n", "        - when: is_last_split\n"
                        "          do:\n          - - sts: {buf: c, bytes: 1}\n", 1), encoding="utf-8")  # fmt: skip
    (tmp / "parts").symlink_to(ROOT / "schedules" / "parts")
    (tmp / "problems.csv").write_text("M,N,K\n256,256,256\n", encoding="utf-8")
    sync_text = (ROOT / "schedules" / "gemm_sync.yaml").read_text(encoding="utf-8")
    (tmp / "args5.yaml").write_text(sync_text + "templates:\n  warp_gemm:\n    args: 5\n", encoding="utf-8")
    stream_text = (ROOT / "schedules" / "stream.yaml").read_text(encoding="utf-8")
    (tmp / "nl_name.yaml").write_text(stream_text.replace("schedule: stream\n", 'schedule: "a\\nb"\n', 1))
    (tmp / "empty_name.yaml").write_text(stream_text.replace("schedule: stream\n", "schedule: ''\n", 1))
    parts = ROOT / "schedules" / "parts"
    warps = (parts / "gemm_warps.yaml").read_text(encoding="utf-8")
    (tmp / "frac_warps.yaml").write_text(warps.replace("for: {k: [k_begin, k_end]}", "for: {k: [0, 2.5]}", 1))
    mma = (parts / "gemm_mma_sync.yaml").read_text(encoding="utf-8")
    (tmp / "frac_mma.yaml").write_text(
        mma.replace("extends: parts/gemm_warps", "extends: frac_warps.yaml", 1)
    )
    (tmp / "frac_sync.yaml").write_text(
        sync_text.replace("extends: parts/gemm_mma_sync", "extends: frac_mma.yaml", 1)
    )
    sync = ["predict", "gemm_sync", "--arch", "v100", *TINY, "-q", "--json"]
    return [
        (
            "schedule: a loop bound of 2.5",
            ["predict", str(tmp / "frac_sync.yaml"), "--arch", "v100", *TINY, "-q"],
            2,
        ),
        (
            "schedule: a name with a newline",
            ["predict", str(tmp / "nl_name.yaml"), "--arch", "h100", "-q"],
            2,
        ),
        ("schedule: an empty name", ["predict", str(tmp / "empty_name.yaml"), "--arch", "h100", "-q"], 2),
        ("fit: only commas", ["calibrate", deepbench, "--arch", "v100", "--fit", ",", "--dry-run"], 2),
        (
            "fit: a name twice",
            ["calibrate", deepbench, "--arch", "v100", "--fit", "latency_scale,latency_scale", "--dry-run"],
            2,
        ),
        ("tune: an arch list", ["tune", "auto:gemm", "--arch", "h100,a100"], 2),
        ("compare: empty arch after a comma", ["compare", "gemm_sync", "--arch", "v100,", *TINY], 2),
        (
            "compare: a key twice in one --vs",
            ["compare", "gemm_sync", "--arch", "v100", *TINY, "--vs", "BM=64,BM=128"],
            2,
        ),
        ("roofline: a key no schedule takes", ["roofline", "--set", "x=1", "-q"], 2),
        ("split-K: more splits than k-tiles", [*sync, "--set", "SPLITS=100000"], 3),
        ("mma: k not a whole instruction", [*sync, "--set", "BK=3"], 3),
        ("arch: 1e9 SMs", ["archs", "show", _arch(tmp, "sms", "sm_count: 132", "sm_count: 1000000000")], 2),
        (
            "arch: a 1e-300 MHz clock",
            ["archs", "show", _arch(tmp, "clk", "boost_clock_mhz: 1980", "boost_clock_mhz: 1e-300")],
            2,
        ),
        (
            "arch: 1e300 B/s HBM",
            [
                "archs",
                "show",
                _arch(tmp, "bw", "hbm_bandwidth_bytes_per_s: 3.35e12", "hbm_bandwidth_bytes_per_s: 1e300"),
            ],
            2,
        ),
        (
            "arch: a 1e30 ns HBM latency",
            ["archs", "show", _arch(tmp, "lat", "hbm_latency_ns: ", "hbm_latency_ns: 1.0e30 #")],
            2,
        ),
        ("arch: an id with a newline", ["archs", "show", _arch(tmp, "nl", "id: h100", 'id: "h100\\n"')], 2),
        ("overlay fitted for another arch", [*sync, "--overlay", overlay], 2),
        (
            "overlay: residuals without n",
            [*ws, "--overlay", _overlay(tmp, "no_n", lambda r: r["gemm"].pop("n"))],
            2,
        ),
        (
            "overlay: a NaN quantile",
            [*ws, "--overlay", _overlay(tmp, "nan_q", lambda r: r["gemm"].update(q90=math.nan))],
            2,
        ),
        (
            "overlay: residuals a list",
            [*ws, "--overlay", _overlay(tmp, "list", lambda r: r.update(gemm=[1]))],
            2,
        ),
        ("trace: a FIFO (the write would block)", [*sync, "--trace", str(tmp / "fifo.json")], 2),
        (
            "schedule: a list among a when block's statements",
            ["predict", str(tmp / "gemm_tcgen05.yaml"), "--arch", "b200", *TINY, "-q"],
            2,
        ),
        (
            "schedule: a template's args not a mapping",
            ["predict", str(tmp / "args5.yaml"), *TINY[:2], "-q"],
            2,
        ),
        ("schedule: negative metrics.flops", ["predict", str(tmp / "flops.yaml"), "-q", "--json"], 2),
        (
            "--set: a negative count where the default is not (it would run no loop and look fast)",
            ["predict", "gemm_splitk_reduce", "--arch", "a100", "--set", "PARTITIONS_PER_STAGE=-1", "-q"],
            2,
        ),
        ("csv: an unclosed quote", ["validate", str(tmp / "unclosed.csv"), "-j", "1", "-q", "--json"], 2),
        ("csv: a NUL byte", ["validate", str(tmp / "nul.csv"), "-j", "1", "-q", "--json"], 2),
        ("rank-check: nothing to order", ["rank-check", deepbench, "-j", "1", "--json"], 2),
        (
            "launch: 4M CTAs",
            [
                "predict",
                "gemm_ws_pingpong",
                "--arch",
                "h100",
                "--set",
                "M=262144",
                "--set",
                "N=262144",
                "--set",
                "K=64",
                "-q",
            ],
            5,
        ),
    ]


def test_refused_in_one_line_with_the_documented_status(tmp_path: Path) -> None:
    broken = []
    for name, args, expected in _cases(tmp_path):
        outcome = run_forked(args, timeout_s=60.0)
        found = problems(outcome)
        if outcome.rc != expected:
            found.append(f"exit status {outcome.rc}, expected {expected}")
        if found:
            broken.append(f"{name}: {found}; {describe(outcome)}")
    assert not broken, "\n".join(broken)


SMALL = {"M": 128, "N": 128, "K": 64}


@pytest.mark.parametrize(
    "kwargs",
    [{"M": True}, {"max_events": -1}, {"max_events": math.nan}, {"max_events": 0}, {"deadline_s": "soon"},
     {"deadline_s": math.inf}, {"resources": 5}, {"costs": 5}, {"on_progress": 5}],
    ids=repr,
)  # fmt: skip
def test_predict_refuses_arguments_of_the_wrong_kind(kwargs: dict[str, object]) -> None:
    with pytest.raises(gpusim.InputError) as info:
        gpusim.predict("gemm_sync", "v100", **{**SMALL, **kwargs})
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize(
    "call",
    [lambda: gpusim.compare(["gemm_sync"]), lambda: gpusim.compare(None), lambda: gpusim.validate("/dev/null"),
     lambda: gpusim.validate([1, 2]), lambda: gpusim.predict(["gemm_sync"], "v100"),
     lambda: gpusim.predict("gemm_sync", 5), lambda: gpusim.load_arch("h100\n")],
    ids=["compare-str", "compare-none", "validate-path", "validate-ints", "predict-list", "predict-arch-int",
         "arch-newline"],
)  # fmt: skip
def test_api_entry_points_refuse_wrong_types_with_gpusim_errors(call: object) -> None:
    with pytest.raises(gpusim.InputError):
        call()  # type: ignore[operator]


def test_attribution_reads_each_timeline_once_however_many_jumps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The critical-path attribution merged every unit's whole timeline again for each fast-forward jump
    it walked (attn_fa2_bwd at batch 64 spent 60 s there); now once per classify call."""
    import gpusim.report.attribution as attribution

    calls = {"busy": 0, "classify": 0}
    busy, classify = attribution._cause_timelines, attribution.classify

    def counting_busy(*args: object) -> object:
        calls["busy"] += 1
        return busy(*args)  # type: ignore[arg-type]

    def counting_classify(*args: object) -> object:
        calls["classify"] += 1
        return classify(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(attribution, "_cause_timelines", counting_busy)
    monkeypatch.setattr(attribution, "classify", counting_classify)
    pred = gpusim.predict("gemm_ws_pingpong", "h100", M=2048, N=2048, K=4096)
    assert pred.attribution and calls["classify"] >= 1
    assert 1 <= calls["busy"] <= calls["classify"]


@pytest.mark.parametrize(
    "call",
    [lambda: gpusim.load_arch("h100", foo=1), lambda: gpusim.load_schedule("gemm_sync", arch="h100"),
     lambda: gpusim.predict("gemm_sync", "v100", "datasheet"), lambda: gpusim.compare(),
     lambda: gpusim.Variant("gemm_sync", "v100", M=128)],
    ids=["load_arch-kw", "load_schedule-kw", "predict-positional", "compare-none", "variant-kw"],
)  # fmt: skip
def test_calls_the_signature_cannot_bind_raise_a_gpusim_error(call: object) -> None:
    """Still a TypeError (as Python raises), and also a one-line gpusim error naming what is accepted."""
    with pytest.raises(gpusim.ArgumentError, match=r"^gpusim\.\w+: .*; it takes \(") as info:
        call()  # type: ignore[operator]
    assert isinstance(info.value, TypeError) and isinstance(info.value, gpusim.GpusimError)


@pytest.mark.parametrize("kind", ["fifo", "loop"])
def test_a_hostile_file_in_the_calibration_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     kind: str) -> None:  # fmt: skip
    """A FIFO or a symlink loop where ``calibrate`` would write its overlay is refused before the fit (the
    write blocked forever; the loop was a RuntimeError), and predictions skip it as no overlay."""
    overlays = tmp_path / "overlays"
    overlays.mkdir()
    target = overlays / "h100.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(target)
    rows = tmp_path / "rows.csv"
    rows.write_text(f"{CSV_HEADER}\n{CSV_ROW}\n", encoding="utf-8")
    monkeypatch.setenv("GPUSIM_CALIBRATION_DIR", str(overlays))
    calibrate = run_forked(
        ["calibrate", str(rows), "--arch", "h100", "-q", "--fit", "latency_scale"], timeout_s=60.0
    )
    assert calibrate.rc == 2 and not problems(calibrate), describe(calibrate)
    predict = run_forked(
        ["predict", "gemm_ws_pingpong", "--arch", "h100", *TINY, "-q", "--json"], timeout_s=60.0
    )
    assert predict.rc == 0 and not problems(predict), describe(predict)
