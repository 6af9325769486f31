"""``gpusim measure --micro``: build the microbenchmarks, run every variant the GPU supports, write rows.

Without a GPU the sources are still built (for ``--target``, default sm_90a) and the command then
stops with one line (exit status 2) saying so.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.calibrate.micro.build import MicroBuild, build_all
from gpusim.calibrate.micro.catalog import CLOCK_SECONDS, Variant, variants_for
from gpusim.calibrate.micro.derive import (
    CLOCK_SAMPLES,
    RECORD_WORDS,
    SAMPLE_WORDS,
    WGMMA_SLOTS,
    Quantity,
    derive,
)
from gpusim.calibrate.micro.rows import quantity_row, write_rows
from gpusim.errors import GpusimError, InputError

SRC_BYTES = 1 << 20
"""Operand source buffer (1 MiB: the bulk-copy side op cycles over its 64 chunks of 16 KiB)."""
TIMEOUT_NS = 5_000_000_000
"""Deadline of every wait loop inside a kernel."""
SEED = 20261201


class NoGpu(InputError):
    """The microbenchmarks were built but there is no GPU to run them on."""


def operands(kind: str, nbytes: int = SRC_BYTES) -> np.ndarray:
    """Operand bytes: zeros, or random bf16 values in [-1, 1) (fixed seed)."""
    if kind == "zero":
        return np.zeros(nbytes, dtype=np.uint8)
    rng = np.random.default_rng(SEED)
    values = rng.uniform(-1.0, 1.0, nbytes // 2).astype(np.float32)
    return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)


def _provenance(dev: Any, target: str, command: str) -> dict[str, Any]:
    from gpusim import __version__
    from gpusim.calibrate.micro.device import nvidia_smi

    env: dict[str, Any] = {"gpu": dev.name, "sms": dev.sms, "sm": target, "cuda_driver": dev.cuda_driver,
                           "clock_rate_mhz": round(dev.clock_mhz), "gpusim": __version__}  # fmt: skip
    smi = nvidia_smi("driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu")
    if len(smi) == 5:
        env.update(driver=smi[0], sm_clock_max_mhz=smi[1], sm_clock_idle_mhz=smi[2], power_limit_w=smi[3],
                   temperature_c=smi[4])  # fmt: skip
    env["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    env["command"] = command
    return env


def sample_bytes(v: Variant, grid: int) -> int:
    """Bytes of the clock-sample buffer ``v``'s kernel writes (0 for an experiment without one)."""
    return grid * CLOCK_SAMPLES * SAMPLE_WORDS[v.experiment] * 8 if v.experiment in SAMPLE_WORDS else 0


