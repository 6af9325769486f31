#!/usr/bin/env python3
"""Convert ../shared/measured/*.csv into gpusim's measurement format (data/measurements/*.csv).

Rerunnable: ``python data/convert_measured.py [SOURCE_DIR]`` (default: the shared folder next to the
repository). GPU names become arch ids, kernels become schedule names; the original GPU and kernel
names are kept at the front of ``notes``. Every source row is kept (rows gpusim cannot predict get an
empty ``schedule`` and an ``unmapped=...`` reason in ``params``), except in the large gpu-benches file,
where only the rows a prediction can use are converted (see data/measurements/README.md).
"""

from __future__ import annotations

import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "measurements"
DEFAULT_SRC = HERE.parent.parent / "shared" / "measured"

COLUMNS = [
    "source", "arch", "schedule", "dtype", "M", "N", "K", "batch", "heads", "seqlen_q", "seqlen_kv",
    "head_dim", "causal", "metric", "value", "unit", "notes", "params",
]  # fmt: skip

# Exact GPU names seen in the sources -> arch ids. Names not listed keep their original text in
# `arch` so that `gpusim validate` reports them as skipped ("unknown arch 'GH200 SXM'").
GPU_TO_ARCH = {
    "V100 (NVIDIA DGX-1; SXM2)": "v100",
    "Tesla V100-SXM2-16GB": "v100",
    "V100": "v100_pcie",  # gpu-benches: 80 SMs at 1380 MHz -> the PCIe part (source notes)
    "A100 80GB SXM4": "a100",
    "A100 SXM": "a100",
    "A100 SXM4 80GB": "a100",
    "A100-SXM4-80GB": "a100",
    "A100 80GB": "a100",  # gpu-benches a100_80.txt
    "A100 PCIe": "a100_pcie",
    "A100-PCIE-40GB": "a100_pcie",
    "H100 80GB SXM5": "h100",
    "H100 SXM": "h100",
    "H100 80GB HBM3 (SXM)": "h100",
    "H100 80GB HBM3": "h100",
    "H100": "h100",
    "H100 (per kernels/flux/Makefile GPU := H100; not stated next to numbers)": "h100",
    "H100 PCIe": "h100_pcie",
    "H100 PCIe (114 SMs, 350 W)": "h100_pcie",
    "H800 SXM5": "h800",
    "H800 PCIe": "h800_pcie",
    "H200": "h200",
    "H200 SXM": "h200",
    "H20": "h20",
    "B200": "b200",
    "B200 SXM": "b200",
    "B200 180GB": "b200",
    "GB200 SXM": "gb200",
    "B300 SXM": "b300",
}

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int16")


def clean(text: str) -> str:
    """A value safe inside ``key=value;...`` params."""
    return re.sub(r"[;=,]", " ", text).strip()


def norm_dtype(text: str) -> str:
    t = text.strip().lower()
    for d in DTYPES:
        if t.startswith(d):
            return d
    return t


def out_row(src: dict[str, str], **changes: str) -> dict[str, str]:
    row = {c: src.get(c, "") for c in COLUMNS}
    row["arch"] = GPU_TO_ARCH.get(src["gpu"], src["gpu"])
    row["schedule"] = ""
    row["dtype"] = norm_dtype(src.get("dtype", ""))
    row["notes"] = f"gpu: {src['gpu']}; kernel: {src['kernel']}; {src.get('notes', '')}"
    row.update(changes)
    return row


def add_params(row: dict[str, str], **extra: object) -> None:
    parts = [p for p in row["params"].split(";") if p.strip()]
    parts += [f"{k}={v}" for k, v in extra.items()]
    row["params"] = ";".join(parts)


def unmapped(row: dict[str, str], reason: str) -> dict[str, str]:
    row["schedule"] = ""
    add_params(row, unmapped=clean(reason))
    return row


# ---- per-file converters -------------------------------------------------------------------------


