"""The lazy work plan (units computed when read) equals the eager one unit for unit, value for value
(types and key order included), groups the same slots, and gives the same L2 miss fractions; the
interval analysis that tabulates one-coordinate fields agrees with evaluating every point."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from eager_plan import _ordered_cluster_coords, eager_miss_fractions, eager_plan_work
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.api import _resolve_schedule, load_arch
from gpusim.schedule.expr import Expr
from gpusim.sim.engine import _operand_multicast, _tma_multicasts
from gpusim.sim.l2cache import panel_misses
from gpusim.sim.piecewise import IntervalEval, constant_runs
from gpusim.sim.scheduler import ClusterOrder, plan_work

CASES: list[tuple[str, str, dict[str, Any]]] = [
    # edge tiles on both axes, a 1x2 cluster whose last cluster is clamped
    ("gemm_ws_pingpong", "h100", {"M": 1000, "N": 1500, "K": 512}),
    ("gemm_ws_cooperative", "h100", {"M": 777, "N": 3000, "K": 256}),
    # causal attention (fields of the m-block), persistent and grid launches
    ("attn_fa3_fwd", "h100", {"seqlen_q": 1536, "seqlen_kv": 1536, "causal": 1, "batch": 2, "heads": 3}),
    ("attn_fa2_bwd", "a100", {"seqlen_q": 1000, "seqlen_kv": 1000, "causal": 1, "batch": 1, "heads": 4}),
    # split-K (extras per split), stream-K (pieces of tiles), split-KV parts
    ("gemm_tcgen05", "b200", {"M": 1024, "N": 640, "K": 4096, "SPLITS": 3}),
    ("attn_decode_splitkv", "h100", {}),
    ("gemm_streamk", "h100", {"M": 1000, "N": 2000, "K": 3000}),
    # stream-K then data-parallel waves; 20 k-tiles per tile: shares snapped to tile edges, some empty
    ("gemm_streamk", "h100", {"M": 5120, "N": 5120, "K": 1280}),
    ("gemm_streamk", "h100", {"M": 4096, "N": 4096, "K": 2048, "decomposition": "stream_k"}),
    ("mla_decode_flashmla", "h800", {"batch": 5, "seqlen_kv": 1000}),
    ("mla_decode_flashmla_sparse_fp8", "h800", {"batch": 5, "topk": 1000}),
    # masked DeepGEMM blocks, a stream whose last chunk is short, a grid GEMM
    ("gemm_fp8_deepgemm", "h800", {"M": 1000, "N": 2048, "K": 1024}),
    ("stream", "a100", {"bytes": 10_000_004}),
    ("gemm_sync", "v100", {"M": 1000, "N": 1000, "K": 256}),
]


def _typed(unit: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A unit as (key, type, repr) in key order: equal only if bit for bit the same."""
    return [(k, type(v).__name__, repr(v)) for k, v in unit.items()]


def _slots(slot_lists: Any) -> list[list[list[list[tuple[str, str, str]]]]]:
    return [[[_typed(u) for u in cu] for cu in slot] for slot in slot_lists]


