"""Calibrated arch overlays: ``archs/calibrated/<id>.yaml`` holds just a fitted calibration block."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpusim.arch import Arch, Calibration, archs_dir
from gpusim.errors import InputError
from gpusim.yamlio import read_yaml_mapping


def overlays_dir() -> Path:
    """Where the shipped overlays live (inside the wheel's archs data)."""
    return archs_dir() / "calibrated"


def overlay_path(arch_id: str) -> Path:
    """The shipped overlay file for ``arch_id`` (may not exist)."""
    return overlays_dir() / f"{arch_id}.yaml"


@cache
def load_overlay(arch_id: str) -> dict[str, Any] | None:
    """The calibration mapping of the shipped overlay for ``arch_id``, or None."""
    path = overlay_path(arch_id)
    if not path.is_file():
        return None
    return read_overlay_file(path)


def read_overlay_file(path: Path) -> dict[str, Any]:
    """The ``calibration`` mapping of an overlay file."""
    data = read_yaml_mapping(path)
    cal = data.get("calibration")
    if not isinstance(cal, dict):
        raise InputError(f"{path}: an arch overlay needs a 'calibration' mapping")
    return cal


def with_calibration(arch: Arch, values: dict[str, Any]) -> Arch:
    """``arch`` with its calibration block replaced by ``values`` (validated)."""
    cal = Calibration.model_validate({**values})
    return arch.model_copy(update={"calibration": cal})


def datasheet_calibration(arch: Arch) -> dict[str, Any]:
    """The arch file's own calibration block as a plain mapping."""
    return arch.calibration.model_dump()


def write_overlay(path: Path, arch_id: str, calibration: dict[str, Any]) -> None:
    """Write an overlay file: a comment, the arch id and the calibration block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump({"arch": arch_id, "calibration": calibration}, sort_keys=False, width=110)
    path.write_text(f"# Calibrated costs for {arch_id}, written by `gpusim calibrate`; merged over "
                    f"archs/{arch_id}.yaml by `gpusim predict` (bypass with --datasheet).\n" + body)  # fmt: skip
