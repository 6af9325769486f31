"""What-if comparisons: run several variants (schedules, parameter sets, archs) and tabulate them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from gpusim.errors import InputError
from gpusim.report.summary import UNIT_LABELS, Prediction

COMPARE_UNITS = ("tensor", "tma", "hbm", "l2", "lsu", "fp32", "sfu")


@dataclass(frozen=True)
class Variant:
    """One column of a comparison: a schedule on an arch with overrides."""

    label: str
    schedule: str
    arch: str
    overrides: dict[str, Any]
    vs: bool = False
    """Whether the overrides include a ``--vs`` set (its unknown keys are reported as ``--vs``)."""


def parse_sets(items: list[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` items (a ``--vs`` item may hold several, comma-separated) -> overrides."""
    from gpusim.schedule.load import parse_override

    out: dict[str, Any] = {}
    for item in items:
        for part in item.split(",") if option == "--vs" else [item]:
            if "=" not in part:
                raise InputError(f"{option} '{item}': expected KEY=VALUE")
            key, value = parse_override(part)
            out[key] = value
    return out


def build_variants(schedules: list[str], archs: list[str], sets: list[str], vs: list[str]) -> list[Variant]:
    """Every schedule x arch x (the base set, then each ``--vs`` set on top of it)."""
    from gpusim.autotune import is_auto
    from gpusim.schedule.load import _read_spec, schedule_path

    if not schedules:
        raise InputError("compare needs at least one schedule")
    base = parse_sets(sets, "--set")
    param_sets: list[tuple[str, dict[str, Any], bool]] = [("", base, False)]
    for item in vs:
        extra = parse_sets([item], "--vs")
        param_sets.append((", ".join(f"{k}={v}" for k, v in extra.items()), {**base, **extra}, True))
    if len(param_sets) > 1:
        keys = list(dict.fromkeys(k for item in vs for k in parse_sets([item], "--vs")))
        param_sets[0] = (_base_label(schedules[0], archs, base, keys), base, False)
    out = []
    for schedule in schedules:
        ref = "h100" if is_auto(schedule) else _read_spec(schedule_path(schedule)).reference_arch
        for arch in archs or [ref]:
            for plabel, overrides, is_vs in param_sets:
                parts = []
                if len(schedules) > 1:
                    parts.append(schedule)
                if len(archs) > 1:
                    parts.append(arch)
                if len(param_sets) > 1:
                    parts.append(plabel)
                label = " · ".join(parts) or f"{schedule} on {arch}"
                out.append(Variant(label, schedule, arch, overrides, is_vs))
    return out


def _base_label(schedule: str, archs: list[str], base: dict[str, Any], keys: list[str]) -> str:
    """The base variant's values of the keys the ``--vs`` sets change (e.g. ``STAGES=4``)."""
    from gpusim.arch import load_arch
    from gpusim.autotune import is_auto
    from gpusim.schedule.load import _read_spec, load_schedule, schedule_path

    if is_auto(schedule):
        return "base"
    arch = load_arch(archs[0] if archs else _read_spec(schedule_path(schedule)).reference_arch)
    env = load_schedule(schedule, arch, base).env
    return ", ".join(f"{k}={base.get(k, env.get(k, '?'))}" for k in keys)


def run_variant(v: Variant) -> Prediction:
    """Simulate one variant (recorded, so it carries the attribution and verdict)."""
    from gpusim.arch import load_arch
    from gpusim.autotune import is_auto, predict_auto
    from gpusim.report.summary import summarize
    from gpusim.schedule.load import load_schedule
    from gpusim.sim.engine import simulate

    arch = load_arch(v.arch)
    if is_auto(v.schedule):
        from gpusim.report.attribution import attribute_choice

        return attribute_choice(predict_auto(v.schedule, arch, v.overrides), arch, v.overrides)
    try:
        sched = load_schedule(v.schedule, arch, v.overrides)
    except InputError as exc:
        msg = str(exc)
        if v.vs and msg.startswith("--set ") and "unknown parameter" in msg:
            raise InputError("--vs " + msg[len("--set ") :]) from None
        raise
    return summarize(simulate(sched, arch, record=True))


def compare(variants: list[Variant]) -> list[Prediction]:
    """Run every variant in order."""
    return [run_variant(v) for v in variants]


def compare_rows(variants: list[Variant], preds: list[Prediction]) -> list[dict[str, Any]]:
    """JSON rows: the variant and its headline numbers."""
    rows = []
    for v, p in zip(variants, preds, strict=True):
        rows.append({
            "variant": v.label, "schedule": p.schedule, "arch": p.arch, "overrides": v.overrides,
            "time_us": p.time_us, "tflops": p.tflops, "hbm_gbps": p.hbm_gbps,
            "utilization": {k: p.utilization.get(k, 0.0) for k in COMPARE_UNITS},
            "attribution": p.attribution, "verdict": p.verdict or p.bottleneck,
        })  # fmt: skip
    return rows


def compare_table(variants: list[Variant], preds: list[Prediction]) -> Table:
    """A rich table, one row per variant; the fastest is marked."""
    table = Table(title="gpusim compare", title_justify="left")
    table.add_column("variant")
    table.add_column("time (us)", justify="right")
    table.add_column("vs fastest", justify="right")
    table.add_column("TFLOPS", justify="right")
    table.add_column("HBM GB/s", justify="right")
    for k in ("tensor", "tma", "hbm"):
        table.add_column(UNIT_LABELS[k].split(" (")[0], justify="right")
    table.add_column("verdict", overflow="fold")
    best = min(p.time_us for p in preds)
    for v, p in zip(variants, preds, strict=True):
        table.add_row(
            v.label, f"{p.time_us:,.2f}", f"{p.time_us / best:.2f}x", f"{p.tflops:,.1f}", f"{p.hbm_gbps:,.0f}",
            *(f"{p.utilization.get(k, 0.0):.0%}" for k in ("tensor", "tma", "hbm")),
            p.verdict or p.bottleneck,
        )  # fmt: skip
    return table
