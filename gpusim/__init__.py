"""gpusim: a resource-model simulator for GPU kernel schedules, Volta to Blackwell.

Public API (imported lazily, so ``import gpusim`` stays fast)::

    import gpusim

    p = gpusim.predict("gemm_ws_pingpong", "h100", M=4096, N=4096, K=4096)
    p.time_us, p.tflops, p.verdict, p.interval, p.costs, p.overlay
    gpusim.compare([gpusim.Variant("gemm_ws_pingpong", "h100"), gpusim.Variant("gemm_ws_cooperative", "h100")])
    gpusim.schedules(), gpusim.archs(), gpusim.load_arch("b200"), gpusim.load_schedule("attn_fa3_fwd")
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "predict": "gpusim.api",
    "load_arch": "gpusim.api",
    "load_schedule": "gpusim.api",
    "schedules": "gpusim.api",
    "archs": "gpusim.api",
    "read_measurements": "gpusim.calibrate.measurements",
    "validate": "gpusim.calibrate.validate",
    "plot_timeline": "gpusim.figures",
    "write_trace": "gpusim.figures",
    "plot_compare": "gpusim.figures",
    "plot_roofline": "gpusim.figures",
    "roofline_point": "gpusim.figures",
    "compare": "gpusim.comparison",
    "Variant": "gpusim.comparison",
    "Comparison": "gpusim.comparison",
    "CompareRow": "gpusim.comparison",
    "Prediction": "gpusim.result",
    "Interval": "gpusim.result",
    "Arch": "gpusim.arch",
    "all_archs": "gpusim.arch",
    "builtin_arch_ids": "gpusim.arch",
    "GpusimError": "gpusim.errors",
    "InputError": "gpusim.errors",
    "ArgumentError": "gpusim.errors",
    "ScheduleRefused": "gpusim.errors",
    "DeadlockError": "gpusim.errors",
    "LimitExceeded": "gpusim.errors",
}

__all__ = [
    "Arch",
    "ArgumentError",
    "CompareRow",
    "Comparison",
    "DeadlockError",
    "GpusimError",
    "InputError",
    "Interval",
    "LimitExceeded",
    "Prediction",
    "ScheduleRefused",
    "Variant",
    "all_archs",
    "archs",
    "builtin_arch_ids",
    "compare",
    "load_arch",
    "load_schedule",
    "plot_compare",
    "plot_roofline",
    "plot_timeline",
    "predict",
    "read_measurements",
    "roofline_point",
    "schedules",
    "validate",
    "write_trace",
]

if TYPE_CHECKING:
    from gpusim.api import archs, load_arch, load_schedule, predict, schedules
    from gpusim.arch import Arch, all_archs, builtin_arch_ids
    from gpusim.calibrate.measurements import read_measurements
    from gpusim.calibrate.validate import validate
    from gpusim.comparison import CompareRow, Comparison, Variant, compare
    from gpusim.errors import (
        ArgumentError,
        DeadlockError,
        GpusimError,
        InputError,
        LimitExceeded,
        ScheduleRefused,
    )
    from gpusim.figures import plot_compare, plot_roofline, plot_timeline, roofline_point, write_trace
    from gpusim.result import Interval, Prediction


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpusim' has no attribute '{name}'")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
