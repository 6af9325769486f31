"""The ``gpusim`` command's entry point: Ctrl-C is one line and exit status 130 from the first instant,
also while the command line's modules are still loading (seconds on a loaded machine)."""

from __future__ import annotations

import sys


def main() -> None:
    """Load the command line and run it."""
    try:
        from gpusim.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("gpusim: interrupted\n")
        sys.exit(130)
    cli_main()
