"""Tables and JSON views of architectures (``gpusim archs``)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from gpusim.arch import Arch


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _bytes(value: float) -> str:
    if value >= 1e9:
        return f"{value / 1e9:,.0f} GB ({value / 2**30:,.1f} GiB)"
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:,.{0 if value % size == 0 else 1}f} {unit}"
    return f"{value:,.0f} B"


_SUFFIX_UNITS = (
    ("_bytes_per_s", lambda v: f"{v / 1e12:,.2f} TB/s" if v >= 1e12 else f"{v / 1e9:,.0f} GB/s"),
    ("_bytes_per_clk", lambda v: f"{v:,g} B/clk"),
    ("_bytes_per_sm", _bytes),
    ("_bytes_per_block", _bytes),
    ("_bytes", _bytes),
    ("_mhz", lambda v: f"{v:,.0f} MHz"),
    ("_ns", lambda v: f"{v:,g} ns"),
    ("_per_clk_per_sm", lambda v: f"{v:,g} per clk per SM"),
    ("_fraction", lambda v: f"{v:.1%}"),
)


def value_text(name: str, value: Any) -> str:
    """A field's value for people: units from the name's suffix (``_bytes_per_s`` -> TB/s, ``_ns``,
    ``_mhz``, sizes in KiB/MiB/GB), ``-`` for a value the arch does not have, yes/no for flags."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        for suffix, fmt in _SUFFIX_UNITS:
            if name.endswith(suffix):
                return fmt(float(value))
        return f"{value:,}" if isinstance(value, int) or float(value).is_integer() else f"{value:,g}"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "-"
    return str(value)


def arch_summary(arch: Arch) -> dict[str, Any]:
    """The one-line summary of an arch, as a JSON-ready dict."""
    fp16 = arch.dense_peak_tflops("fp16") or arch.dense_peak_tflops("bf16")
    fp4_rates = [arch.dense_peak_tflops(d) for d in ("fp4", "nvfp4", "mxfp4")]
    fp4 = max((r for r in fp4_rates if r is not None), default=None)
    return {
        "id": arch.id,
        "name": arch.name,
        "compute_capability": arch.compute_capability,
        "sm_count": arch.sm_count,
        "tensor_clock_mhz": arch.clocks.tensor_clock_mhz,
        "boost_clock_mhz": arch.clocks.boost_clock_mhz,
        "hbm_bandwidth_tb_per_s": arch.memory.hbm_bandwidth_bytes_per_s / 1e12,
        "l2_mib": arch.memory.l2_size_bytes / 2**20,
        "fp16_bf16_dense_tflops": fp16,
        "fp8_dense_tflops": arch.dense_peak_tflops("fp8_e4m3"),
        "fp4_dense_tflops": fp4,
        "fp16_ridge_flop_per_byte": arch.ridge_point_flop_per_byte("fp16"),
        "smem_kib_per_sm": arch.sm.smem_bytes_per_sm / 1024,
        "registers_per_sm": arch.sm.registers_per_sm,
        "tmem_kib_per_sm": (arch.sm.tmem.bytes / 1024) if arch.sm.tmem else 0,
    }


def archs_table(archs: list[Arch]) -> Table:
    """One row per arch with its headline numbers."""
    table = Table(title="gpusim architectures (dense tensor peaks at the tensor clock)")
    columns = [
        ("id", "left"), ("name", "left"), ("CC", "right"), ("SMs", "right"), ("clock MHz", "right"),
        ("HBM TB/s", "right"), ("L2 MiB", "right"), ("FP16/BF16 TF", "right"), ("FP8 TF", "right"),
        ("FP4 TF", "right"), ("FP16 ridge F/B", "right"), ("smem/SM KiB", "right"), ("regs/SM", "right"),
        ("TMEM/SM KiB", "right"),
    ]  # fmt: skip
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for arch in archs:
        s = arch_summary(arch)
        table.add_row(
            s["id"], s["name"], s["compute_capability"], str(s["sm_count"]), _fmt(s["tensor_clock_mhz"]),
            _fmt(s["hbm_bandwidth_tb_per_s"], 2), _fmt(s["l2_mib"], 1), _fmt(s["fp16_bf16_dense_tflops"], 1),
            _fmt(s["fp8_dense_tflops"], 1), _fmt(s["fp4_dense_tflops"], 1), _fmt(s["fp16_ridge_flop_per_byte"], 1),
            _fmt(s["smem_kib_per_sm"]), f"{s['registers_per_sm']:,}", _fmt(s["tmem_kib_per_sm"]),
        )  # fmt: skip
    return table


