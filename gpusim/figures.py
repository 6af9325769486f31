"""Pictures and traces of predictions, for Python users (matplotlib is imported only when drawing).

::

    p = gpusim.predict("gemm_ws_pingpong", "h100", record=True, M=4096, N=4096, K=4096)
    gpusim.plot_timeline(p, "timeline.png")
    gpusim.write_trace(p, "trace.json")        # open in https://ui.perfetto.dev
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusim.arch import Arch
from gpusim.comparison import Comparison
from gpusim.errors import InputError
from gpusim.result import Prediction


def _recorded(p: Prediction) -> Any:
    if p.timeline is None:
        raise InputError(f"{p.schedule} on {p.arch}: no timeline was recorded; predict(..., record=True)")
    return p.timeline


def plot_timeline(p: Prediction, path: str | Path, *, sm: int | None = None,
                  window_us: tuple[float, float] | None = None) -> Path:  # fmt: skip
    """The timeline PNG of a recorded prediction: one SM group's agents and roles (default: the
    busiest group, about three tile periods mid-kernel) and the chip's memory bandwidth."""
    from gpusim.report.plot_timeline import plot_timeline as draw
    from gpusim.report.timeline import check_sm

    run = _recorded(p)
    window_ns = (window_us[0] * 1000, window_us[1] * 1000) if window_us else None
    return draw(run, path, check_sm(run, sm) if sm is not None else None, window_ns, verdict=p.verdict,
                costs=p.costs)  # fmt: skip


def write_trace(p: Prediction, path: str | Path) -> Path:
    """A Chrome/Perfetto trace JSON of a recorded prediction."""
    from gpusim.report.trace import write_trace as write

    return write(_recorded(p), path)


def plot_compare(c: Comparison, path: str | Path, title: str = "") -> Path:
    """Bar charts of a comparison: throughput, utilization per unit, and where the time goes."""
    from gpusim.report.plot_compare import plot_compare as draw

    return draw(c, path, title)


def plot_roofline(arch: Arch, predictions: list[Prediction], path: str | Path,
                  labels: list[str] | None = None) -> Path:  # fmt: skip
    """A roofline PNG of ``arch`` with each prediction placed by its HBM arithmetic intensity."""
    from gpusim.report.plot_roofline import plot_roofline as draw
    from gpusim.report.roofline import point, roofs

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

    pt = point(p, arch, str(p.problem.get("dtype", "bf16")))
    return None if pt is None else pt.as_dict()
