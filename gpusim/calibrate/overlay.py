"""Calibration overlays: a YAML file holding just a fitted ``calibration`` block for one arch.

Shipped overlays live read-only in the package (``archs/calibrated/<id>.yaml``); ``gpusim calibrate``
writes to the user's calibration directory (``GPUSIM_CALIBRATION_DIR``, else the platform's user data
directory) or to ``--out``, never into the installed package. A user overlay takes precedence.
"""

from __future__ import annotations

import math
import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpusim.arch import archs_dir
from gpusim.errors import InputError, quote
from gpusim.yamlio import read_yaml_mapping

CALIBRATION_DIR_ENV = "GPUSIM_CALIBRATION_DIR"


def shipped_overlays_dir() -> Path:
    """Where the shipped overlays live (inside the package data; read-only)."""
    return archs_dir() / "calibrated"


def user_overlays_dir() -> Path:
    """Where ``gpusim calibrate`` writes overlays by default (``$GPUSIM_CALIBRATION_DIR`` if set)."""
    configured = os.environ.get(CALIBRATION_DIR_ENV)
    if configured:
        return Path(configured)
    # imported here: platformdirs is only needed when calibration files are looked up
    import platformdirs

    return Path(platformdirs.user_data_dir("gpusim")) / "calibrated"


def user_overlay_path(arch_id: str) -> Path:
    """The file ``gpusim calibrate`` writes for ``arch_id`` without ``--out``."""
    return user_overlays_dir() / f"{arch_id}.yaml"


def find_overlay(arch_id: str) -> Path | None:
    """The overlay that calibrated predictions of ``arch_id`` use: the user's, else the shipped one."""
    for directory in (user_overlays_dir(), shipped_overlays_dir()):
        path = directory / f"{arch_id}.yaml"
        if path.is_file():
            return path
    return None


def overlay_files() -> list[Path]:
    """Every overlay in effect, one per arch id (user overlays shadow shipped ones)."""
    found: dict[str, Path] = {}
    for directory in (shipped_overlays_dir(), user_overlays_dir()):
        if directory.is_dir():
            # regular files only, as find_overlay (a symlink loop or a FIFO named *.yaml is no overlay)
            found.update({p.stem: p for p in sorted(directory.glob("*.yaml")) if p.is_file()})
    return [found[k] for k in sorted(found)]


def read_overlay_file(path: Path) -> dict[str, Any]:
    """The ``calibration`` mapping of an overlay file."""
    return dict(_read_overlay_cached(*_cache_key(path))[1])


def read_overlay_arch(path: Path) -> str | None:
    """The arch id an overlay file was fitted for (its ``arch`` key), if it names one."""
    return _read_overlay_cached(*_cache_key(path))[0]


def _cache_key(path: Path) -> tuple[Path, int]:
    """The resolved path and its modification time; a symlink loop or a missing file is one line."""
    try:
        return Path(path).resolve(), Path(path).stat().st_mtime_ns
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise InputError(f"{quote(str(path))}: cannot read the overlay ({quote(str(exc), 120)})") from None


OVERLAY_KEYS = ("arch", "calibration")
"""The top-level keys of an overlay file."""


@cache
def _read_overlay_cached(path: Path, _mtime_ns: int) -> tuple[str | None, dict[str, Any]]:
    data = read_yaml_mapping(path)
    unknown = sorted(str(k) for k in data if k not in OVERLAY_KEYS)
    if unknown:
        raise InputError(f"{path}: unknown key '{quote(unknown[0], 60)}' in a calibration overlay (expected "
                         f"{', '.join(OVERLAY_KEYS)})")  # fmt: skip
    cal = data.get("calibration")
    if not isinstance(cal, dict):
        raise InputError(f"{path}: an arch overlay needs a 'calibration' mapping")
    arch = data.get("arch")
    if arch is not None and not isinstance(arch, str):
        raise InputError(f"{path}: field 'arch': expected an arch id (text), got {quote(repr(arch), 60)}")
    _check_provenance(path, cal.get("provenance"))
    return arch, cal


_QUANTILES = ("q10", "q50", "q90")


def _check_provenance(path: Path, provenance: Any) -> None:
    """The parts of ``provenance`` predictions read: a mapping, and its ``residuals`` (per family: ``n``
    rows, a count, and the quantiles q10 <= q50 <= q90 of log(measured/predicted), finite numbers)."""
    if provenance is None:
        return
    if not isinstance(provenance, dict):
        raise InputError(f"{path}: field 'calibration.provenance': expected a mapping, "
                         f"got {quote(repr(provenance), 60)}")  # fmt: skip
    residuals = provenance.get("residuals")
    if residuals is None:
        return
    if not isinstance(residuals, dict):
        raise InputError(f"{path}: field 'calibration.provenance.residuals': expected a mapping of schedule "
                         f"families, got {quote(repr(residuals), 60)}")  # fmt: skip
    for family, q in residuals.items():
        field = f"calibration.provenance.residuals.{quote(str(family), 40)}"
        if not isinstance(q, dict):
            raise InputError(f"{path}: field '{field}': expected a mapping with n, q10, q50, q90, "
                             f"got {quote(repr(q), 60)}")  # fmt: skip
        n = q.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"{path}: field '{field}.n': expected a row count (an integer >= 0), "
                             f"got {quote(repr(n), 60)}")  # fmt: skip
        for key in _QUANTILES:
            x = q.get(key)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > 50:
                raise InputError(f"{path}: field '{field}.{key}': expected a finite number (a log ratio, "
                                 f"|x| <= 50), got {quote(repr(x), 60)}")  # fmt: skip
        if not q["q10"] <= q["q50"] <= q["q90"]:
            raise InputError(f"{path}: field '{field}': expected q10 <= q50 <= q90, got "
                             f"{q['q10']}, {q['q50']}, {q['q90']}")  # fmt: skip


def write_overlay(path: Path, arch_id: str, calibration: dict[str, Any]) -> None:
    """Write an overlay file: a comment, the arch id and the calibration block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump({"arch": arch_id, "calibration": calibration}, sort_keys=False, width=110)
    path.write_text(f"# Calibrated costs for {arch_id}, written by `gpusim calibrate`; merged over "
                    f"archs/{arch_id}.yaml by `gpusim predict` (bypass with --datasheet).\n" + body)  # fmt: skip
