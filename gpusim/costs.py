"""Which costs a prediction uses: the arch file's own (datasheet) or a calibration overlay merged over it.

``costs`` is ``"calibrated"`` (the overlay ``gpusim calibrate`` wrote for the arch, else the shipped one;
datasheet costs when neither exists), ``"datasheet"``, or the path of an overlay file. The merged arch
records the overlay file it came from in ``arch.calibration.provenance["overlay_file"]``, and runs with
the model mechanisms the overlay was fitted with (``provenance.model``; ``gpusim.mechanisms``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from gpusim.arch import Arch, Calibration, is_builtin_arch_id, load_arch
from gpusim.calibrate.overlay import find_overlay, read_overlay_arch, read_overlay_file
from gpusim.errors import InputError, format_validation_error, quote
from gpusim.mechanisms import overlay_model

CostsName = Literal["calibrated", "datasheet"]
COSTS_NAMES: tuple[str, ...] = ("calibrated", "datasheet")


def with_calibration(arch: Arch, values: dict[str, Any]) -> Arch:
    """``arch`` with its calibration block replaced by ``values`` (validated)."""
    cal = Calibration.model_validate({**values})
    return arch.model_copy(update={"calibration": cal})


def overlay_file_of(arch: Arch) -> str | None:
    """The overlay file ``arch``'s calibration block was read from, if any."""
    return arch.calibration.provenance.get("overlay_file")


def _fitted_model(arch: Arch) -> frozenset[str] | None:
    """The model the overlay ``arch`` carries was fitted with (None without an overlay)."""
    if overlay_file_of(arch) is None:
        return None
    try:
        provenance = arch.calibration.provenance
        return overlay_model(provenance.get("model"), provenance.get("model_known"))
    except InputError:
        return None


def _merge(arch: Arch, path: Path) -> Arch:
    values = read_overlay_file(path)
    fitted_for = read_overlay_arch(path)
    if fitted_for is not None and fitted_for != arch.id:
        raise InputError(f"{quote(path)}: the overlay was fitted for arch '{quote(fitted_for, 40)}', not "
                         f"'{arch.id}'; give that arch, or an overlay fitted for '{arch.id}'")  # fmt: skip
    if values.get("origin", "calibrated") != "calibrated":
        raise InputError(f"{quote(path)}: calibration.origin: an overlay's costs are 'calibrated', got "
                         f"{quote(repr(values['origin']), 60)}")  # fmt: skip
    provenance = {**(values.get("provenance") or {}), "overlay_file": str(path)}
    try:
        merged = with_calibration(arch, {**values, "origin": "calibrated", "provenance": provenance})
    except ValidationError as exc:
        raise InputError(format_validation_error(str(path), exc)) from None
    try:
        fitted_model = overlay_model(provenance.get("model"), provenance.get("model_known"))
    except InputError as exc:
        raise InputError(f"{quote(path)}: {exc}") from None
    if "power" in fitted_model and arch.power is None:
        raise InputError(f"{quote(path)}: the overlay was fitted with the power model, but arch '{arch.id}' has "
                         "no power block")  # fmt: skip
    return merged.model_copy(update={"mechanisms": sorted(fitted_model)})


def _datasheet(arch: Arch) -> Arch:
    if arch.calibration.origin == "datasheet":
        return arch
    if is_builtin_arch_id(arch.id):
        mechanisms = arch.mechanisms
        if mechanisms is not None and frozenset(mechanisms) == _fitted_model(arch):
            mechanisms = None  # the overlay's model goes with the overlay's costs
        return arch.model_copy(
            update={"calibration": load_arch(arch.id).calibration, "mechanisms": mechanisms}
        )
    raise InputError(f"arch '{arch.id}' carries calibrated costs and is not built in, so its datasheet "
                     "costs are unknown; load it again from its file for datasheet costs")  # fmt: skip


def with_costs(arch: Arch, costs: str | Path = "calibrated") -> Arch:
    """``arch`` with the costs ``costs`` names (see the module doc)."""
    text = str(costs)
    if text == "datasheet":
        return _datasheet(arch)
    if text == "calibrated":
        if arch.calibration.origin == "calibrated":
            return arch
        path = find_overlay(arch.id)
        return arch if path is None else _merge(arch, path)
    path = Path(text)
    try:
        is_file = "\0" not in text and path.is_file()
    except OSError:  # a name too long for the file system
        is_file = False
    if not is_file:
        raise InputError(
            f"costs '{quote(text, 80)}': expected 'calibrated', 'datasheet' or an overlay YAML file"
        )
    return _merge(_datasheet(arch) if arch.calibration.origin == "calibrated" else arch, path)


def costs_label(arch: Arch) -> str:
    """Words for the costs an arch carries: ``calibrated (<file>)`` or ``datasheet``."""
    path = overlay_file_of(arch)
    return f"{arch.calibration.origin} ({path})" if path else arch.calibration.origin