def conv_gemm_library(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """torch.mm / cuBLAS rows -> auto:gemm; time/throughput pairs of one run keep the time row."""
    out = []
    times = {
        (r["gpu"], r["dtype"], r["M"], r["N"], r["K"], r["params"]) for r in rows if r["metric"] == "time"
    }
    for r in rows:
        metric = r["metric"]
        row = out_row(r, schedule="auto:gemm")
        if metric.startswith("max_") and "throughput" in metric:
            row["metric"] = "throughput"
            add_params(row, source_metric=metric)
        if metric == "throughput" and (r["gpu"], r["dtype"], r["M"], r["N"], r["K"], r["params"]) in times:
            add_params(row, duplicate="time row of the same run")
        if not (r["M"] and r["N"] and r["K"]):
            unmapped(row, "problem shape not given (M N K blank)")
        out.append(row)
    return out


def conv_deepgemm(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for r in rows:
        row = out_row(r, schedule="gemm_fp8_deepgemm")
        kernel = r["kernel"].lower()
        groups = int(r["batch"] or 1)
        m, n, k = (int(r[c]) for c in ("M", "N", "K"))
        if "contiguous" in kernel:
            add_params(row, groups=groups, layout="contiguous")
        elif "masked" in kernel:
            add_params(row, groups=groups, layout="masked")
        if r["metric"] == "memory_bandwidth":
            # the README's formula (notes): G*(M*K + K*N + 2*M*N) bytes; same run as the TFLOPS row
            add_params(
                row, bytes_moved=groups * (m * k + k * n + 2 * m * n), duplicate="TFLOPS row of the same run"
            )
        elif r["metric"].startswith("speedup"):
            unmapped(row, "speedup relative to an unpublished internal CUTLASS baseline")
        out.append(row)
    return out


def conv_flash(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for r in rows:
        kernel = r["kernel"].lower()
        if "fwd+bwd" in kernel and "flashattention2" in kernel:
            sched = "attn_fa2_fwd+attn_fa2_bwd"
        elif "flashattention3 fwd" in kernel:
            sched = "attn_fa3_fwd"
        elif "flashattention2 fwd" in kernel:
            sched = "attn_fa2_fwd"
        else:
            sched = ""
        row = out_row(r, schedule=sched)
        if not sched:
            unmapped(row, f"no gpusim schedule for {r['kernel']}")
        out.append(row)
    return out


def conv_thunderkittens(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    # levels whose structure gemm_tcgen05 has: 08 = warp-specialized pipeline with the epilogue
    # overlapped through double-buffered TMEM accumulators (1-CTA MMA); 09 and the full kernel = 2-CTA.
    mapped = {"level=08": {"PAIR": 0, "BN": 256}, "level=09": {"PAIR": 1, "BN": 256}}
    out = []
    for r in rows:
        row = out_row(r)
        params = mapped.get(r["params"].strip())
        if "full GEMM kernel" in r["kernel"]:
            params = {"PAIR": 1, "BN": 256, "CLUSTER_N": 2}
        if params is not None and r["M"]:
            row["schedule"] = "gemm_tcgen05"
            add_params(row, **params)
        else:
            why = r["kernel"]
            if not r["M"]:
                why += " (shape not stated)"
            unmapped(row, f"no gpusim schedule models {why}")
        out.append(row)
    return out


def conv_misc(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for r in rows:
        row = out_row(r)
        if "babelstream mul" in r["kernel"] and r["metric"] == "gpu_time":
            row["schedule"] = "stream"
            row["metric"] = "time"
            elems = int(r["M"])
            add_params(row, op="scale", bytes=elems * {"int8": 1, "int16": 2}.get(row["dtype"], 4))
        elif "babelstream" in r["kernel"]:
            unmapped(row, "bandwidth utilisation relative to an unshown peak")
        else:
            unmapped(row, "device fact, not a kernel run")
        out.append(row)
    return out


STREAM_OPS = {
    "init": "init",
    "read": "read",
    "scale": "scale",
    "triad": "triad",
    "3pt": "3pt",
    "5pt": "5pt",
}  # 1pt: no such kernel in gpu-stream/main.cu at any commit, so no schedule
L2_BLOCKS = 100_000
"""gpu-l2-cache's block count behind the published files: every row's exec time equals
per-block bytes x 100,000 / bandwidth (main.cu at HEAD says 200,000; see schedules/stream_l2.yaml)."""


def conv_gpu_benches(rows: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, int]]:
    """DRAM stream bandwidth at the highest occupancy, and L2 read bandwidth at sets that fit in L2."""
    left_out: dict[str, int] = defaultdict(int)
    best: dict[tuple[str, str], dict[str, str]] = {}
    out = []
    l2_sizes_kb = {"a100": 40 * 1024, "h100_pcie": 50 * 1024, "h200": 50 * 1024, "L40": 96 * 1024}
    for r in rows:
        kernel = r["kernel"]
        params = dict(p.split("=", 1) for p in r["params"].split(";") if "=" in p)
        if kernel.startswith("gpu-stream") and r["metric"] == "dram_stream_bandwidth":
            key = (r["gpu"], kernel)
            occ = float(params.get("occupancy_pct", 0))
            old = best.get(key)
            if old is None or occ > float(
                dict(p.split("=", 1) for p in old["params"].split(";"))["occupancy_pct"]
            ):
                if old is not None:
                    left_out["DRAM stream rows below the highest occupancy"] += 1
                best[key] = r
            else:
                left_out["DRAM stream rows below the highest occupancy"] += 1
        elif kernel.startswith("gpu-l2-cache") and r["metric"] == "effective_read_bandwidth":
            arch = GPU_TO_ARCH.get(r["gpu"], r["gpu"])
            ws_kb = float(params["total_data_set_kB"])
            if ws_kb <= 0.5 * l2_sizes_kb.get(arch, 0):
                row = out_row(r, schedule="stream_l2", metric="memory_bandwidth")
                per_block = int(float(params["per_block_kB"]) * 1024)
                add_params(row, bytes=int(ws_kb * 1024), BLOCKS=L2_BLOCKS, bytes_moved=per_block * L2_BLOCKS)
                out.append(row)
            else:
                left_out["L2 read rows with working sets over half the L2 (DRAM-bound tail)"] += 1
        else:
            left_out[f"{kernel.split(' (')[0].split(',')[0]} / {r['metric']}"] += 1
    for (_gpu, kernel), r in sorted(best.items()):
        op = kernel.split()[-1]
        row = out_row(r, schedule="stream", metric="memory_bandwidth")
        streams = {"init": 1, "read": 1, "scale": 2, "triad": 3}.get(op, 2)
        nbytes = 128 * 2**20 * 8  # 128 Mi doubles per array
        add_params(row, op=op, bytes=nbytes, bytes_moved=streams * nbytes)
        if op not in STREAM_OPS:
            unmapped(row, f"gpu-stream {op}: no such kernel in gpu-stream/main.cu (no stream op)")
            row["schedule"] = "stream"
        out.append(row)
    return out, dict(left_out)


CONVERTERS = {
    "deepbench_v100_gemm.csv": conv_gemm_library,
    "torch_square_gemm_crowdsourced.csv": conv_gemm_library,
    "mamf_max_achievable_matmul.csv": conv_gemm_library,
    "deepgemm_readme_h800.csv": conv_deepgemm,
    "fa2_a100_h100_fwdbwd_readme_figures.csv": conv_flash,
    "fa3_h100_fwd_fp16_readme_figure.csv": conv_flash,
    "thunderkittens_gemm.csv": conv_thunderkittens,
    "memory_bound_misc_and_device_facts.csv": conv_misc,
}


def write(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else DEFAULT_SRC
    OUT.mkdir(parents=True, exist_ok=True)
    summary = []
    for name, conv in CONVERTERS.items():
        rows = list(csv.DictReader((src / name).open(newline="")))
        out = conv(rows)
        write(OUT / name, out)
        summary.append((name, len(rows), len(out), sum(1 for r in out if "unmapped=" not in r["params"])))
    rows = list(csv.DictReader((src / "gpu_benches_memory_microbench.csv").open(newline="")))
    out, left_out = conv_gpu_benches(rows)
    write(OUT / "gpu_benches_memory_microbench.csv", out)
    summary.append(("gpu_benches_memory_microbench.csv", len(rows), len(out),
                    sum(1 for r in out if "unmapped=" not in r["params"])))  # fmt: skip
    for name, n_in, n_out, n_pred in summary:
        print(f"{name}: {n_in} source rows -> {n_out} rows ({n_pred} mapped to a schedule)")
    print("gpu-benches rows left out:")
    for what, n in sorted(left_out.items()):
        print(f"  {n:5d}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
