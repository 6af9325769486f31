"""``gpusim tune``."""

from __future__ import annotations

import typer


def register_tune(app: typer.Typer) -> None:
    """Add ``gpusim tune``."""
