"""Shared matplotlib setup for gpusim's plots: the Agg backend, one palette, and saving with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from gpusim.errors import InputError

# One colour per kind of work, used by every plot (colour-blind-friendly Okabe-Ito hues).
KIND_COLORS = {
    "tensor": "#009E73",
    "memory": "#0072B2",
    "store": "#56B4E9",
    "cuda": "#E69F00",
    "sfu": "#CC79A7",
    "lsu": "#D55E00",
    "tmem": "#8C564B",
    "wait_data": "#BFD7EA",
    "wait_barrier": "#D9D9D9",
}

KIND_LABELS = {
    "tensor": "tensor core (mma)",
    "memory": "loads (TMA, cp.async, ldg)",
    "store": "stores",
    "cuda": "CUDA cores (fp32, cvt, int)",
    "sfu": "SFU (ex2)",
    "lsu": "LSU / smem (lds, sts)",
    "tmem": "TMEM load / store",
    "wait_data": "wait for data (stage, queue)",
    "wait_barrier": "wait: barrier / turnstile",
}

SERIES_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"]


def new_figure(width_in: float, height_in: float, **kwargs: Any) -> Any:
    """A figure at 100 dpi (so ``width_in`` 14 is 1400 pixels)."""
    return plt.figure(figsize=(width_in, height_in), dpi=100, **kwargs)


def save(fig: Any, path: str | Path, option: str = "--plot") -> Path:
    """Write a PNG; an unwritable path is a one-line error. The figure is closed either way."""
    target = Path(path)
    try:
        fig.savefig(target, dpi=100)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return target