@pytest.mark.parametrize(("name", "arch_id", "problem"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("group_identical", [True, False])
def test_lazy_plan_equals_eager_plan(
    name: str, arch_id: str, problem: dict[str, Any], group_identical: bool
) -> None:
    arch = load_arch(arch_id)
    sched = _resolve_schedule(name, arch, problem)
    lazy = plan_work(sched, arch, group_identical=group_identical)
    # units from a tile counter (dynamic_persistent, units that differ): every SM group alone
    eager = eager_plan_work(sched, arch, group_identical=group_identical and not lazy.dynamic)
    assert lazy.num_units == eager.num_units > 0
    assert lazy.num_waves == eager.num_waves
    assert lazy.cluster_grid == eager.cluster_grid
    assert _slots(lazy.slot_lists) == _slots(eager.slot_lists)
    assert [(g.index, g.weight, _slots(g.slots)) for g in lazy.groups] == [
        (g.index, g.weight, _slots(g.slots)) for g in eager.groups
    ]
    first = next(u for s in eager.slot_lists for cu in s for u in cu)
    assert lazy.unit_keys == frozenset(first)
    for w in (0, eager.num_waves // 2, eager.num_waves - 1):
        assert [_typed(u) for u in lazy.wave(w)] == [_typed(u) for u in eager.wave(w)]
    if group_identical:
        multicast = _operand_multicast(_tma_multicasts(sched))
        l2 = arch.memory.l2_size_bytes
        assert list(panel_misses(sched, lazy, l2, multicast)[0]) == eager_miss_fractions(
            sched, eager, l2, multicast
        )


def test_a_small_l2_evicts_the_same_panels() -> None:
    arch = load_arch("h100")
    sched = _resolve_schedule("gemm_ws_pingpong", arch, {"M": 3000, "N": 5000, "K": 700})
    lazy, eager = plan_work(sched, arch), eager_plan_work(sched, arch)
    for l2 in (1e5, 3e6, 2e7):
        assert list(panel_misses(sched, lazy, l2, {"A": 2})[0]) == eager_miss_fractions(
            sched, eager, l2, {"A": 2}
        )


@pytest.mark.parametrize("raster", ["along_m", "along_n", "as_listed", "heuristic"])
@pytest.mark.parametrize("dims", [[7], [5, 9], [9, 5], [4, 6, 3], [3, 2, 2, 5]])
@pytest.mark.parametrize("swizzle", [1, 2, 4])
def test_cluster_order_by_index_equals_the_listed_order(raster: str, dims: list[int], swizzle: int) -> None:
    class _Launch:
        pass

    class _Sched:
        launch = _Launch()

    _Sched.launch.raster, _Sched.launch.swizzle = raster, swizzle  # type: ignore[attr-defined]
    assert list(ClusterOrder(_Sched, dims)) == _ordered_cluster_coords(_Sched, dims)  # type: ignore[arg-type]


_NAMES = ["x", "A", "B", "F", "T"]
_CONSTS = {"A": 7, "B": -3, "F": 96.0, "T": True}


def _exprs() -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(_NAMES), st.integers(-20, 20).map(str), st.sampled_from(["0.5", "2.0"]))

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        binary = st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%", "/"]), inner)
        compare = st.tuples(inner, st.sampled_from(["<", "<=", "==", "!=", ">", ">="]), inner)
        call = st.tuples(st.sampled_from(["min", "max", "ceil_div"]), inner, inner)
        unary = st.tuples(st.sampled_from(["abs", "int", "pow2_ceil", "floor"]), inner)
        return st.one_of(
            binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            compare.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            call.map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            unary.map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]} and {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"(not {t[0]} or {t[1]})"),
            inner.map(lambda t: f"-{t}"),
        )

    return st.recursive(leaf, grow, max_leaves=8)


def _outcome(expr: Expr, x: int) -> tuple[str, str]:
    try:
        value = expr({**_CONSTS, "x": x})
    except Exception as exc:
        return ("error", type(exc).__name__)
    return (type(value).__name__, repr(value))


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.integers(-40, 40), st.integers(1, 120))
def test_runs_give_every_point_its_own_value(text: str, lo: int, width: int) -> None:
    expr = Expr(text)
    points = range(lo, lo + width)
    outcomes = [_outcome(expr, x) for x in points]
    if any(kind == "error" for kind, _ in outcomes):
        return  # the plan evaluates such a field point by point and raises the evaluator's error
    runs = constant_runs(
        IntervalEval(expr, "x", _CONSTS, {}), lambda x: expr({**_CONSTS, "x": x}), lo, lo + width
    )
    got = [(type(v).__name__, repr(v)) for v in (runs.value(x) for x in points)]
    assert got == outcomes


@pytest.mark.parametrize(
    "text",
    [
        "(x * 3) // (x + 41)",  # both sides move: every corner of the quotient counts
        "(500 - x * 7) // (x + 45)",
        "(x - 20) * 0.0",  # -0.0 before x = 20, 0.0 after: not one run
        "min(A, x + 0.0)",  # min returns its first argument on ties: the type changes at x = 7
        "max(F, x * 2)",
        "ceil_div(x + 100, (x + 145) // 10)",
        "(x % 5 == 0) + (x > 3 and x < 30)",
        "0 < x + 10 <= 30 < 31",
        "(x // 4) % 3 if T else 0",
        "abs(x - 3) // 5 - pow2_ceil(x + 41)",
    ],
)
def test_runs_of_known_hard_expressions(text: str) -> None:
    expr = Expr(text)
    points = range(-40, 80)
    runs = constant_runs(IntervalEval(expr, "x", _CONSTS, {}), lambda x: expr({**_CONSTS, "x": x}), -40, 80)
    assert [(type(v).__name__, repr(v)) for v in (runs.value(x) for x in points)] == [
        _outcome(expr, x) for x in points
    ]


def test_a_constant_stream_field_is_proved_constant_without_evaluating_every_chunk() -> None:
    arch = load_arch("a100")
    sched = _resolve_schedule("stream", arch, {"bytes": 1 << 30})
    calls = itertools.count()
    field = sched.launch.fields["valid"]

    def value_at(x: int) -> Any:
        next(calls)
        return field({**sched.env, "chunk": x})

    extent = dict(sched.launch.grid)["chunk"]
    runs = constant_runs(IntervalEval(field, "chunk", dict(sched.env), {}), value_at, 0, extent)
    assert extent == 262_144 and len(runs.starts) == 1 and next(calls) <= 2
