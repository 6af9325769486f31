"""Sweep grids: axis syntax, problem tables, the product and its errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusim.errors import InputError
from gpusim.explore.grid import enumerate_points, parse_axes, parse_axis, read_problems


def test_list_and_range_axes() -> None:
    assert parse_axis("BN=64,128,256").values == (64, 128, 256)
    assert parse_axis("STAGES=2..5").values == (2, 3, 4, 5)
    assert parse_axis("BN=64..256:64").values == (64, 128, 192, 256)
    assert parse_axis("dtype=bf16,fp8_e4m3").values == ("bf16", "fp8_e4m3")
    assert parse_axis("X=0.5..1.5:0.5").values == (0.5, 1.0, 1.5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("BN", "expected KEY=v1,v2"),
        ("=1,2", "empty key"),
        ("BN=", "no values"),
        ("BN=256..64", "range is empty"),
        ("BN=64..256:0", "step must be positive"),
        ("BN=a..b", "expected a number"),
        ("BN=64,64", "listed twice"),
        ("BN=.nan..64", "finite"),
        ("BN=1..1e999", "finite"),
        ("BN=64..128:.inf", "finite"),
        ("BN=0..1e300:1e-300", "more than 100,000 values"),
    ],
)
def test_bad_axes_name_the_option(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_axis(text)


@given(lo=st.integers(0, 500), count=st.integers(1, 40), step=st.integers(1, 64))
def test_range_is_inclusive_and_evenly_stepped(lo: int, count: int, step: int) -> None:
    hi = lo + (count - 1) * step
    values = parse_axis(f"K={lo}..{hi}:{step}").values
    assert values[0] == lo and values[-1] == hi and len(values) == count
    assert all(b - a == step for a, b in itertools.pairwise(values))


def test_product_order_and_fixed_values() -> None:
    axes = parse_axes(["BM=64,128", "STAGES=2..4"])
    points = enumerate_points("gemm_ws_pingpong", ["h100", "b200"], axes, {"M": 512})
    assert len(points) == 2 * 2 * 3
    assert [p.index for p in points] == list(range(12))
    assert points[0].overrides == {"M": 512, "BM": 64, "STAGES": 2}
    assert points[1].overrides["STAGES"] == 3 and points[3].overrides["BM"] == 128
    assert {p.arch for p in points[:6]} == {"h100"}
    assert len({p.key for p in points}) == 12


def test_key_both_fixed_and_swept_is_refused() -> None:
    with pytest.raises(InputError, match="either fixed or swept"):
        enumerate_points("gemm_ws_pingpong", ["h100"], parse_axes(["BN=64,128"]), {"BN": 64})
    with pytest.raises(InputError, match="given twice"):
        parse_axes(["BN=64", "BN=128"])


def test_problems_csv(tmp_path: Path) -> None:
    path = tmp_path / "problems.csv"
    path.write_text("M,N,K,dtype\n512,512,512,bf16\n1024,256,2048,\n", encoding="utf-8")
    problems = read_problems(path)
    assert problems == [{"M": 512, "N": 512, "K": 512, "dtype": "bf16"}, {"M": 1024, "N": 256, "K": 2048}]
    points = enumerate_points("gemm_ws_pingpong", ["h100"], parse_axes(["BN=64,128"]), None, problems)
    assert [p.overrides for p in points][2] == {"M": 1024, "N": 256, "K": 2048, "BN": 64}
    (tmp_path / "empty.csv").write_text("M,N\n", encoding="utf-8")
    with pytest.raises(InputError, match="no rows"):
        read_problems(tmp_path / "empty.csv")
    with pytest.raises(InputError, match="file not found"):
        read_problems(tmp_path / "missing.csv")


def test_huge_products_are_refused_before_enumeration() -> None:
    axes = parse_axes([f"K{i}=" + ",".join(str(j) for j in range(1, 101)) for i in range(4)])
    with pytest.raises(InputError, match="more than 100,000 points"):
        enumerate_points("gemm_sync", ["v100"], axes)


def test_hostile_problem_files_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "dup.csv").write_text("M,M\n1,2\n", encoding="utf-8")
    (tmp_path / "big.csv").write_text("M\n" + "1" * 200_000 + "\n", encoding="utf-8")
    (tmp_path / "bin.csv").write_bytes(bytes(range(256)))
    for name, message in (
        ("dup.csv", "named twice"),
        ("big.csv", "not a CSV|cannot read"),
        ("bin.csv", "UTF-8"),
    ):
        with pytest.raises(InputError, match=message):
            read_problems(tmp_path / name)
    with pytest.raises(InputError, match="not a regular file"):
        read_problems("/dev/zero")
