"""A legend only where an axis has labelled artists (matplotlib warns on stderr otherwise)."""

from __future__ import annotations

from typing import Any


def legend(ax: Any, **kwargs: Any) -> None:
    """``ax.legend(**kwargs)`` when something on ``ax`` carries a label; nothing on an empty plot (every
    row skipped, every variant refused)."""
    if kwargs.get("handles") or ax.get_legend_handles_labels()[0]:
        ax.legend(**kwargs)