def kernel_args(dev: Any, v: Variant, grid: int) -> tuple[list[Any], int, int, int]:
    """The device buffers ``v`` needs (allocated on ``dev``) and the kernel's argument list, in the order
    and C types of its signature in kernels/micro/ (tests/test_micro.py checks them against the compiled
    parameter sizes): (arguments, record buffer, its 64-bit words, clock-sample buffer or 0)."""
    u64, i32, u32 = ctypes.c_uint64, ctypes.c_int, ctypes.c_uint
    a = v.args
    samples_ptr = dev.alloc(nbytes) if (nbytes := sample_bytes(v, grid)) else 0
    if v.experiment in ("wgmma", "wgmma_overlap", "operand_path"):
        out_words = grid * WGMMA_SLOTS * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        src = dev.alloc(SRC_BYTES, operands(v.data))
        args = [u64(out), u64(src), u64(SRC_BYTES), u32(a["mma_iters"]), u32(a["side_iters"]), i32(a["mma_wgs"]),
                i32(a["side_op"]), i32(a["inline_op"]), i32(a["inline_count"]), u64(TIMEOUT_NS)]  # fmt: skip
    elif v.experiment == "mma_sync":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        src = dev.alloc(SRC_BYTES, operands(v.data))
        args = [u64(out), u64(src), u64(SRC_BYTES), u32(a["iters"]), i32(a["ldm_per_iter"])]
    elif v.experiment == "tensor_clock":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        src = dev.alloc(SRC_BYTES, operands(v.data))
        # cycles per iteration at the full rate: 2 warpgroups x 4 m64n256k16 (128 cycles each), or 16 warps
        # x 8 m16n8k16 at 2048 FLOP/clk/SM; sized from the device's maximum clock
        cycles = 1024 if v.kernel.endswith("wgmma") else 16 * 8 * 4096 / 2048
        iters = int(CLOCK_SECONDS * dev.clock_mhz * 1e6 / cycles)
        args = [u64(out), u64(samples_ptr), u64(src), u64(SRC_BYTES), u32(iters), u32(max(1, iters // 48))]
    elif v.experiment == "l2_bandwidth":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        nbytes = a["chunk_bytes"] * (1 if a["same_chunk"] else grid)
        buf = dev.alloc(nbytes, operands("random", min(nbytes, SRC_BYTES)))
        args = [u64(out), u64(buf), u64(a["chunk_bytes"]), i32(a["same_chunk"]), u32(a["passes"])]
    elif v.experiment == "l2_clock":
        out_words = grid * 2 * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        src = dev.alloc(SRC_BYTES, operands(v.data))
        nbytes = a["chunk_bytes"] * grid
        buf = dev.alloc(nbytes, operands("random", min(nbytes, SRC_BYTES)))
        args = [u64(out), u64(samples_ptr), u64(src), u64(SRC_BYTES), u64(buf), u64(a["chunk_bytes"]),
                i32(a["mma_on"]), u64(int(CLOCK_SECONDS * 1e9))]  # fmt: skip
    elif v.experiment == "l2_atomics":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        buf = dev.alloc(a["chunk_bytes"] * (grid if a["mode"] != 1 else 1))
        args = [u64(out), u64(buf), u64(a["chunk_bytes"]), i32(a["mode"]), u32(a["passes"])]
    elif v.experiment == "pipes":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        args = [u64(out), u32(a["iters"]), i32(a["mode"])]
    elif v.experiment == "sync_latency":
        out_words = grid * RECORD_WORDS
        out = dev.alloc(out_words * 8)
        args = [u64(out), u32(a["iters"]), i32(a["mode"]), u64(TIMEOUT_NS)]
    else:
        raise GpusimError(f"unknown experiment '{v.experiment}'")
    return args, out, out_words, samples_ptr


def _run_variant(dev: Any, v: Variant, module: Any, symbols: dict[str, int]) -> tuple[list[Quantity], float]:
    """Launch one variant (a warm-up, then the timed launch); its quantities and kernel time in ms."""
    grid = 1 if v.one_sm else dev.sms
    smem = dev.one_cta_per_sm_smem(symbols.get("gpusim_micro_smem_bytes", 0))
    if symbols.get("gpusim_micro_samples", CLOCK_SAMPLES) != CLOCK_SAMPLES or v.threads > symbols.get(
        "gpusim_micro_max_threads", 1024
    ):
        raise GpusimError(f"{v.source}: the build's constants do not match gpusim/calibrate/micro (rebuild)")
    args, out, out_words, samples_ptr = kernel_args(dev, v, grid)
    extra: list[Quantity] = []
    if v.experiment in SAMPLE_WORDS:  # runs for seconds under a power load: NVML's clock and power beside it
        from gpusim.calibrate.micro.device import SmiSampler

        with SmiSampler() as smi:
            ms = dev.launch_timed(module, v.kernel, grid, v.threads, smem, args)
        if smi.clock_mhz:
            extra.append(Quantity("nvml_sm_clock_mhz", float(np.median(smi.clock_mhz)), "MHz", "chip",
                                  {"samples": len(smi.clock_mhz)}))  # fmt: skip
        if smi.power_w:
            extra.append(Quantity("board_power_w", float(np.median(smi.power_w)), "W", "chip",
                                  {"max_w": max(smi.power_w), "samples": len(smi.power_w)}))  # fmt: skip
    else:
        dev.launch_timed(module, v.kernel, grid, v.threads, smem, args)  # warm-up
        ms = dev.launch_timed(module, v.kernel, grid, v.threads, smem, args)
    records = dev.read(out, out_words * 8)
    samples = dev.read(samples_ptr, sample_bytes(v, grid)) if samples_ptr else None
    dev.free_all()
    return derive(v, records, samples) + extra, ms


def run_micro(out: str | Path, only: str | None = None, target: str | None = None, build_dir: str | None = None,
              command: str = "gpusim measure --micro",
              say: Callable[[str], None] = lambda s: sys.stderr.write(s + "\n")) -> int:  # fmt: skip
    """Build, run and write the microbenchmark CSV; returns the number of rows written. Raises NoGpu
    (after building for ``target``, default sm_90a) when there is no GPU."""
    from gpusim.calibrate.micro.device import open_device

    work = Path(build_dir) if build_dir else Path(tempfile.mkdtemp(prefix="gpusim-micro-"))
    try:
        cm = open_device()
        dev = cm.__enter__()
    except InputError as exc:
        t0 = time.perf_counter()
        builds = build_all(target or "sm_90a", work)
        raise NoGpu(f"built {len(builds)} microbenchmark sources for {target or 'sm_90a'} in {work} "
                    f"({time.perf_counter() - t0:.1f} s); cannot run them: {exc}") from None  # fmt: skip
    try:
        target = target or dev.sm
        if target != dev.sm:
            raise InputError(f"--target {target}: this GPU is {dev.sm}")
        builds: dict[str, MicroBuild] = build_all(target, work)
        variants = variants_for(dev.sm, only)
        if not variants:
            raise InputError(f"--only {only}: no microbenchmark variant runs on {dev.sm} with that name")
        env = _provenance(dev, target, command)
        modules = {src: dev.load(b.cubin.read_bytes()) for src, b in builds.items()}
        rows: list[dict[str, Any]] = []
        for i, v in enumerate(variants, 1):
            module, symbols = modules[v.source]
            try:
                quantities, ms = _run_variant(dev, v, module, symbols)
            except (GpusimError, ValueError) as exc:
                say(f"gpusim: skipped {v.name}: {exc}")
                dev.free_all()
                continue
            bad = [q for q in quantities if not (np.isfinite(q.value) and q.value > 0)]
            if bad:
                say(f"gpusim: {v.name}: dropped {', '.join(q.metric for q in bad)} (not a positive number)")
            quantities = [q for q in quantities if q not in bad]
            rows += [quantity_row(v, q, dev.arch, env, ms) for q in quantities]
            say(
                f"[{i}/{len(variants)}] {v.name}: "
                + ", ".join(f"{q.metric}={q.value:.4g} {q.unit}" for q in quantities)
            )
    finally:
        cm.__exit__(None, None, None)
    if not rows:
        raise GpusimError("no microbenchmark variant produced a measurement on this GPU")
    write_rows(Path(out), rows)
    return len(rows)
