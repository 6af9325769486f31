"""``gpusim rank-check``."""

from __future__ import annotations

import typer


def register_rank_check(app: typer.Typer) -> None:
    """Add ``gpusim rank-check``."""
