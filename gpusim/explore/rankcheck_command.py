"""``gpusim rank-check``: order agreement on measured ablations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register_rank_check(app: typer.Typer) -> None:
    """Add ``gpusim rank-check``."""

    @app.command("rank-check")
    def rank_check_cmd(
        files: Annotated[
            list[str],
            typer.Argument(help="Measurement CSVs with ablations (data/measurements/ablations.csv)."),
        ],
        datasheet: Annotated[
            bool, typer.Option("--datasheet", help="Datasheet costs instead of the calibration.")
        ] = False,
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="Local processes (default: every core).")] = 0,
        scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address.")] = None,
        markdown_out: Annotated[
            str | None, typer.Option("--markdown", help="Write the generated Markdown here.")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ) -> None:
        """Per ablation: pairwise order agreement with the measurements and the top pick's share of the best."""
        from gpusim.cli_guard import check_output_path, refuse_writing_over_inputs, write_json
        from gpusim.explore.executors import make_executor
        from gpusim.explore.rankcheck import markdown, rank_check, summary

        check_output_path(markdown_out, "--markdown", (".md",))
        refuse_writing_over_inputs(files, {"--markdown": markdown_out})
        costs = "datasheet" if datasheet else "calibrated"
        executor = make_executor(scheduler, jobs or None)
        try:
            results = rank_check(files, costs, executor)
        finally:
            executor.close()
        if not any(r.pairs for r in results):
            from gpusim.errors import InputError, quote

            raise InputError(f"rank-check {quote(' '.join(files), 120)}: no ablation has two predicted rows to "
                             "order (group rows by an 'ablation' column; see data/measurements/ablations.csv)")  # fmt: skip
        if markdown_out:
            try:
                Path(markdown_out).write_text(markdown(results, costs, files), encoding="utf-8")
            except OSError as exc:
                from gpusim.errors import InputError

                raise InputError(f"--markdown {markdown_out}: cannot write ({exc.strerror})") from None
        if as_json:
            write_json({"summary": summary(results), "ablations": [r.as_dict() for r in results]})
            return
        from rich.table import Table

        from gpusim.report.console import make_console

        table = Table(title=f"rank check ({costs} costs; a predicted tie within 0.5% counts as wrong)",
                      title_justify="left")  # fmt: skip
        for col in ("ablation", "arch", "pairs right", "top pick", "best measured", "top-pick share"):
            table.add_column(col, justify="right" if col in ("pairs right", "top-pick share") else "left")
        for r in results:
            share = "-" if r.top_pick_share is None else f"{r.top_pick_share:.1%}"
            table.add_row(
                r.group, r.arch, f"{r.agree}/{r.pairs}", r.top_pick or "-", r.best_measured or "-", share
            )
        console = make_console()
        console.print(table)
        total = summary(results)
        console.print(f"{total['pairs_right']} of {total['pairs']} pairs right ({total['ties']} ties); "
                      f"{total['groups_all_pairs_right']} of {total['groups_scored']} ablations fully right", highlight=False)  # fmt: skip
        for r in results:
            for row in r.rows:
                if row.skipped:
                    console.print(f"not predicted: {r.group}: {row.label}: {row.skipped}", highlight=False)
