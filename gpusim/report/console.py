"""A rich console sized for wide tables, also when output is piped."""

from __future__ import annotations

import sys

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """A console that keeps wide tables on one line when stdout is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 220
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)
