"""The fittable calibration parameters: names, physical bounds, how they enter the time."""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.arch import Arch
from gpusim.errors import InputError, quote


@dataclass(frozen=True)
class FitParam:
    """One calibration field with its bounds (multiplicative ones are fitted in log space)."""

    name: str
    lo: float
    hi: float
    additive: bool = False

    def start(self, arch: Arch) -> float:
        """The datasheet value (clipped into the bounds)."""
        value = (
            arch.sustained_clock_mhz
            if self.name == "sustained_clock_mhz"
            else getattr(arch.calibration, self.name)
        )
        return min(max(value, self.lo), self.hi)


def fit_params(arch: Arch) -> dict[str, FitParam]:
    """Every fittable parameter of ``arch`` with its physical bounds."""
    tc = arch.clocks.tensor_clock_mhz
    return {
        p.name: p
        for p in (
            # The tensor peaks are quoted at the tensor clock, the highest clock a tensor load runs at
            # ("1.83 GHz low precision" on H100; the max boost on V100 and A100): a kernel cannot
            # sustain more, so the fit may only lower it.
            FitParam("sustained_clock_mhz", 0.6 * tc, tc),
            FitParam("hbm_bandwidth_fraction", 0.5, 1.0),
            FitParam("l2_bandwidth_fraction", 0.3, 1.0),
            FitParam("latency_scale", 0.5, 3.0),
            FitParam("launch_overhead_ns", 0.0, 20000.0, additive=True),
            FitParam("tensor_issue_efficiency", 0.5, 1.0),
            FitParam("cuda_core_issue_efficiency", 0.5, 1.0),
            # the power model's energies are derived upper bounds (whole-board figures), see docs/power.md
            FitParam("energy_scale", 0.4, 1.5),
            # G1: 1 = CUDA-core/SFU work overlaps tensor work for free (datasheet); fitted in log space,
            # so "fully serial" (0) is approached, not reached
            FitParam("tensor_cuda_overlap", 0.05, 1.0),
        )
    }


def parse_fit_names(text: str | None, arch: Arch) -> list[str] | None:
    """``--fit a,b`` -> names (None: choose from the rows); unknown names refused."""
    if text is None:
        return None
    known = fit_params(arch)
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise InputError(f"--fit '{quote(text)}': no parameter named; fittable: {', '.join(known)}")
    if not all(names):
        raise InputError(f"--fit '{quote(text)}': an empty name between commas")
    if len(set(names)) != len(names):
        raise InputError(f"--fit '{quote(text)}': a parameter named twice")
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"--fit: unknown parameter {quote(', '.join(bad))}; fittable: {', '.join(known)}")
    return names
