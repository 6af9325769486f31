"""The ``gpusim`` command line.

Every user error is one line on stderr; the exit status says what kind (``gpusim.errors``): 0 ok,
2 bad input or usage, 3 refused by a hardware or budget check, 4 deadlock, 5 over a limit. Imports
sit inside the commands so that ``gpusim --help`` starts fast.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from gpusim.cli_guard import (
    PLOT_SUFFIXES,
    TRACE_SUFFIXES,
    YAML_SUFFIXES,
    check_build_dir,
    check_output_path,
    refuse_writing_over_inputs,
    run_guarded,
)
from gpusim.cli_guard import write_json as _print_json
from gpusim.compiler import commands as _compiler_commands
from gpusim.errors import EXIT_CODES_HELP, GpusimError, InputError, quote
from gpusim.sim.limits import DEFAULT_MAX_EVENTS

app = typer.Typer(
    name="gpusim",
    help="Resource-model simulator for GPU kernel schedules (Volta to Blackwell).\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
archs_app = typer.Typer(
    help="List the built-in architectures, or show one in full.",
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(archs_app, name="archs")
_compiler_commands.register(app)  # gpusim resources / gpusim check (gpusim/compiler/commands.py)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")]
CalibratedFlag = Annotated[
    bool,
    typer.Option(
        "--calibrated/--datasheet",
        help="Calibrated costs (the overlay `gpusim calibrate` wrote, else the shipped one) or the arch "
        "file's datasheet costs.",
    ),
]
OverlayOption = Annotated[
    str | None, typer.Option("--overlay", help="Use the calibrated costs of this overlay YAML file.")
]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Switch model mechanisms relative to the defaults: +power (the clock from the arch's power "
        "model, the highest whose average power fits under the board limit), -power; comma-separated.",
    ),
]
SetsOption = Annotated[
    list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE problem or parameter override.")
]


def _version(value: bool) -> None:
    if value:
        from gpusim import __version__

        sys.stdout.write(f"gpusim {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Resource-model simulator for GPU kernel schedules (Volta to Blackwell)."""


def _one_format(as_json: bool, as_csv: bool) -> None:
    if as_json and as_csv:
        raise InputError("--json and --csv exclude each other")


def _costs(calibrated: bool, overlay: str | None) -> str:
    if overlay is not None:
        if not calibrated:
            raise InputError("--overlay and --datasheet exclude each other")
        if not overlay.endswith(YAML_SUFFIXES):
            raise InputError(f"--overlay '{quote(overlay, 80)}': expected an overlay YAML file (.yaml or .yml), "
                             "as `gpusim calibrate --out` writes")  # fmt: skip
        return overlay
    return "calibrated" if calibrated else "datasheet"


def _overrides(sets: list[str] | None) -> dict[str, Any]:
    from gpusim.schedule.load import parse_override

    return dict(parse_override(s) for s in sets or [])


@archs_app.callback(invoke_without_command=True)
def archs_list(ctx: typer.Context, as_json: JsonFlag = False, as_csv: CsvFlag = False) -> None:
    """One table of every built-in arch: SMs, clocks, HBM, L2, dense peaks, ridge point, budgets."""
    if ctx.invoked_subcommand is not None:
        return
    from gpusim.arch import all_archs
    from gpusim.report.arch_table import arch_summary, archs_table
    from gpusim.report.console import make_console, write_csv

    _one_format(as_json, as_csv)
    archs = all_archs()
    if as_json:
        _print_json([arch_summary(a) for a in archs])
    elif as_csv:
        write_csv([arch_summary(a) for a in archs])
    else:
        make_console().print(archs_table(archs))


@archs_app.command("show")
def archs_show(
    arch_id: Annotated[str, typer.Argument(help="Arch id, alias (h100_sxm, sm_90) or path to a YAML file.")],
    as_json: JsonFlag = False,
    calibrated: CalibratedFlag = True,
) -> None:
    """One arch in full, with units, derived peaks, ridge points, its costs and every source."""
    from gpusim.api import load_arch
    from gpusim.report.arch_table import arch_detail, arch_detail_tables
    from gpusim.report.console import make_console

    arch = load_arch(arch_id, costs="calibrated" if calibrated else "datasheet")
    if as_json:
        _print_json(arch_detail(arch))
        return
    console = make_console()
    for table in arch_detail_tables(arch):
        console.print(table)