def arch_detail(arch: Arch) -> dict[str, Any]:
    """The whole arch with its derived values, as a JSON-ready dict."""
    return {**arch.model_dump(mode="json"), "derived": arch.derived()}


def arch_detail_tables(arch: Arch) -> list[Table]:
    """Tables showing one arch in full: identity, memory, limits, compute, tensor units, derived values."""
    tables: list[Table] = []

    def section(title: str, rows: list[tuple[str, str]]) -> None:
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column("field", style="bold")
        table.add_column("value")
        for key, value in rows:
            table.add_row(key, value)
        tables.append(table)

    section(
        f"{arch.id}: {arch.name}",
        [("aliases", ", ".join(arch.aliases) or "-"), ("generation", arch.generation),
         ("compute capability", arch.compute_capability), ("SMs", str(arch.sm_count))]
        + [(k, value_text(k, v)) for k, v in arch.clocks.model_dump().items()],
    )  # fmt: skip
    section(
        "memory",
        [(k, value_text(k, v)) for k, v in arch.memory.model_dump().items()],
    )
    section(
        "per SM",
        [(k, value_text(k, v)) for k, v in arch.sm.model_dump().items() if k != "tmem"]
        + ([("tmem", f"{arch.sm.tmem.lanes} lanes x {arch.sm.tmem.columns} columns x "
                     f"{arch.sm.tmem.bits_per_cell} bit = {arch.sm.tmem.bytes // 1024} KiB")] if arch.sm.tmem else []),
    )  # fmt: skip
    section("CUDA cores and SFU", [(k, value_text(k, v)) for k, v in arch.cuda_cores.model_dump().items()])
    tensor = Table(title="tensor cores (dense)", title_justify="left")
    for header in (
        "unit",
        "dtype",
        "FLOP/clk/SM",
        "peak TFLOPS",
        "accumulators",
        "A from",
        "shapes",
        "notes",
    ):
        tensor.add_column(header)
    for unit_name in ("mma_sync", "wgmma", "tcgen05"):
        unit = arch.tensor_cores.unit(unit_name)
        if unit is None:
            continue
        for dtype, spec in unit.dtypes.items():
            peak = spec.flops_per_clk_per_sm * arch.sm_count * arch.clocks.tensor_clock_mhz / 1e6
            notes = []
            if spec.k_major_only:
                notes.append("K-major only")
            if spec.block_scale:
                notes.append(
                    f"scale every {spec.block_scale.scale_vec_elems} elems ({spec.block_scale.scale_dtype})"
                )
            tensor.add_row(
                unit_name, dtype, _fmt(spec.flops_per_clk_per_sm), _fmt(peak, 1), ",".join(spec.accumulators),
                ",".join(spec.a_from), "; ".join(s.describe() for s in spec.shapes), ", ".join(notes),
            )  # fmt: skip
    tables.append(tensor)
    section("features", [(k, value_text(k, v)) for k, v in arch.features.model_dump().items()])
    cal = arch.calibration.model_dump()
    overlay = cal["provenance"].get("overlay_file")
    section(
        f"costs: {cal['origin']}" + (f" (from {overlay})" if overlay else ""),
        [(k, value_text(k, v)) for k, v in cal.items() if k not in ("origin", "provenance")],
    )
    derived = arch.derived()
    section(
        "derived",
        [(f"dense peak {d}", f"{v:,.1f} TFLOPS") for d, v in derived["dense_peak_tflops"].items()]
        + [(f"ridge point {d}", f"{v:,.1f} FLOP/byte") for d, v in derived["ridge_point_flop_per_byte"].items()]
        + [("fp32 peak", f"{derived['fp32_peak_tflops']:,.2f} TFLOPS"),
           ("sustained clock", f"{derived['sustained_clock_mhz']:,.0f} MHz ({arch.calibration.origin})")],
    )  # fmt: skip
    section("sources", sorted(arch.sources.items()))
    if arch.notes:
        section("notes", [(str(i + 1), note) for i, note in enumerate(arch.notes)])
    return tables
