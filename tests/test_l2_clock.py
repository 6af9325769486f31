"""The ``l2_clock`` mechanism (engine-fidelity G6, issue 12 item 5): the L2's bandwidth is bytes per clock,
so a kernel below the max boost clock gets that fraction of the listed (boost-clock) bandwidth."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import load_arch, predict
from gpusim.mechanisms import DEFAULT_ON, in_effect, with_model
from gpusim.sim.hardware import Rates


def test_rates_scale_the_l2_by_the_clock_over_the_max_boost() -> None:
    arch = load_arch("h100", costs="datasheet")
    listed = arch.memory.l2_bandwidth_bytes_per_s * arch.calibration.l2_bandwidth_fraction / 1e9
    assert Rates.from_arch(arch).l2_bytes_per_ns == pytest.approx(listed)
    scaled = Rates.from_arch(arch, l2_clock=True)
    assert scaled.l2_bytes_per_ns == pytest.approx(listed * 1830 / 1980)
    # Everything else is the same: the mechanism moves the L2 and nothing else.
    assert scaled.hbm_bytes_per_ns == Rates.from_arch(arch).hbm_bytes_per_ns
    assert scaled.port_bytes_per_ns == Rates.from_arch(arch).port_bytes_per_ns


@given(clock_mhz=st.floats(min_value=900, max_value=1980))
@settings(max_examples=25, deadline=None)
def test_l2_bandwidth_is_proportional_to_the_clock(clock_mhz: float) -> None:
    arch = load_arch("h200", costs="datasheet")
    pinned = arch.model_copy(update={"calibration": arch.calibration.model_copy(
        update={"sustained_clock_mhz": clock_mhz})})  # fmt: skip
    rate = Rates.from_arch(pinned, l2_clock=True).l2_bytes_per_ns
    full = arch.memory.l2_bandwidth_bytes_per_s / 1e9
    assert rate == pytest.approx(full * clock_mhz / arch.clocks.boost_clock_mhz)
    assert rate <= full * (1 + 1e-12)


def test_an_l2_bound_read_slows_by_boost_over_clock() -> None:
    """stream_l2 with a 16 MiB set (L2-resident, L2-bound) at the datasheet's 1830 MHz tensor clock: the
    whole kernel stretches by 1980 / 1830."""
    base = predict("stream_l2", arch="h100", costs="datasheet", bytes=16 * 2**20)
    slow = predict("stream_l2", arch="h100", costs="datasheet", model="+l2_clock", bytes=16 * 2**20)
    assert slow.time_us / base.time_us == pytest.approx(1980 / 1830, rel=2e-3)
    assert "l2_clock" in slow.model and "l2_clock" not in base.model


def test_off_by_default_and_switchable() -> None:
    assert "l2_clock" not in DEFAULT_ON
    arch = load_arch("h100", costs="datasheet")
    assert not in_effect("l2_clock", arch)
    assert in_effect("l2_clock", with_model(arch, "+l2_clock"))


def test_with_the_power_model_a_lower_clock_costs_l2_bandwidth_too() -> None:
    """The L2-heavy 128x128 ping-pong under the power model: no faster with the L2 following the clock, and
    the fast-forward stays exact (the mechanism only changes a rate)."""
    size = dict(M=2048, N=2048, K=2048)
    power = predict("gemm_ws_pingpong", arch="h100", costs="datasheet", model="+power", **size)
    both = predict("gemm_ws_pingpong", arch="h100", costs="datasheet", model="+power,+l2_clock", **size)
    exact = predict("gemm_ws_pingpong", arch="h100", costs="datasheet", model="+power,+l2_clock", exact=True,
                    **size)  # fmt: skip
    assert both.time_us >= power.time_us * (1 - 1e-9)
    assert exact.time_us == pytest.approx(both.time_us, rel=5e-3)
    assert both.clock_mhz <= 1830