@app.command("predict")
def predict(
    schedule: Annotated[
        str, typer.Argument(help="Schedule name (see `gpusim schedules`), auto:gemm, or a YAML path.")
    ],
    arch: Annotated[
        str | None,
        typer.Option("--arch", "-a", help="Arch id, alias or YAML path (default: the schedule's)."),
    ] = None,
    sets: SetsOption = None,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    calibrated: CalibratedFlag = True,
    overlay: OverlayOption = None,
    model: ModelOption = None,
    exact: Annotated[
        bool, typer.Option("--exact", help="Simulate every event (no fast-forward of repeated periods).")
    ] = False,
    max_events: Annotated[
        int,
        typer.Option("--max-events", help="Work limit: events simulated in detail per simulation (0: none)."),
    ] = DEFAULT_MAX_EVENTS,
    trace: Annotated[
        str | None, typer.Option("--trace", help="Write a Chrome/Perfetto trace JSON here.")
    ] = None,
    plot: Annotated[
        str | None, typer.Option("--plot", help="Write a timeline PNG (Gantt of one SM group + HBM GB/s).")
    ] = None,
    sm: Annotated[
        int | None, typer.Option("--sm", help="SM group to plot (default: the busiest); see the trace.")
    ] = None,
    window: Annotated[
        str | None,
        typer.Option("--window", help="Plot window START_US:END_US (default: ~3 tile periods mid-kernel)."),
    ] = None,
    quiet: QuietFlag = False,
    resources: Annotated[
        str | None,
        typer.Option("--resources", help="Use a build's registers and shared memory (see `resources`)."),
    ] = None,
) -> None:
    """Simulate a schedule on an arch: time and interval, TFLOPS, bandwidth, utilization per unit, and
    the verdict (where the time goes)."""
    from gpusim.api import predict as api_predict
    from gpusim.report.console import make_console, progress_bar, write_csv
    from gpusim.report.summary import prediction_csv_row, prediction_tables

    _one_format(as_json, as_csv)
    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    check_output_path(trace, "--trace", TRACE_SUFFIXES)
    if (sm is not None or window is not None) and plot is None:
        raise InputError("--sm and --window choose what --plot draws; add --plot FILE.png")
    if window is not None:
        from gpusim.report.timeline import parse_window_text

        parse_window_text(window)
    if arch is not None and not arch.strip():
        raise InputError("--arch '': an empty arch; give an id, alias or YAML path, or leave --arch out for "
                         "the schedule's reference arch")  # fmt: skip
    from gpusim.sequence import is_sequence_file

    if is_sequence_file(schedule):  # a kernel list (kernels:), predicted kernel by kernel
        if trace is not None or plot is not None or as_csv or resources is not None:
            raise InputError(
                "--trace, --plot, --csv and --resources need one kernel; predict a kernel of the sequence by name"
            )
        _predict_sequence(schedule, arch, _overrides(sets), as_json, _costs(calibrated, overlay),
                          model=model, exact=exact, max_events=max_events or None)  # fmt: skip
        return
    record = trace is not None or plot is not None
    with progress_bar(f"{schedule}: searching", quiet or not schedule.startswith("auto")) as progress:
        build = _compiler_commands.build_for_predict(schedule, arch, resources) if resources else None
        prediction = api_predict(schedule, arch or None, costs=_costs(calibrated, overlay), model=model,
                                 record=record, exact=exact, max_events=max_events or None, on_progress=progress,
                                 resources=build, **_overrides(sets))  # fmt: skip
    run = prediction.timeline
    if plot is not None:
        from gpusim.report.plot_timeline import plot_timeline
        from gpusim.report.timeline import check_sm, parse_window

        sm_index = check_sm(run, sm) if sm is not None else None
        window_ns = parse_window(window, run.kernel_ns) if window is not None else None
        plot_timeline(run, plot, sm_index, window_ns, verdict=prediction.verdict, costs=prediction.costs)
    if trace is not None:
        from gpusim.report.trace import write_trace

        write_trace(run, trace)
    if as_json:
        _print_json(prediction.to_dict())
    elif as_csv:
        write_csv([prediction_csv_row(prediction)])
    else:
        console = make_console()
        for table in prediction_tables(prediction):
            console.print(table)


