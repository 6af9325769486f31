"""A wider measured set than `gpusim measure`, for a session that has a GPU for a few minutes.

Times cuBLAS GEMMs (torch.mm in bf16/fp16/tf32/fp32, torch._scaled_mm in fp8 e4m3), FlashAttention-2
(torch SDPA's flash backend) forward and forward+backward, and device-to-device copies from L2-resident to
HBM-sized, each with CUDA events (warm-up, then the median of the timed runs), and writes rows in the
measurement format (data/measurements/README.md) with the GPU, driver, clocks and versions in `params`.
An nvidia-smi sampler logs SM clock, power and temperature every 100 ms beside it (smi_log.csv), and each
row's `params` carries the time window it ran in, so clock and power under each kernel can be read back.

    python bench/gpu_torch_sweep.py OUT_DIR [--budget-s 100] [--graph] [--match REGEX]

--graph: GEMMs from a cold L2, attention (forward, and forward+backward through autograd) and elementwise
kernels hot, each replayed from a CUDA graph (kernel time without the host's launch gaps, which a single
evented call of a small kernel mostly measures). A `copy_` captured in a graph becomes a memcpy node (run by
the copy engines, ~2.8 TB/s on H200, against ~4.2 TB/s for the SM copy of an eager call): `scale` (an SM
kernel with the same traffic) is the graph-safe stream row. --match: only the cases whose name
(`gemm(8192, 8192, 8192, 'bf16')`, `attention(128, 4096, 1, True)`, `scale(64,)`) matches REGEX.

Needs PyTorch with CUDA (the GPU image has it); gpusim only for the column list and the environment probe.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusim.calibrate.measure import FLUSH_BYTES, _arch_id, _env, time_events_us, time_graph_us
from gpusim.calibrate.measurements import COLUMNS

SQUARE = [256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
LLM_NK = [(4096, 4096), (11008, 4096), (4096, 11008), (12288, 4096), (28672, 8192), (8192, 28672)]
LLM_M = [16, 128, 512, 2048, 8192]
ATTN_HEAD_DIMS = [64, 128, 256]
ATTN_SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
ATTN_TOKENS = 16384
HOW_EVENTS = "CUDA events around each call (host launch time included), 5 warm-up + 20 timed, median"
HOW_HOT = "20 calls replayed from one CUDA graph, time per call, median of 10 replays (operands hot in L2)"
HOW_GEMM = (
    "each call after a 256 MiB memset in one CUDA graph of 20, minus the same graph of memsets alone "
    "(cold L2, no host launch gaps), median of 10 replays"
)
COPY_MIB = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096]


def main() -> int:
    out = Path(sys.argv[1])
    budget_s = float(sys.argv[sys.argv.index("--budget-s") + 1]) if "--budget-s" in sys.argv else 100.0
    graphs = "--graph" in sys.argv
    out.mkdir(parents=True, exist_ok=True)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    t0 = time.monotonic()
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active",
         "--format=csv,nounits", "-lms", "100"],
        stdout=(out / "smi_log.csv").open("w"), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    env = _env(torch)
    arch = _arch_id(env["gpu"])
    base = ";".join(f"{k}={v}" for k, v in env.items())
    source = f"gpusim bench/gpu_torch_sweep.py{' --graph' if graphs else ''} on {env['gpu']} (device session {time.strftime('%Y-%m-%d')})"
    rows: list[dict[str, Any]] = []
    dev = torch.device("cuda")

    def add(timing: tuple[float, float, float], start_s: float, params: str = "", **kw: Any) -> None:
        med, lo, hi = timing
        row = {c: "" for c in COLUMNS}
        row.update(source=source, arch=arch, metric="time", value=round(med, 3), unit="us", **kw)
        window = f"t_start_s={start_s:.2f};t_end_s={time.monotonic() - t0:.2f}"
        row["params"] = ";".join(p for p in (params, f"min_us={lo:.3f};max_us={hi:.3f}", window, base) if p)
        rows.append(row)

    def over() -> bool:
        return time.monotonic() - t0 > budget_s

    def gemm(m: int, n: int, k: int, dtype: str) -> None:
        start = time.monotonic() - t0
        if dtype == "fp8":
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=dev)
            timing = timer(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), FLUSH_BYTES)
            note = "torch._scaled_mm (cuBLASLt) fp8 e4m3 x e4m3 -> bf16, per-tensor scales, A row-major, B column-major"
        else:
            tdt = {
                "bf16": torch.bfloat16,
                "fp16": torch.float16,
                "tf32": torch.float32,
                "fp32": torch.float32,
            }[dtype]
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            a = torch.randn(m, k, device=dev, dtype=tdt)
            b = torch.randn(k, n, device=dev, dtype=tdt)
            timing = timer(lambda: torch.mm(a, b), FLUSH_BYTES)
            note = f"torch.mm (cuBLAS), {dtype}, row-major A and B" + (
                ", TF32 allowed" if dtype == "tf32" else ""
            )
        add(timing, start, schedule="auto:gemm", dtype=dtype, M=m, N=n, K=k, batch=1,
            notes=f"{note}; random normal data; {HOW_GEMM if graphs else HOW_EVENTS}")  # fmt: skip

    def attention(hd: int, s: int, causal: int, backward: bool) -> None:
        start = time.monotonic() - t0
        b, h = ATTN_TOKENS // s, 2048 // hd
        q, k, v = (
            torch.randn(b, h, s, hd, device=dev, dtype=torch.bfloat16, requires_grad=backward)
            for _ in range(3)
        )
        if backward:
            dout = torch.randn(b, h, s, hd, device=dev, dtype=torch.bfloat16)

            def fn() -> None:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                torch.autograd.grad(o, (q, k, v), dout)

            schedule, what = "attn_fa2_fwd+attn_fa2_bwd", "forward + backward (autograd.grad of q, k, v)"
        else:

            def fn() -> None:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

            schedule, what = "attn_fa2_fwd", "forward"
        add(timer(fn, 0), start, schedule=schedule, dtype="bf16", batch=b, heads=h, seqlen_q=s, seqlen_kv=s,
            head_dim=hd, causal=causal, notes=f"torch SDPA flash backend (FlashAttention-2 in PyTorch), {what}; "
            f"batch={ATTN_TOKENS}/seqlen, heads=2048/head_dim (the FA2 benchmark's protocol); "
            f"{HOW_HOT if graphs else HOW_EVENTS}")  # fmt: skip

    def scale(mib: int) -> None:
        start = time.monotonic() - t0
        src = torch.randn(mib << 18, device=dev)
        dst = torch.empty_like(src)
        add(timer(lambda: torch.mul(src, 2.0, out=dst), 0), start, schedule="stream", dtype="fp32",
            params=f"op=scale;bytes={mib << 20}", notes="torch.mul(src, 2.0, out=dst) on fp32 (an elementwise SM "
            "kernel: 1 read + 1 write stream); both arrays stay in L2 between runs when they fit; "
            + (HOW_HOT if graphs else HOW_EVENTS))  # fmt: skip

    def copy(mib: int) -> None:
        start = time.monotonic() - t0
        src = torch.empty(mib << 20, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        timing = (
            timer(lambda: dst.copy_(src), 0)
            if graphs
            else time_events_us(torch, lambda: dst.copy_(src), iters=50)
        )
        add(timing, start, schedule="stream", dtype="int8",
            params=f"op=copy;bytes={mib << 20}", notes="device-to-device copy_ (1 read + 1 write stream); both "
            "arrays stay in L2 between runs when they fit; "
            + (HOW_HOT if graphs else "CUDA events, 5 warm-up + 50 timed, median"))  # fmt: skip

    def timer(fn: Any, flush_bytes: int) -> tuple[float, float, float]:
        return time_graph_us(torch, fn, flush_bytes) if graphs else time_events_us(torch, fn)

    plan: list[tuple[Any, tuple]] = []
    plan += [(gemm, (n, n, n, "bf16")) for n in SQUARE]
    plan += [(gemm, (m, n, k, "bf16")) for n, k in LLM_NK for m in LLM_M]
    plan += [(attention, (hd, s, c, False)) for hd in ATTN_HEAD_DIMS for s in ATTN_SEQLENS for c in (0, 1)]
    plan += [(copy, (mib,)) for mib in COPY_MIB]
    plan += [(gemm, (n, n, n, "fp8")) for n in SQUARE[3:]]
    plan += [(gemm, (m, n, k, "fp8")) for n, k in LLM_NK[:3] for m in LLM_M]
    plan += [(attention, (hd, s, c, True)) for hd in ATTN_HEAD_DIMS for s in ATTN_SEQLENS for c in (0, 1)]
    plan += [(gemm, (n, n, n, "fp16")) for n in (1024, 4096, 8192)]
    plan += [(gemm, (n, n, n, d)) for n in (2048, 4096, 8192) for d in ("tf32", "fp32")]
    plan += [(scale, (mib,)) for mib in COPY_MIB]
    if "--match" in sys.argv:
        pattern = re.compile(sys.argv[sys.argv.index("--match") + 1])
        plan = [(fn, args) for fn, args in plan if pattern.search(f"{fn.__name__}{args}")]
    failed = 0
    for fn, args in plan:
        if over():
            print(
                f"budget of {budget_s:.0f} s spent; {len(plan) - plan.index((fn, args))} cases left out",
                flush=True,
            )
            break
        try:
            fn(*args)
            print(f"{fn.__name__}{args}: {rows[-1]['value']} us", flush=True)
        except (
            Exception
        ) as exc:  # one failing case (an unsupported head dim, out of memory) loses only itself
            failed += 1
            print(
                f"{fn.__name__}{args}: FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                flush=True,
            )
        torch.cuda.empty_cache()
        with (out / "torch_sweep.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(COLUMNS), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    smi.terminate()
    print(f"{len(rows)} rows, {failed} failed, {time.monotonic() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
