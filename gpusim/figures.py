"""Pictures and traces of predictions, for Python users (matplotlib is imported only when drawing).

::

    p = gpusim.predict("gemm_ws_pingpong", "h100", record=True, M=4096, N=4096, K=4096)
    gpusim.plot_timeline(p, "timeline.png")
    gpusim.write_trace(p, "trace.json")        # open in https://ui.perfetto.dev
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpusim.arch import Arch, validated
from gpusim.comparison import Comparison
from gpusim.errors import InputError, kind_of
from gpusim.result import Prediction


def _checked_prediction(p: Any, what: str = "p") -> Prediction:
    if not isinstance(p, Prediction):
        raise InputError(f"{what}: expected a gpusim.Prediction (from gpusim.predict), got {kind_of(p)}")
    return p


def _checked_arch(arch: Any) -> Arch:
    if not isinstance(arch, Arch):
        raise InputError(f"arch: expected a gpusim.Arch (from gpusim.load_arch), got {kind_of(arch)}")
    return validated(arch)


def _checked_path(path: Any, option: str, suffixes: tuple[str, ...]) -> Path:
    from gpusim.cli_guard import check_output_path

    if not isinstance(path, str | Path):
        raise InputError(f"{option}: expected a file path ({', '.join(suffixes)}), got {kind_of(path)}")
    checked = check_output_path(str(path), option, suffixes)
    assert checked is not None
    return checked


def _recorded(p: Prediction) -> Any:
    p = _checked_prediction(p)
    if p.timeline is None:
        raise InputError(f"{p.schedule} on {p.arch}: no timeline was recorded; predict(..., record=True)")
    return p.timeline


def plot_timeline(p: Prediction, path: str | Path, *, sm: int | None = None,
                  window_us: tuple[float, float] | None = None) -> Path:  # fmt: skip
    """The timeline PNG of a recorded prediction: one SM group's agents and roles (default: the
    busiest group, about three tile periods mid-kernel) and the chip's memory bandwidth."""
    from gpusim.cli_guard import PLOT_SUFFIXES
    from gpusim.report.plot_timeline import plot_timeline as draw
    from gpusim.report.timeline import check_sm

    run = _recorded(p)
    _checked_path(path, "path", PLOT_SUFFIXES)
    if sm is not None and (isinstance(sm, bool) or not isinstance(sm, int)):
        raise InputError(f"sm: expected an SM group index (a whole number), got {kind_of(sm)}")
    window_ns = None
    if window_us is not None:
        if (
            not isinstance(window_us, tuple | list)
            or len(window_us) != 2
            or not all(
                isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) for t in window_us
            )
            or not 0 <= window_us[0] < window_us[1]
        ):
            raise InputError(
                f"window_us: expected (start_us, end_us) with 0 <= start < end, got {kind_of(window_us)}"
            )
        window_ns = (window_us[0] * 1000, window_us[1] * 1000)
    return draw(run, path, check_sm(run, sm) if sm is not None else None, window_ns, verdict=p.verdict,
                costs=p.costs)  # fmt: skip


def write_trace(p: Prediction, path: str | Path) -> Path:
    """A Chrome/Perfetto trace JSON of a recorded prediction."""
    from gpusim.cli_guard import TRACE_SUFFIXES
    from gpusim.report.trace import write_trace as write

    run = _recorded(p)
    return write(run, _checked_path(path, "path", TRACE_SUFFIXES))


def plot_compare(c: Comparison, path: str | Path, title: str = "") -> Path:
    """Bar charts of a comparison: throughput, utilization per unit, and where the time goes."""
    from gpusim.cli_guard import PLOT_SUFFIXES
    from gpusim.report.plot_compare import plot_compare as draw

    if not isinstance(c, Comparison):
        raise InputError(f"c: expected a gpusim.Comparison (from gpusim.compare), got {kind_of(c)}")
    if not isinstance(title, str):
        raise InputError(f"title: expected text, got {kind_of(title)}")
    return draw(c, _checked_path(path, "path", PLOT_SUFFIXES), title)


def plot_roofline(arch: Arch, predictions: list[Prediction], path: str | Path,
                  labels: list[str] | None = None) -> Path:  # fmt: skip
    """A roofline PNG of ``arch`` with each prediction placed by its HBM arithmetic intensity."""
    from gpusim.cli_guard import PLOT_SUFFIXES
    from gpusim.report.plot_roofline import plot_roofline as draw
    from gpusim.report.roofline import point, roofs

    arch = _checked_arch(arch)
    if isinstance(predictions, str | bytes) or not isinstance(predictions, list | tuple):
        raise InputError(f"predictions: expected a list of gpusim.Prediction, got {kind_of(predictions)}")
    for i, p in enumerate(predictions):
        _checked_prediction(p, f"predictions[{i}]")
    if labels is not None and (
        not isinstance(labels, list | tuple)
        or len(labels) != len(predictions)
        or not all(isinstance(label, str) for label in labels)
    ):
        raise InputError(
            f"labels: expected one text per prediction ({len(predictions)}), got {kind_of(labels)}"
        )
    path = _checked_path(path, "path", PLOT_SUFFIXES)
    points = []
    for i, p in enumerate(predictions):
        pt = point(p, arch, str(p.problem.get("dtype", "bf16")), labels[i] if labels else None)
        if pt is not None:
            points.append(pt)
    costs = predictions[0].costs if predictions else arch.calibration.origin
    return draw(roofs(arch), points, path, costs=costs)


def roofline_point(p: Prediction, arch: Arch) -> dict[str, Any] | None:
    """Where a prediction sits on the roofline: intensity (FLOP/byte of HBM), TFLOPS, the roof above it."""
    from gpusim.report.roofline import point

    p, arch = _checked_prediction(p), _checked_arch(arch)
    pt = point(p, arch, str(p.problem.get("dtype", "bf16")))
    return None if pt is None else pt.as_dict()