def _predict_sequence(
    path: str, arch: str | None, overrides: dict[str, Any], as_json: bool, costs: str, **options: Any
) -> None:
    from rich.table import Table

    from gpusim.report.console import make_console
    from gpusim.sequence import load_sequence, predict_sequence

    seq = load_sequence(path)
    result = predict_sequence(seq, arch or seq.arch or "h100", overrides, costs=costs, **options)
    if as_json:
        _print_json(result.as_dict())
        return
    table = Table(title=f"{result.name} on {result.arch}: {result.time_us:,.2f} us")
    for col in ("kernel", "schedule", "launch", "time us", "TFLOPS", "HBM GB/s", "bottleneck"):
        table.add_column(col)
    for k in result.kernels:
        chosen = (k.prediction.choice or {}).get("schedule")
        table.add_row(
            k.name if k.repeat == 1 else f"{k.name} x{k.repeat}",
            f"{k.schedule} -> {chosen}" if chosen else k.schedule,
            k.launch if not k.launch_hidden_us else f"{k.launch} (-{k.launch_hidden_us:.2f} us)",
            f"{k.time_us:,.2f}",
            f"{k.prediction.tflops:,.1f}",
            f"{k.prediction.hbm_gbps:,.0f}",
            k.prediction.bottleneck or "",
        )
    make_console().print(table)


@app.command("schedules")
def schedules_list(as_json: JsonFlag = False, as_csv: CsvFlag = False) -> None:
    """The built-in schedules: reference arch, description, and the problem and parameters `--set`
    accepts with their defaults."""
    from rich.table import Table

    from gpusim.api import load_schedule, schedules
    from gpusim.report.console import make_console, write_csv

    _one_format(as_json, as_csv)
    specs = [load_schedule(name) for name in schedules()]
    rows = [
        {"schedule": s.schedule, "reference_arch": s.reference_arch, "description": " ".join(s.description.split()),
         "problem": dict(s.problem), "params": dict(s.params)}
        for s in specs
    ]  # fmt: skip
    if as_json:
        _print_json(rows)
        return
    if as_csv:
        flat = [{**r, "problem": ";".join(f"{k}={v}" for k, v in r["problem"].items()),
                 "params": ";".join(f"{k}={v}" for k, v in r["params"].items())} for r in rows]  # fmt: skip
        write_csv(flat)
        return
    table = Table(title="gpusim schedules (--set KEY=VALUE overrides any problem value or parameter)",
                  title_justify="left", show_lines=True)  # fmt: skip
    table.add_column("schedule", no_wrap=True)
    table.add_column("arch", no_wrap=True)
    table.add_column("description, problem and parameters (defaults)", overflow="fold")
    for r in rows:
        text = (f"{r['description']}\nproblem: " + ", ".join(f"{k}={v}" for k, v in r["problem"].items())
                + "\nparams: " + ", ".join(f"{k}={v}" for k, v in r["params"].items()))  # fmt: skip
        table.add_row(r["schedule"], r["reference_arch"], text)
    make_console().print(table)


@app.command("schema")
def schema_cmd(
    kind: Annotated[str, typer.Argument(help="schedule (default) or arch.")] = "schedule",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the JSON Schema (for editors and checks).")
    ] = False,
) -> None:
    """The schedule format (every op and its fields), or with --json its JSON Schema (also of arch files)."""
    from gpusim.schedule.jsonschema import arch_json_schema, op_reference, schedule_json_schema

    if kind not in ("schedule", "arch"):
        raise InputError(f"gpusim schema: unknown kind '{kind}'; expected schedule or arch")
    if as_json:
        _print_json(schedule_json_schema() if kind == "schedule" else arch_json_schema())
        return
    if kind == "arch":
        raise InputError(
            "gpusim schema arch: only --json is available (the arch reference is `gpusim archs show`)"
        )
    for op, summary, fields in op_reference():
        sys.stdout.write(f"{op}: {summary}\n")
        for name, type_text, default, description in fields:
            sys.stdout.write(
                f"    {name:<12} {type_text:<28} {default:<10} {description.splitlines()[0] if description else ''}\n"
            )


