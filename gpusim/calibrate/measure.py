"""``gpusim measure``: time a standard set on the local NVIDIA GPU and write measurement rows.

Needs PyTorch with CUDA (not a gpusim dependency). GEMMs via torch.mm, attention via
flash_attn.flash_attn_func when installed else torch SDPA with the flash backend, and an elementwise
stream (torch.mul); each replayed from a CUDA graph (:func:`time_graph_us`): a single call timed with
events mostly measures the host's launch gap for anything under ~100 us (on an H200, every GEMM up to
2048³ read 36-45 us evented against 2.5-25 us from a graph), and GEMMs follow a memset that empties the
L2 of their operands. bench/gpu_torch_sweep.py times its wider set with the same functions.
"""

from __future__ import annotations

import csv
import platform
from pathlib import Path
from typing import Any

from gpusim.calibrate.measurements import COLUMNS
from gpusim.errors import GpusimError

GEMM_SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (1024, 8192, 8192),
    (8192, 8192, 1024),
    (16384, 4096, 4096),
]
ATTN_SHAPES = [(8, 16, 2048, 128, 0), (8, 16, 2048, 128, 1), (4, 32, 4096, 64, 0), (2, 16, 8192, 128, 1)]
COPY_BYTES = [64 * 2**20, 1024 * 2**20]


