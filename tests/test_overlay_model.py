"""A calibration overlay carries the model it was fitted with: predictions with it run those mechanisms."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpusim import load_arch
from gpusim.errors import InputError
from gpusim.mechanisms import (
    DEFAULT_ON,
    KNOWN_BEFORE_MODEL_KNOWN,
    LEGACY_OVERLAY_MODEL,
    MECHANISMS,
    mechanisms_of,
    with_model,
)


def _overlay(tmp_path: Path, model: object, arch_id: str = "h800", known: object = None) -> Path:
    provenance = {} if model is None else {"model": model}
    if known is not None:
        provenance["model_known"] = known
    body = {"arch": arch_id, "calibration": {"energy_scale": 0.9, "provenance": provenance}}
    path = tmp_path / f"{arch_id}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def test_overlay_fitted_with_power_runs_with_power(tmp_path: Path) -> None:
    arch = load_arch("h800", costs=_overlay(tmp_path, ["power", "shared_tensor"]))
    # the mma.sync mechanisms and grid_dispatch came after the overlay (it records no model_known): on, as
    # by default
    later = {"mma_sync_warps", "mma_sync_issuing", "grid_dispatch"}
    assert mechanisms_of(arch) == {"power", "shared_tensor", *later}
    assert mechanisms_of(with_model(arch, "-power")) == {"shared_tensor", *later}
    assert mechanisms_of(with_model(arch, "default")) == DEFAULT_ON


def test_overlay_that_knew_a_mechanism_and_left_it_off_keeps_it_off(tmp_path: Path) -> None:
    known = sorted(MECHANISMS)
    arch = load_arch("h800", costs=_overlay(tmp_path, ["power", "shared_tensor"], known=known))
    assert mechanisms_of(arch) == {"power", "shared_tensor"}
    with pytest.raises(InputError, match=r"provenance\.model_known.*unknown mechanism 'warp_magic'"):
        load_arch("h800", costs=_overlay(tmp_path, ["power"], known=["warp_magic"]))


def test_overlay_without_recorded_model_is_legacy(tmp_path: Path) -> None:
    arch = load_arch("h800", costs=_overlay(tmp_path, None))
    assert mechanisms_of(arch) == LEGACY_OVERLAY_MODEL | (DEFAULT_ON - KNOWN_BEFORE_MODEL_KNOWN)
    assert "power" not in LEGACY_OVERLAY_MODEL


def test_datasheet_drops_the_overlays_model(tmp_path: Path) -> None:
    calibrated = load_arch("h800", costs=_overlay(tmp_path, ["power", "shared_tensor"]))
    datasheet = load_arch(calibrated, costs="datasheet")
    assert datasheet.calibration.origin == "datasheet"
    assert mechanisms_of(datasheet) == DEFAULT_ON


def test_overlay_with_unknown_mechanism_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"h800\.yaml.*provenance\.model.*unknown mechanism 'warp_magic'"):
        load_arch("h800", costs=_overlay(tmp_path, ["warp_magic"]))
    with pytest.raises(InputError, match="expected a list of mechanism names"):
        load_arch("h800", costs=_overlay(tmp_path, "power"))