@app.command("compare")
def compare_cmd(
    schedules: Annotated[list[str], typer.Argument(help="One or more schedule names (or auto:gemm).")],
    arch: Annotated[
        str, typer.Option("--arch", "-a", help="Arch id, or several comma-separated (v100,a100,h100,b200).")
    ] = "",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE override applied to every variant.")
    ] = None,
    vs: Annotated[
        list[str] | None,
        typer.Option("--vs", help="An alternative KEY=VALUE[,KEY=VALUE] set; each --vs adds a variant."),
    ] = None,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    calibrated: CalibratedFlag = True,
    overlay: OverlayOption = None,
    plot: Annotated[str | None, typer.Option("--plot", help="Write a grouped bar chart PNG here.")] = None,
) -> None:
    """Run variants side by side on one problem (schedules, --vs parameter sets, or comma-separated
    archs): time, TFLOPS, utilizations and the verdict of each; refused variants say why."""
    from gpusim.comparison import build_variants, compare
    from gpusim.report.compare import compare_csv_rows, compare_notes, compare_table
    from gpusim.report.console import make_console, write_csv
    from gpusim.schedule.load import parse_override

    _one_format(as_json, as_csv)
    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    archs = [a.strip() for a in arch.split(",")] if arch else []
    if archs and not all(archs):
        raise InputError(f"--arch '{quote(arch)}': an empty arch id between commas")
    vs_sets = []
    for item in vs or []:
        extra = {}
        for part in item.split(","):
            if "=" not in part:
                raise InputError(f"--vs '{quote(item)}': expected KEY=VALUE")
            key, value = parse_override(part)
            if key in extra:
                raise InputError(f"--vs '{quote(item)}': {quote(key, 40)} is set twice")
            extra[key] = value
        vs_sets.append(extra)
    variants = build_variants(list(schedules), archs, vs_sets)
    result = compare(variants, costs=_costs(calibrated, overlay), **_overrides(sets))
    if plot is not None:
        from gpusim.report.plot_compare import plot_compare

        plot_compare(result, plot)
    if as_json:
        _print_json(result.to_dict())
    elif as_csv:
        write_csv(compare_csv_rows(result))
    else:
        console = make_console()
        console.print(compare_table(result))
        for line in compare_notes(result):
            console.print(line, highlight=False)