class NoGpu(GpusimError):
    """No PyTorch with a CUDA GPU on this machine."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise NoGpu(
            "gpusim measure needs PyTorch with CUDA and an NVIDIA GPU; PyTorch is not installed"
        ) from None
    if not torch.cuda.is_available():
        raise NoGpu("gpusim measure needs an NVIDIA GPU; torch.cuda.is_available() is False on this machine")
    return torch


def time_events_us(torch: Any, fn: Any, warmup: int = 5, iters: int = 20) -> tuple[float, float, float]:
    """(median, min, max) in microseconds of ``iters`` calls, each between two CUDA events, after
    ``warmup`` untimed ones (the host's launch gap included: right for long kernels only)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def time_graph_us(
    torch: Any, fn: Any, flush_bytes: int = 0, reps: int = 20, iters: int = 10
) -> tuple[float, float, float]:
    """(median, min, max) per call, in microseconds, of up to ``reps`` calls replayed from one CUDA graph
    (no host launch gaps; about 4 ms of work per replay), over ``iters`` replays. With ``flush_bytes``,
    each call follows a memset of that many bytes (the L2 emptied of its operands) and the same graph of
    memsets alone is subtracted: the call's time from a cold L2. A ``copy_`` captured this way becomes a
    copy-engine memcpy node, not an SM kernel: time an elementwise kernel instead."""
    flush = torch.empty(max(flush_bytes, 1), dtype=torch.uint8, device="cuda")
    single_us = time_events_us(torch, fn, warmup=1, iters=3)[0]
    reps = max(3, min(reps, int(4000.0 / max(single_us, 1.0))))

    def graph_of(body: Any) -> Any:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                body()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(reps):
                body()
        return graph

    def replay_us(graph: Any) -> list[float]:
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / reps)
        return sorted(times)

    if not flush_bytes:
        t = replay_us(graph_of(fn))
        return t[len(t) // 2], t[0], t[-1]
    both = replay_us(graph_of(lambda: (flush.zero_(), fn())))
    alone = replay_us(graph_of(flush.zero_))
    base = alone[len(alone) // 2]
    return both[len(both) // 2] - base, both[0] - base, both[-1] - base


FLUSH_BYTES = 256 << 20
"""The memset before each timed GEMM: several times any current GPU's L2."""


def _env(torch: Any) -> dict[str, str]:
    props = torch.cuda.get_device_properties(0)
    env = {"gpu": props.name.replace(";", " "), "sms": str(props.multi_processor_count),
           "torch": torch.__version__, "cuda": str(torch.version.cuda), "python": platform.python_version()}  # fmt: skip
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        env["driver"] = str(pynvml.nvmlSystemGetDriverVersion())
        env["sm_clock_max_mhz"] = str(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM))
        env["sm_clock_mhz"] = str(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:  # pynvml is optional
        import subprocess

        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)  # fmt: skip
            drv, clk, mx = (x.strip() for x in q.stdout.splitlines()[0].split(","))
            env.update(driver=drv, sm_clock_mhz=clk, sm_clock_max_mhz=mx)
        except Exception:
            pass
    try:
        import flash_attn

        env["flash_attn"] = flash_attn.__version__
    except ImportError:
        pass
    return env


def _arch_id(name: str) -> str:
    from gpusim.arch import close_arch_match, resolve_arch_id
    from gpusim.errors import UnknownNameError

    n = name.lower()
    for key, arch in (("h100 pcie", "h100_pcie"), ("h800 pcie", "h800_pcie"), ("a100-pcie", "a100_pcie"),
                      ("gb200", "gb200"), ("h200", "h200"), ("h100", "h100"), ("h800", "h800"), ("h20", "h20"),
                      ("b300", "b300"), ("b200", "b200"), ("a100", "a100"), ("v100", "v100")):  # fmt: skip
        if key in n:
            return arch
    try:
        return resolve_arch_id(name)
    except UnknownNameError:
        return close_arch_match(name) or name


def run_measure(out: str | Path, quick: bool = False) -> int:
    """Run the set and write the CSV; returns the number of rows (raises NoGpu without a GPU)."""
    torch = _torch()
    env = _env(torch)
    arch = _arch_id(env["gpu"])
    base_params = ";".join(f"{k}={v}" for k, v in env.items())
    source = f"gpusim measure on {env['gpu']} (local run)"
    rows: list[dict[str, Any]] = []

    def add(**kw: Any) -> None:
        row = {c: "" for c in COLUMNS}
        row.update(source=source, arch=arch, **kw)
        row["params"] = ";".join(p for p in (kw.get("params", ""), base_params) if p)
        rows.append(row)

    dev = torch.device("cuda")
    for m, n, k in GEMM_SHAPES[: 2 if quick else None]:
        for dtype, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            a = torch.randn(m, k, device=dev, dtype=tdt)
            b = torch.randn(k, n, device=dev, dtype=tdt)
            t = time_graph_us(torch, lambda a=a, b=b: torch.mm(a, b), FLUSH_BYTES)[0]
            add(schedule="auto:gemm", dtype=dtype, M=m, N=n, K=k, batch=1, metric="time", value=round(t, 3),
                unit="us", notes="torch.mm, random normal data; each call after a 256 MiB memset in one CUDA "
                "graph, minus the memsets alone (cold L2, no launch gaps), median of 10 replays")  # fmt: skip
    try:
        from flash_attn import flash_attn_func
    except ImportError:
        flash_attn_func = None
    import torch.nn.functional as F

    for b, h, s, d, causal in ATTN_SHAPES[: 1 if quick else None]:
        q, kk, v = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
        if flash_attn_func is not None:
            fn, what = (
                (lambda q=q, kk=kk, v=v, c=causal: flash_attn_func(q, kk, v, causal=bool(c))),
                "flash_attn_func",
            )
        else:
            qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, kk, v))

            def fn(qt=qt, kt=kt, vt=vt, c=causal) -> Any:
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(c))

            what = "torch SDPA flash backend (FlashAttention-2)"
        t = time_graph_us(torch, fn)[0]
        add(schedule="attn_fa2_fwd", dtype="bf16", batch=b, heads=h, seqlen_q=s, seqlen_kv=s, head_dim=d,
            causal=causal, metric="time", value=round(t, 3), unit="us", notes=f"{what}, forward, CUDA graph replays")  # fmt: skip
    for nbytes in COPY_BYTES:
        src = torch.randn(nbytes // 4, device=dev)
        dst = torch.empty_like(src)
        t = time_graph_us(torch, lambda src=src, dst=dst: torch.mul(src, 2.0, out=dst))[0]
        add(schedule="stream", dtype="fp32", metric="time", value=round(t, 3), unit="us",
            params=f"op=scale;bytes={nbytes}", notes="torch.mul(src, 2.0, out=dst): an elementwise SM kernel, "
            "1 read + 1 write stream; CUDA graph replays")  # fmt: skip
    path = Path(out)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return len(rows)
