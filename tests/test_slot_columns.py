"""A slot's units as columns (gpusim/sim/slotcolumns.py) hold the values the units hold, and the untimed
replay's classes computed over columns equal those computed unit by unit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from late_deadlocks import mutants
from test_lazy_plan import CASES

from gpusim.api import _resolve_schedule, load_arch
from gpusim.schedule.ir import Schedule
from gpusim.sim.scheduler import ClusterOrder, plan_work
from gpusim.sim.slotcolumns import NotColumnar
from gpusim.sim.unitclasses import UnitClasses as _Classes
from gpusim.sim.untimed import replayed_statements


def _columnar_slots(sched: Schedule, arch_id: str) -> list[Any]:
    plan = plan_work(sched, load_arch(arch_id))
    out = []
    for slot in plan.slot_lists:
        try:
            slot.columns()
        except NotColumnar:
            continue
        out.append(slot)
    return out


@pytest.mark.parametrize(("name", "arch_id", "problem"), CASES, ids=[c[0] for c in CASES])
def test_every_name_of_every_unit_is_its_column_value(
    name: str, arch_id: str, problem: dict[str, Any]
) -> None:
    sched = _resolve_schedule(name, load_arch(arch_id), problem)
    for slot in _columnar_slots(sched, arch_id)[:6]:
        cols = slot.columns()
        for i, cu in enumerate(slot):
            for rank, unit in enumerate(cu):
                for key, value in unit.items():
                    got = cols.name(key, rank).at(i)
                    assert (type(got), got) == (type(value), value), (key, i, rank)


def _classes_agree(sched: Schedule, arch_id: str) -> int:
    """Classify every slot both ways; returns how many slots were classified over columns."""
    plan = plan_work(sched, load_arch(arch_id))
    relevant = replayed_statements(sched)
    by_unit, by_column = _Classes(sched, relevant), _Classes(sched, relevant)
    columnar = 0
    for slot in plan.slot_lists:
        if not slot:
            continue
        expected = [by_unit(cu) for cu in slot]
        assert by_column.of_slot(slot) == expected
        try:
            slot.columns()
            columnar += 1
        except NotColumnar:
            pass
    return columnar


@pytest.mark.parametrize(("name", "arch_id", "problem"), CASES, ids=[c[0] for c in CASES])
def test_replay_classes_over_columns_equal_those_unit_by_unit(
    name: str, arch_id: str, problem: dict[str, Any]
) -> None:
    arch = load_arch(arch_id)
    sched = _resolve_schedule(name, arch, problem)
    _classes_agree(sched, arch_id)
    for _, mutant in list(mutants(sched, max_cycles=2))[:4]:  # guards true in the grid's last unit only
        _classes_agree(mutant, arch_id)


def test_a_huge_gemm_is_classified_over_columns() -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 8192, "N": 8192, "K": 512})
    _, mutant = next(iter(mutants(sched)))
    assert _classes_agree(mutant, "h100") == 132 // 2


@given(
    d0=st.integers(1, 40), d1=st.integers(1, 40), d2=st.integers(1, 3),
    raster=st.sampled_from(["along_m", "along_n", "as_listed"]), swizzle=st.sampled_from([1, 2, 4, 8]),
)  # fmt: skip
@settings(max_examples=60, deadline=None)
def test_cluster_order_over_an_array_equals_it_index_by_index(
    d0: int, d1: int, d2: int, raster: str, swizzle: int
) -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 1024, "N": 1024, "K": 512})
    order = ClusterOrder(sched, [d0, d1, d2])
    order.raster, order.swizzle = raster, swizzle
    index = np.arange(len(order), dtype=np.int64)
    assert order.coords_array(index).tolist() == [list(order[i]) for i in range(len(order))]
