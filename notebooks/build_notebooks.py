"""Write the example notebooks with nbformat and execute them in place (outputs saved).

Run from the repository root: ``.venv/bin/python notebooks/build_notebooks.py [NAME ...]``.
CI executes the saved notebooks again (tests/test_notebooks.py); this script only (re)creates them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

SHOW = '''\
import base64, io, tempfile
from pathlib import Path
from IPython.display import HTML, Image, Markdown, display

OUT = Path(tempfile.mkdtemp(prefix="gpusim-nb-"))

def show_png(path, width=None):
    """Display a PNG that a gpusim plot function wrote."""
    display(Image(filename=str(path), width=width))

def side_by_side(*paths):
    """Display PNGs next to each other (each scaled to the notebook width / n)."""
    pct = 100 // len(paths) - 1
    tags = "".join(
        f'<img src="data:image/png;base64,{base64.b64encode(Path(p).read_bytes()).decode()}" style="width:{pct}%;display:inline-block">'
        for p in paths
    )
    display(HTML(f"<div>{tags}</div>"))
'''

RUN = '''\
import gpusim
'''


def nb_quickstart():
    return [
        new_markdown_cell(
            "# 01 · Quickstart: predict, look at the timeline, open the trace\n\n"
            "gpusim simulates a kernel *schedule* (what each warp role does) on an *architecture* (what the "
            "hardware can do) and says how long it takes, how busy each unit is, and why. This notebook runs "
            "the README's quickstart prediction — CUTLASS's Hopper ping-pong GEMM, 8192³ bf16 on an H100 SXM — "
            "from Python and from the command line."
        ),
        new_code_cell(SHOW + "\n" + RUN),
        new_markdown_cell("## Predict\nThe same numbers as `gpusim predict gemm_ws_pingpong --arch h100`."),
        new_code_cell(
            'p = gpusim.predict("gemm_ws_pingpong", "h100", record=True)\n'
            'print(f"{p.schedule} on {p.arch}: {p.time_us:,.1f} us, {p.tflops:,.1f} TFLOPS, HBM {p.hbm_gbps:,.0f} GB/s, "\n'
            '      f"L2 hit rate {p.l2_hit_rate:.1%}")\n'
            'print("interval:", p.interval.text)\n'
            'print("costs:", p.costs, "from the overlay", Path(p.overlay).name if p.overlay else None)\n'
            'print("verdict:", p.verdict)\n'
            'for cause, share in sorted(p.attribution.items(), key=lambda kv: -kv[1]):\n'
            '    if share > 0:\n'
            '        print(f"  {cause:14s} {share:6.1%}")'
        ),
        new_markdown_cell(
            "The *attribution* walks the SM group that finishes last and charges each moment to what it was "
            "doing (tensor core busy first, then SFU, CUDA cores, shared memory, memory port, waits for "
            "data, barriers); the time lost to SMs that ran out of tiles is the *tail wave*. The shares add "
            "up to 100%."
        ),
        new_markdown_cell("## The same from the command line"),
        new_code_cell(
            "import subprocess, sys\n"
            'cmd = [sys.executable, "-m", "gpusim", "predict", "gemm_ws_pingpong", "--arch", "h100", "--set", "M=4096", "--set", "N=4096"]\n'
            'print(" ".join(["gpusim", *cmd[3:]]))\n'
            "print(subprocess.run(cmd, capture_output=True, text=True, check=True, env={**__import__('os').environ, 'COLUMNS': '100', 'NO_COLOR': '1', 'TERM': 'dumb'}).stdout)"
        ),
        new_markdown_cell(
            "## Timeline\n`gpusim predict ... --plot timeline.png` draws one SM group: the whole kernel on top "
            "(agents only; the shaded band is the zoomed window), then about three tile periods in the middle "
            "with one lane per agent and per role, and the chip's HBM and L2 bandwidth below. Hatched bars "
            "are waits: the two math warpgroups take turns on the tensor core (one waits at the turnstile "
            "while the other issues its wgmmas), and the producer warp waits for free stages."
        ),
        new_code_cell(
            'show_png(gpusim.plot_timeline(p, OUT / "timeline.png"))'
        ),
        new_markdown_cell(
            "## Perfetto trace\n`--trace trace.json` writes a Chrome/Perfetto trace: open it in "
            "https://ui.perfetto.dev. Each SM group is a process with a track per agent, per role and per "
            "shared-memory stage; counters show HBM and L2 bandwidth, the L2 hit rate and stages in use, and "
            "flow arrows go from the moment a stage became full to the consumer's wait it ended."
        ),
        new_code_cell(
            "import collections, json\n"
            'small = gpusim.predict("gemm_ws_pingpong", "h100", record=True, M=2048, N=2048, K=2048)\n'
            'trace = gpusim.write_trace(small, OUT / "trace.json")\n'
            'events = json.loads(trace.read_text())["traceEvents"]\n'
            'print(f"{trace.stat().st_size / 1e6:.1f} MB, {len(events):,} events")\n'
            'print("by phase:", dict(collections.Counter(e["ph"] for e in events)))\n'
            'print("counters:", sorted({e["name"] for e in events if e["ph"] == "C"}))\n'
            'print("tracks of SM group 0:", [e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == 1][:12])'
        ),
    ]


def nb_volta_to_blackwell():
    return [
        new_markdown_cell(
            "# 02 · Volta to Blackwell\n\nEach generation's tensor cores grew faster than its memory: the "
            "FLOP-per-byte ridge point (dense peak over HBM bandwidth) says how much reuse a kernel needs "
            "before it stops being memory-bound. The numbers below come straight from the arch files."
        ),
        new_code_cell(SHOW + "\n" + RUN),
        new_code_cell(
            'rows = ["| arch | SMs | FP16 dense TFLOPS | FP8 dense TFLOPS | HBM TB/s | L2 MiB | ridge FLOP/byte (FP16) |", "|---|---|---|---|---|---|---|"]\n'
            "for a in gpusim.all_archs():\n"
            '    fp8 = a.dense_peak_tflops("fp8_e4m3")\n'
            '    rows.append(f"| {a.id} | {a.sm_count} | {a.dense_peak_tflops(\'fp16\'):,.0f} | {fp8 and f\'{fp8:,.0f}\' or \'-\'} | "\n'
            '                f"{a.memory.hbm_bandwidth_bytes_per_s / 1e12:.2f} | {a.memory.l2_size_bytes / 2**20:.0f} | {a.ridge_point_flop_per_byte(\'fp16\'):.0f} |")\n'
            'display(Markdown("\\n".join(rows)))'
        ),
        new_markdown_cell(
            "## The same large GEMM on each generation's native schedule\n"
            "8192³ fp16/bf16 on V100 (`gemm_sync`: registers → shared memory, `__syncthreads`, mma.sync), "
            "A100 (`gemm_cp_async`: multistage cp.async), H100 (`gemm_ws_pingpong`: TMA + wgmma, warp "
            "specialized) and B200 (`gemm_tcgen05`: tcgen05 MMAs into TMEM). This is "
            "`gpusim compare` with one variant per arch."
        ),
        new_code_cell(
            'native = [("v100", "gemm_sync", "fp16"), ("a100", "gemm_cp_async", "bf16"), ("h100", "gemm_ws_pingpong", "bf16"), ("b200", "gemm_tcgen05", "bf16")]\n'
            'variants = [gpusim.Variant(sched, arch, {"dtype": dt}, label=f"{arch} / {sched}") for arch, sched, dt in native]\n'
            'c = gpusim.compare(variants, M=8192, N=8192, K=8192)\n'
            'print("problem:", c.problem, "| costs:", c.costs)\n'
            'show_png(gpusim.plot_compare(c, OUT / "generations.png", title="8192³ GEMM on each generation\'s native schedule"))'
        ),
        new_code_cell(
            "for row in c.rows:\n"
            "    p = row.prediction\n"
            "    peak = gpusim.load_arch(p.arch).dense_peak_tflops(p.problem['dtype'])\n"
            '    print(f"{row.variant.name:28s} {p.tflops:8,.0f} TFLOPS = {p.tflops / peak:4.0%} of the {peak:,.0f} TFLOPS peak   {p.verdict}")'
        ),
    ]


def nb_fa3():
    return [
        new_markdown_cell(
            "# 03 · FlashAttention-3's ping-pong and intra-warpgroup overlap\n\n"
            "FA3 (Hopper) hides the softmax behind the tensor core two ways: *ping-pong* — two consumer "
            "warpgroups take turns, one runs its GEMMs while the other does softmax (a turnstile orders "
            "them) — and *intra-warpgroup overlap* — inside one warpgroup, S(n) = QK(n)ᵀ is issued "
            "before the softmax of block n−1 is done. `attn_fa3_fwd` has both as parameters "
            "(`PINGPONG`, `INTRA_OVERLAP`); `attn_fa2_fwd` is the Ampere-style kernel (mma.sync, no TMA) "
            "for reference. Problem: batch 2, 8 heads, 2048 tokens, head dim 128, bf16, non-causal (small, "
            "so the notebook runs in seconds)."
        ),
        new_code_cell(SHOW + "\n" + RUN),
        new_code_cell(
            'problem = {"batch": 2, "heads": 8, "seqlen_q": 2048, "head_dim": 128, "dtype": "bf16"}\n'
            'variants = [gpusim.Variant("attn_fa2_fwd", "h100", label="FA2")]\n'
            "for pp in (0, 1):\n"
            "    for ov in (0, 1):\n"
            '        variants.append(gpusim.Variant("attn_fa3_fwd", "h100", {"PINGPONG": pp, "INTRA_OVERLAP": ov},\n'
            '                                       label=f"FA3 PINGPONG={pp} INTRA_OVERLAP={ov}"))\n'
            "c = gpusim.compare(variants, **problem)\n"
            "for row in c.rows:\n"
            '    print(f"{row.variant.name:32s} {row.prediction.time_us:8,.1f} us  {row.prediction.tflops:6,.0f} TFLOPS")\n'
            'show_png(gpusim.plot_compare(c, OUT / "fa3.png", title="FA2 vs FA3 on H100: ping-pong and intra-warpgroup overlap"))'
        ),
        new_markdown_cell(
            "## Timelines side by side\nLeft: both tricks off — each warpgroup waits for its S before the "
            "softmax, and the softmax (CUDA cores, SFU) leaves the tensor core idle. Right: both on — the "
            "tensor-core lane has fewer gaps."
        ),
        new_code_cell(
            "paths = []\n"
            "for pp, ov in ((0, 0), (1, 1)):\n"
            '    p = gpusim.predict("attn_fa3_fwd", "h100", record=True, **problem, PINGPONG=pp, INTRA_OVERLAP=ov)\n'
            '    paths.append(gpusim.plot_timeline(p, OUT / f"fa3_{pp}{ov}.png"))\n'
            '    print(f"PINGPONG={pp} INTRA_OVERLAP={ov}: {p.time_us:,.1f} us, {p.tflops:,.0f} TFLOPS — {p.verdict}")\n'
            "side_by_side(*paths)"
        ),
    ]


def nb_calibration():
    return [
        new_markdown_cell(
            "# 04 · Calibration: predicted versus measured\n\n"
            "`data/measurements/*.csv` holds published measured runs (with sources). `gpusim validate` "
            "predicts every row and reports the error per arch and schedule family; `gpusim calibrate` "
            "fits the arch's calibration block to them. Predicting all rows takes minutes, so this notebook "
            "validates a small sample per family (the CLI does all of them)."
        ),
        new_code_cell(SHOW),
        new_code_cell(
            "import collections, time\n"
            "import gpusim\n"

            "data = Path(gpusim.__file__).parent.parent / 'data' / 'measurements'\n"
            "if not data.is_dir():\n"
            "    data = Path(gpusim.__file__).parent / '_data' / 'data' / 'measurements'\n"
            "rows = gpusim.read_measurements(sorted(data.glob('*.csv')))\n"
            "print(f'{len(rows)} measured rows in {len(list(data.glob(\"*.csv\")))} files')\n"
            "# a small sample: the smallest problems of each family on a few archs\n"
            "def size(m):\n"
            "    out = 1.0\n"
            "    for v in m.dims.values():\n"
            "        out *= max(float(v), 1.0)\n"
            "    return out\n"
            "per_family = collections.defaultdict(list)\n"
            "for m in sorted(rows, key=size):\n"
            "    fam = m.schedule.split('_')[0].replace('attn', 'attention').replace('auto:gemm', 'gemm')\n"
            "    if m.error is None and fam in ('gemm', 'attention', 'mla', 'stream') and len(per_family[fam]) < 6 and m.arch in ('v100', 'a100', 'h100', 'h800'):\n"
            "        per_family[fam].append(m)\n"
            "sample = [m for ms in per_family.values() for m in ms]\n"
            "t0 = time.perf_counter()\n"
            "results = gpusim.validate(sample)\n"
            "print(f'{len(sample)} rows validated in {time.perf_counter() - t0:.1f} s')"
        ),
        new_code_cell(
            "ok = [r for r in results if r.predicted_time_us is not None]\n"
            "lines = ['| family | arch | schedule | measured us | predicted us | error |', '|---|---|---|---|---|---|']\n"
            "for r in ok:\n"
            "    lines.append(f'| {r.family} | {r.arch} | {r.m.schedule} | {r.measured_time_us:,.1f} | {r.predicted_time_us:,.1f} | {r.error_pct:+.1f}% |')\n"
            "display(Markdown('\\n'.join(lines)))\n"
            "for r in results:\n"
            "    if r.skipped:\n"
            "        print('skipped:', r.m.schedule, r.arch, '-', r.skipped[:120])\n"
            "by_family = collections.defaultdict(list)\n"
            "for r in ok:\n"
            "    by_family[r.family].append(abs(r.error_pct))\n"
            "for fam, errs in by_family.items():\n"
            "    errs.sort()\n"
            "    print(f'{fam:10s} n={len(errs)}  median |error| {errs[len(errs) // 2]:.1f}%  max {errs[-1]:.1f}%')"
        ),
        new_code_cell(
            "import matplotlib\n"
            "matplotlib.use('Agg')\n"
            "import matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots(figsize=(10, 8))\n"
            "colors = {'gemm': '#009E73', 'attention': '#0072B2', 'mla': '#CC79A7', 'stream': '#E69F00'}\n"
            "for fam in sorted({r.family for r in ok}):\n"
            "    pts = [(r.measured_time_us, r.predicted_time_us) for r in ok if r.family == fam]\n"
            "    ax.scatter(*zip(*pts), label=fam, color=colors.get(fam, '#555555'), s=50, edgecolors='black')\n"
            "lo = min(min(r.measured_time_us, r.predicted_time_us) for r in ok) / 2\n"
            "hi = max(max(r.measured_time_us, r.predicted_time_us) for r in ok) * 2\n"
            "ax.plot([lo, hi], [lo, hi], color='black', linewidth=1, label='perfect')\n"
            "ax.fill_between([lo, hi], [lo * 0.8, hi * 0.8], [lo * 1.25, hi * 1.25], color='#DDDDDD', label='±25%')\n"
            "ax.set_xscale('log'); ax.set_yscale('log'); ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)\n"
            "ax.set_xlabel('measured time (µs)'); ax.set_ylabel('predicted time (µs)'); ax.legend()\n"
            "ax.set_title('gpusim predictions (shipped costs) against published measurements')\n"
            "fig.savefig(OUT / 'calibration.png', dpi=80)\n"
            "show_png(OUT / 'calibration.png')"
        ),
        new_markdown_cell(
            "The full report: `gpusim validate data/measurements/*.csv` (add `--datasheet` to see the errors "
            "before calibration, `--json` for machine-readable rows)."
        ),
    ]


def nb_flashmla():
    return [
        new_markdown_cell(
            "# 05 · FlashMLA's seesaw: a register budget, and decode between memory and compute\n\n"
            "DeepSeek's MLA decode kernel keeps a 64×512 fp32 output tile — 32,768 registers, half an SM's "
            "register file — for each CTA of two math warpgroups. Kept in one warpgroup it would need 256 "
            "registers per thread (the limit is 255); the *seesaw* schedule splits it, O_L in warpgroup 0 and "
            "O_R in warpgroup 1, and both warpgroups take part in every P·V product. `mla_decode_flashmla` "
            "has `SEESAW` (1: split; 0: whole output in one warpgroup)."
        ),
        new_code_cell(SHOW + "\n" + RUN),
        new_markdown_cell("## The register budget: SEESAW=0 does not fit"),
        new_code_cell(
            "from gpusim.errors import GpusimError\n"
            'p = gpusim.predict("mla_decode_flashmla", "h800")\n'
            "b = p.budgets\n"
            "print(f\"SEESAW=1: {b['registers_per_sm']:,} registers per SM of {b['registers_limit_per_sm']:,}; \"\n"
            "      f\"max {b['max_regs_per_thread']} per thread\")\n"
            "try:\n"
            '    gpusim.predict("mla_decode_flashmla", "h800", SEESAW=0)\n'
            "except GpusimError as exc:\n"
            '    print("SEESAW=0 refused:", exc)'
        ),
        new_markdown_cell(
            "## Memory- or compute-bound?\nIn decoding, each step reads the whole KV cache once. With one "
            "KV head shared by 128 query heads (MLA), every KV byte feeds 128 heads × s_q query rows, so the "
            "arithmetic intensity grows with the heads and with `seqlen_q` (speculative / multi-token "
            "decoding). Below: the kernel's verdict as the query rows grow."
        ),
        new_code_cell(
            'arch = gpusim.load_arch("h800")\n'
            "preds, labels = [], []\n"
            "for heads, s_q in ((16, 1), (32, 1), (64, 1), (128, 1), (128, 2)):\n"
            '    p = gpusim.predict("mla_decode_flashmla", arch, batch=32, heads=heads, seqlen_q=s_q, seqlen_kv=4096)\n'
            '    pt = gpusim.roofline_point(p, arch)\n'
            '    preds.append(p); labels.append(f"h_q={heads}, s_q={s_q}")\n'
            '    print(f"heads={heads:3d} s_q={s_q}: {p.time_us:7.1f} us, {p.tflops:6.1f} TFLOPS, HBM {p.hbm_gbps:6,.0f} GB/s, "\n'
            '          f"{pt[\'intensity_flop_per_byte\']:5.0f} FLOP/B — {p.verdict}")\n'
            'show_png(gpusim.plot_roofline(arch, preds, OUT / "mla_roofline.png", labels=labels))'
        ),
    ]


NOTEBOOKS = {
    "01_quickstart": (nb_quickstart, ("gemm_ws_pingpong",)),
    "02_volta_to_blackwell": (nb_volta_to_blackwell, ("gemm_sync", "gemm_cp_async", "gemm_ws_pingpong", "gemm_tcgen05")),
    "03_fa3_pingpong": (nb_fa3, ("attn_fa2_fwd", "attn_fa3_fwd")),
    "04_calibration": (nb_calibration, ()),
    "05_flashmla_seesaw": (nb_flashmla, ("mla_decode_flashmla",)),
}


def build(name: str, execute: bool = True) -> Path:
    """Write notebooks/<name>.ipynb (executed, with outputs)."""
    make, _ = NOTEBOOKS[name]
    nb = new_notebook(cells=make())
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    if execute:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    path = HERE / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    import time

    for name in sys.argv[1:] or list(NOTEBOOKS):
        t0 = time.perf_counter()
        print(build(name), f"{time.perf_counter() - t0:.1f} s", flush=True)
