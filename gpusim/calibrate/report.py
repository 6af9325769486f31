"""Text output of validate and calibrate."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _f(x: Any) -> str:
    return "-" if x is None else f"{x:.1f}"


def validate_tables(results: list[Any], summary: dict[str, Any]) -> list[Table]:
    """One table per arch and family, one of skip reasons, one per family overall."""
    t = Table(title=f"gpusim validate ({summary['costs']} costs): {summary['rows']} rows, {summary['predicted']} "
                    f"predicted, {summary['wall_s']} s", title_justify="left")  # fmt: skip
    for col in (
        "arch",
        "family",
        "rows",
        "skipped",
        "median |err| %",
        "mean |err| %",
        "p90 |err| %",
        "bias %",
    ):
        t.add_column(col, justify="left" if col in ("arch", "family") else "right")
    for g in summary["by_arch_family"]:
        t.add_row(g["arch"], g["family"], str(g["rows"]), str(g["skipped"]), _f(g["median_abs_pct"]),
                  _f(g["mean_abs_pct"]), _f(g["p90_abs_pct"]), _f(g["bias_pct"]))  # fmt: skip
    fam = Table(title="per family", title_justify="left")
    for col in ("family", "rows", "median |err| %", "p90 |err| %", "bias %"):
        fam.add_column(col)
    for f, s in summary["by_family"].items():
        fam.add_row(f, str(s["n"]), _f(s["median_abs_pct"]), _f(s["p90_abs_pct"]), _f(s["bias_pct"]))
    o = summary["overall"]
    fam.add_row("all", str(o["n"]), _f(o["median_abs_pct"]), _f(o["p90_abs_pct"]), _f(o["bias_pct"]))
    skips = Table(title="skipped rows by reason", title_justify="left")
    skips.add_column("arch")
    skips.add_column("rows", justify="right")
    skips.add_column("reason")
    for g in summary["by_arch_family"]:
        for reason, n in g["skip_reasons"].items():
            skips.add_row(g["arch"], str(n), reason)
    malformed = [r for r in results if r.skipped and r.skipped.startswith("malformed")]
    tables = [t, fam, skips]
    if malformed:
        mt = Table(title="malformed rows", title_justify="left")
        mt.add_column("file:line and problem")
        for r in malformed:
            mt.add_row(r.skipped)
        tables.append(mt)
    return tables


def calibrate_text(result: dict[str, Any]) -> str:
    """A plain-text calibration report."""
    cal = result["calibration"]
    prov = cal["provenance"]
    lines = [f"calibrated {result['arch']} from its datasheet costs on {prov['rows_used']} rows (of {prov['rows_usable']} usable) "
             f"in {result['wall_s']} s ({result['simulations']} simulations"
             + (f", {result['reused']} results reused from --cache" if result.get("reused") else "") + ")"]  # fmt: skip
    for name in prov["fitted"]:
        lo, hi = prov["bounds"][name]
        lines.append(f"  {name} = {cal[name]} (bounds {lo}..{hi})")
    for b in prov["at_bound"]:
        lines.append(f"  AT BOUND: {b}")
    for b in prov.get("not_converged") or []:
        lines.append(f"  STILL MOVING: {b}")
    lines.append(f"  {'family':10s} {'rows':>5s} {'before med/p90 %':>18s} {'after med/p90 %':>18s} "
                 f"{'CV med/p90 %':>16s}")  # fmt: skip
    for fam in prov["error_before"]:
        b, a = prov["error_before"][fam], prov["error_after"].get(fam, {})
        c = prov["cross_validation"].get(fam, {})
        lines.append(f"  {fam:10s} {b['n']:5d} {_f(b['median_abs_pct']):>9s}/{_f(b['p90_abs_pct']):<8s} "
                     f"{_f(a.get('median_abs_pct')):>9s}/{_f(a.get('p90_abs_pct')):<8s} "
                     f"{_f(c.get('median_abs_pct')):>7s}/{_f(c.get('p90_abs_pct')):<8s}")  # fmt: skip
    lines.append(f"  cross-validation: {prov['cross_validation']['method']} (linearised model)")
    costly = sorted(
        int(i)
        for i, why in (result.get("skipped") or {}).items()
        if str(why).startswith("left out of the fit")
    )
    if costly:
        shown = ", ".join(str(i) for i in costly[:12]) + (", ..." if len(costly) > 12 else "")
        lines.append(
            f"  left out of the fit for their simulation cost (--max-fit-events): {len(costly)} rows ({shown})"
        )
    lines += micro_text(result.get("micro") or {})
    if result.get("written"):
        lines.append(f"  wrote {result['written']}")
    return "\n".join(lines)


def micro_text(micro: dict[str, Any]) -> list[str]:
    """The microbenchmark section of the calibration report: constants, what each maps to, what was held."""
    if not micro:
        return []
    lines = [f"  microbenchmarks: {micro['rows']} rows ({', '.join(micro['files'])})"]
    for name, value in micro["applied"].items():
        lines.append(f"    held fixed (measured, not fitted): {name} = {value}")
    for name, note in micro.get("notes", {}).items():
        lines.append(f"    {name}: {note}")
    for c in micro["constants"]:
        lines.append(f"    {c['name']} = {c['value']:.4g} {c['unit']} -> {c['maps_to']} [{c['how']}]")
    malformed = micro.get("malformed") or {}
    if malformed:
        first = next(iter(malformed.values()))
        lines.append(f"    left out: {len(malformed)} malformed microbenchmark rows (e.g. {first})")
    return lines


def validate_csv_rows(results: list[Any]) -> list[dict[str, Any]]:
    """One CSV row per measured row: where it came from, measured and predicted time, error, costs."""
    return [r.as_dict() for r in results]
