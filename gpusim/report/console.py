"""Console output: a rich console that honours ``COLUMNS``, CSV writing, and progress bars."""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

PIPE_WIDTH = 100
"""Text width when stdout is not a terminal and ``COLUMNS`` is not set."""


def output_width(stream: Any = None) -> int | None:
    """``COLUMNS`` when set; else None on a terminal (rich measures it), else PIPE_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    return None if stream.isatty() else PIPE_WIDTH


class _AsciiBoxes:
    """A text stream that reports an ASCII encoding, so rich draws table borders with ``+-|``: piped
    output then has as many bytes as characters (``awk 'length > 100'`` counts either)."""

    encoding = "ascii"

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False


def make_console(stderr: bool = False) -> Console:
    """A console sized by :func:`output_width` (tables fold their cells to fit); ASCII table borders
    when the stream is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    target = stream if stream.isatty() else _AsciiBoxes(stream)
    width = output_width(stream)
    # a height alongside the width keeps rich from assuming 80x25 on a forced "dumb" terminal
    return _Console(file=target, width=width, height=25 if width else None, highlight=False)


class _Console(Console):
    """A rich console whose reader going away (``| head``) raises BrokenPipeError, which the CLI guard
    ends with exit status 0, instead of rich's own ``SystemExit(1)`` (a status the CLI does not document)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def write_csv(rows: list[dict[str, Any]], stream: Any = None) -> None:
    """Rows as CSV on stdout; the header is the union of the rows' keys in first-seen order."""
    columns: list[str] = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(stream or sys.stdout, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in columns})


ProgressCallback = Callable[[int, int], None]


@contextmanager
def progress_bar(description: str, quiet: bool = False) -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr, fed by ``callback(done, total)``; silent with ``quiet`` or when
    stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=make_console(stderr=True), transient=True) as bar:  # fmt: skip
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