@app.command("roofline")
def roofline_cmd(
    schedules: Annotated[
        list[str] | None,
        typer.Argument(help="Schedules to place (default: every built-in schedule legal here)."),
    ] = None,
    arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id, alias or YAML path.")] = "h100",
    sets: SetsOption = None,
    calibrated: CalibratedFlag = True,
    overlay: OverlayOption = None,
    plot: Annotated[str | None, typer.Option("--plot", help="Write the roofline PNG here.")] = None,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """The arch's roofs (HBM, L2, tensor peak per dtype) and each predicted kernel by arithmetic intensity."""
    from rich.table import Table

    from gpusim.api import load_arch
    from gpusim.api import predict as api_predict
    from gpusim.api import schedules as all_schedules
    from gpusim.report.console import make_console, progress_bar, write_csv
    from gpusim.report.roofline import point, roofs

    _one_format(as_json, as_csv)
    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    costs = _costs(calibrated, overlay)
    arch_obj = load_arch(arch, costs=costs)
    overrides = _overrides(sets)
    names = list(schedules or all_schedules())
    points, skipped = [], []
    with progress_bar("roofline", quiet) as progress:
        for i, name in enumerate(names):
            progress(i, len(names))
            try:
                pred = api_predict(name, arch_obj, costs=costs, attribute=False, **overrides)
            except GpusimError as exc:
                skipped.append(f"{name}: {exc}")
                continue
            pt = point(pred, arch_obj, str(pred.problem.get("dtype", "bf16")))
            if pt is None:
                skipped.append(f"{name}: no FLOPs or no HBM traffic, so no arithmetic intensity")
            else:
                points.append(pt)
    if not points:
        raise InputError("roofline: none of the schedules could be placed: " + "; ".join(skipped))
    r = roofs(arch_obj)
    costs_name = arch_obj.calibration.origin
    if plot is not None:
        from gpusim.report.plot_roofline import plot_roofline

        plot_roofline(r, points, plot, costs=costs_name)
    if as_json:
        _print_json({"roofs": r.as_dict(), "costs": costs_name, "points": [p.as_dict() for p in points],
                     "skipped": skipped})  # fmt: skip
        return
    if as_csv:
        write_csv([{**p.as_dict(), "arch": arch_obj.id, "costs": costs_name} for p in points])
        return
    table = Table(title=f"roofline on {arch_obj.id}: HBM {r.hbm_bytes_per_s / 1e12:.2f} TB/s ({costs_name} costs)",
                  title_justify="left")  # fmt: skip
    for col in ("schedule", "dtype", "FLOP/byte (HBM)", "TFLOPS", "roof TFLOPS", "of roof", "time (us)"):
        table.add_column(col, justify="left" if col in ("schedule", "dtype") else "right")
    for p in points:
        table.add_row(p.label, p.dtype, f"{p.intensity_flop_per_byte:,.1f}", f"{p.tflops:,.1f}",
                      f"{p.bound_tflops:,.1f}", f"{p.tflops / p.bound_tflops:.0%}", f"{p.time_us:,.2f}")  # fmt: skip
    console = make_console()
    console.print(table)
    for line in skipped:
        console.print(f"not placed: {line}", highlight=False)


FilesArg = Annotated[list[str], typer.Argument(help="Measurement CSV files (data/measurements/*.csv).")]


@app.command("validate")
def validate_cmd(
    files: FilesArg,
    arch: Annotated[str | None, typer.Option("--arch", "-a", help="Only rows of this arch.")] = None,
    calibrated: CalibratedFlag = True,
    max_events: Annotated[
        int,
        typer.Option(
            "--max-events",
            help="Work limit per simulation in events simulated in detail (0: none); a row over it is skipped.",
        ),
    ] = DEFAULT_MAX_EVENTS,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes (default: CPU count).")] = 0,
    plot: Annotated[
        str | None, typer.Option("--plot", help="Also write a predicted-vs-measured plot (PNG) here.")
    ] = None,
    markdown: Annotated[
        str | None, typer.Option("--markdown", help="Also write the accuracy report (Markdown) here.")
    ] = None,
    reuse_unchanged: Annotated[
        bool,
        typer.Option(
            "--reuse-unchanged",
            help="With --markdown: take each row whose inputs (the row, arch files, its arch's overlay, "
            "schedule files, options) are unchanged from the row results stored beside the report "
            "(<report>_rows.csv) instead of predicting it again; rows an interrupted run finished "
            "(its journal, <report>_rows.journal.csv) are taken too.",
        ),
    ] = False,
    reuse_over_limit: Annotated[
        bool,
        typer.Option(
            "--reuse-over-limit",
            help="With --reuse-unchanged: also take the rows that were over the work limit (by default "
            "they are predicted again, since gpusim's code, which the digest does not cover, may have "
            "become faster); for a run after changes that cannot touch those rows' simulations.",
        ),
    ] = False,
    ablate: Annotated[
        bool,
        typer.Option(
            "--ablate",
            help="With --markdown: also predict the rows again with each switchable mechanism off (on the "
            "rows whose arch has it on) and add the ablation table to the report (variant rows in "
            "<report>_ablation_rows.csv).",
        ),
    ] = False,
    model: ModelOption = None,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Predict every measured row and report the error per arch and schedule family. With --markdown,
    the accuracy report and every row's result (<report>_rows.csv) are written."""
    from gpusim.calibrate.report import validate_csv_rows, validate_tables
    from gpusim.calibrate.validate import run_validate
    from gpusim.report.console import make_console, progress_bar, write_csv

    _one_format(as_json, as_csv)
    check_output_path(plot or None, "--plot", PLOT_SUFFIXES)
    check_output_path(markdown or None, "--markdown", (".md",))
    if reuse_unchanged and not markdown:
        raise InputError("--reuse-unchanged: needs --markdown (the row results are stored beside the report)")
    if reuse_over_limit and not reuse_unchanged:
        raise InputError("--reuse-over-limit: needs --reuse-unchanged")
    if ablate and not markdown:
        raise InputError("--ablate: needs --markdown (the ablation table is a section of the report)")
    costs = "calibrated" if calibrated else "datasheet"
    carry = None
    journal = None
    ablation_file, ablation_previous = None, {}
    if markdown:
        from gpusim.calibrate.carryover import (
            Carryover,
            Journal,
            journal_file_for,
            read_previous,
            rows_file_for,
        )

        rows_file = rows_file_for(markdown)
        check_output_path(str(rows_file), "--markdown (its row results)", (".csv",))
        carry = Carryover(costs, model, max_events or None, arch, reuse_over_limit=reuse_over_limit)
        journal_file = journal_file_for(rows_file)
        if reuse_unchanged:
            carry.previous = read_previous(rows_file, journal_file)
        if ablate:
            from gpusim.calibrate.ablation import ablation_rows_file_for

            ablation_file = ablation_rows_file_for(markdown)
            check_output_path(str(ablation_file), "--ablate (its row results)", (".csv",))
            ablation_previous = read_previous(ablation_file, journal_file) if reuse_unchanged else {}
        refuse_writing_over_inputs(files, {"--markdown": markdown, "--markdown (its row results)": str(rows_file),
                                     "--ablate (its row results)": str(ablation_file) if ablation_file else None,
                                     "--markdown (its journal)": str(journal_file)})  # fmt: skip
        journal = Journal(journal_file, keep=reuse_unchanged)
    refuse_writing_over_inputs(files, {"--plot": plot or None})
    with progress_bar("validate: rows", quiet) as progress:
        results, summary = run_validate(files, costs=costs, arch_filter=arch, jobs=jobs or None,
                                        max_events=max_events or None, on_progress=progress,
                                        model=model, carry=carry,
                                        on_results=journal.recorder(carry) if journal is not None else None)  # fmt: skip
    if plot:
        from gpusim.calibrate.plot import plot_predicted_vs_measured

        plot_predicted_vs_measured(results, plot, f"gpusim: predicted vs measured ({summary['costs']} costs)")
    ablation_lines = None
    if ablate and ablation_file is not None:
        from gpusim.calibrate.ablation import ablation_lines as ablation_section
        from gpusim.calibrate.ablation import run_ablations
        from gpusim.calibrate.carryover import write_row_parts

        with progress_bar("validate --ablate: rows", quiet) as progress:
            ablations = run_ablations(files, results, costs=costs, model=model, arch_filter=arch, jobs=jobs or None,
                                      max_events=max_events or None, previous=ablation_previous,
                                      on_progress=lambda _name, done, total: progress(done, total),
                                      journal=journal)  # fmt: skip
        ablation_lines = ablation_section(results, ablations)
        write_row_parts(ablation_file, [(ab.results, ab.carry) for ab in ablations])
        summary["ablations"] = {ab.mechanism: {"rows": len(ab.results), "carried_over": len(ab.carry.carried)}
                                for ab in ablations}  # fmt: skip
    if markdown:
        from pathlib import Path

        from gpusim.calibrate.accuracy import accuracy_markdown
        from gpusim.calibrate.carryover import write_rows

        Path(markdown).write_text(
            accuracy_markdown(results, summary, files, ablation_lines), encoding="utf-8"
        )
        write_rows(rows_file, results, carry)
        if journal is not None:
            journal.close()
    if as_json:
        _print_json({"rows": [r.as_dict() for r in results], "summary": summary})
    elif as_csv:
        write_csv(validate_csv_rows(results))
    else:
        console = make_console()
        for table in validate_tables(results, summary):
            console.print(table)


@app.command("calibrate")
def calibrate_cmd(
    files: FilesArg,
    arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id to calibrate.")],
    fit: Annotated[
        str | None,
        typer.Option("--fit", help="Comma-separated parameters to fit (default: what the rows identify)."),
    ] = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="Write the overlay here (default: <user calibration dir>/<id>.yaml, which "
            "predict then uses; set GPUSIM_CALIBRATION_DIR to choose the directory).",
        ),
    ] = None,
    max_rows: Annotated[
        int,
        typer.Option(
            "--max-rows", help="Fit on at most this many rows (spread evenly; 0: every usable row)."
        ),
    ] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only; write nothing.")] = False,
    no_micro: Annotated[
        bool,
        typer.Option("--no-micro", help="Ignore microbenchmark rows (gpusim measure --micro) among FILES."),
    ] = False,
    model: ModelOption = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", help="Processes the row predictions run in (default 1; 0: the CPU count)."
        ),
    ] = 1,
    cache: Annotated[
        str | None,
        typer.Option(
            "--cache",
            help="Keep every simulation's result in this directory and reuse those whose inputs (gpusim's "
            "code, the arch, the schedule files, the problem) are unchanged: a stopped fit resumes there.",
        ),
    ] = None,
    jacobian: Annotated[
        str,
        typer.Option(
            "--jacobian",
            help="broyden (default): simulate each row's slopes at the first iteration, then update them "
            "from each step's simulations; fresh: simulate them at every iteration (one simulation per row "
            "and parameter each time).",
        ),
    ] = "broyden",
    max_iterations: Annotated[
        int,
        typer.Option(
            "--max-iterations",
            help="Gauss-Newton iterations at most (default 6); the report says which "
            "parameters the last one still moved.",
        ),
    ] = 6,
    max_fit_events: Annotated[
        int,
        typer.Option(
            "--max-fit-events",
            help="Leave out of the fit the rows whose prediction simulates more events than this in detail "
            "(they are listed; 0: none left out).",
        ),
    ] = 0,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Fit the arch's calibration block to measured rows (least squares on log error, bounded), starting
    from its datasheet costs. Microbenchmark rows (gpusim measure --micro) among FILES hold the fields they
    measure instead of fitting them. Never writes into the installed package."""
    from pathlib import Path

    from gpusim.api import load_arch
    from gpusim.calibrate.fit import calibrate
    from gpusim.calibrate.measurements import read_measurements
    from gpusim.calibrate.overlay import user_overlay_path, write_overlay
    from gpusim.calibrate.params import parse_fit_names
    from gpusim.calibrate.report import calibrate_text
    from gpusim.report.console import progress_bar

    if not dry_run:
        check_output_path(out, "--out", YAML_SUFFIXES)
        refuse_writing_over_inputs([*files, arch], {"--out": out})
    if max_rows < 0:
        raise InputError(f"--max-rows {max_rows}: expected 0 (every usable row) or more")
    if jobs < 0:
        raise InputError(f"--jobs {jobs}: expected 0 (the CPU count) or more")
    if jacobian not in ("broyden", "fresh"):
        raise InputError(f"--jacobian {quote(jacobian, 40)}: expected broyden or fresh")
    if max_iterations < 1:
        raise InputError(f"--max-iterations {max_iterations}: expected 1 or more")
    if max_fit_events < 0:
        raise InputError(f"--max-fit-events {max_fit_events}: expected 0 (no row left out) or more")
    import os

    from gpusim.calibrate.store import open_store
    from gpusim.mechanisms import with_model

    open_store(cache)  # a path that cannot be the cache is refused before any simulation

    base = with_model(load_arch(arch, costs="datasheet"), model)
    if (
        not dry_run and not out and user_overlay_path(base.id).parent.is_dir()
    ):  # a FIFO or a loop there: refused now
        check_output_path(str(user_overlay_path(base.id)), "calibration overlay", YAML_SUFFIXES)
    with progress_bar(f"calibrate {base.id}: simulations", quiet) as progress:
        result = calibrate(read_measurements(list(files)), base, parse_fit_names(fit, base), max_rows=max_rows,
                           on_progress=progress, use_micro=not no_micro, jobs=jobs or os.cpu_count() or 1,
                           cache_dir=cache, max_fit_events=max_fit_events or None, jacobian=jacobian,
                           max_iterations=max_iterations)  # fmt: skip
    target = Path(out) if out else user_overlay_path(base.id)
    if not dry_run:
        write_overlay(target, base.id, result["calibration"])
        result["written"] = str(target)
    if as_json:
        _print_json(result)
        return
    sys.stdout.write(calibrate_text(result) + "\n")


@app.command("measure")
def measure_cmd(
    out: Annotated[
        str | None,
        typer.Option(
            "--out", help="Measurement CSV to write (default measured_local.csv; --micro: micro_local.csv)."
        ),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A smaller set (for a smoke test).")] = False,
    micro: Annotated[
        bool,
        typer.Option(
            "--micro",
            help="Run the microbenchmarks of kernels/micro/ instead (cuda-python, no PyTorch; "
            "docs/microbenchmarks.md). Without a GPU they are built, then exit status 2.",
        ),
    ] = False,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="--micro: comma-separated experiments (wgmma, wgmma_overlap, operand_path, mma_sync, "
            "tensor_clock, l2_bandwidth) or parts of variant names.",
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target", help="--micro: SM target to build for (default: the GPU's; sm_90a without one)."
        ),
    ] = None,
    build_dir: Annotated[
        str | None, typer.Option("--build-dir", help="--micro: keep the cubins in this directory.")
    ] = None,
    list_only: Annotated[
        bool,
        typer.Option("--list", help="--micro: list the variants (for --target, default sm_90a) and stop."),
    ] = False,
) -> None:
    """Time a standard set on the local NVIDIA GPU (torch.mm GEMMs, SDPA attention, a copy kernel), or
    with --micro the engine-fidelity microbenchmarks (wgmma, mma.sync, tensor clock, L2)."""
    if micro:
        from gpusim.calibrate.micro.catalog import check_request, variants_for
        from gpusim.calibrate.micro.run import run_micro

        if quick:
            raise InputError("--quick applies to the standard set; with --micro use --only")
        check_request(target, only)
        if list_only:
            chosen = variants_for(target or "sm_90a", only)
            if not chosen:
                raise InputError(
                    f"--only {quote(only)}: no microbenchmark variant of {target or 'sm_90a'} matches"
                )
            for v in chosen:
                grid = "1 SM" if v.one_sm else "all SMs"
                sys.stdout.write(f"{v.name:40s} {v.experiment:14s} {v.settles:6s} {v.source}:{v.kernel} "
                                 f"{v.threads} threads, {grid}\n")  # fmt: skip
            return
        path = out or "micro_local.csv"
        check_output_path(path, "--out", (".csv",))
        if build_dir is not None:
            check_build_dir(build_dir)
        n = run_micro(
            path, only=only, target=target, build_dir=build_dir, command="gpusim " + " ".join(sys.argv[1:])
        )
        sys.stdout.write(f"wrote {n} rows to {path}\n")
        return
    if only or target or build_dir or list_only:
        raise InputError("--only, --target, --build-dir and --list need --micro")
    from gpusim.calibrate.measure import run_measure

    path = out or "measured_local.csv"
    check_output_path(path, "--out", (".csv",))
    n = run_measure(path, quick=quick)
    sys.stdout.write(f"wrote {n} rows to {path}\n")


from gpusim.explore.commands import register as register_explore_commands  # noqa: E402

register_explore_commands(app)  # sweep, tune, rank-check (gpusim/explore/commands.py)


def main() -> None:
    """Entry point: run the app; every failure is one line on stderr with its exit status
    (usage errors too, with a hint to --help; Ctrl-C is 130)."""
    run_guarded(app)


if __name__ == "__main__":
    main()
