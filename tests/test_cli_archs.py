"""``gpusim archs`` (table and JSON) and ``gpusim archs show`` (table and JSON), run as a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpusim.arch import builtin_arch_ids

RunCli = Callable[..., tuple[int, str, str]]

EXPECTED_IDS = [
    "v100", "v100_pcie", "a100", "a100_pcie", "h100", "h100_pcie", "h800", "h800_pcie",
    "h200", "h20", "b100", "b200", "gb200", "b300",
]  # fmt: skip


@pytest.fixture(scope="module")
def archs_json(run_cli: RunCli) -> list[dict[str, Any]]:
    """The parsed output of ``gpusim archs --json`` (run once per module)."""
    rc, out, err = run_cli(["archs", "--json"])
    assert rc == 0, err
    assert err == ""
    return json.loads(out)


def test_archs_table_lists_every_id(run_cli: RunCli) -> None:
    """``gpusim archs`` prints a table containing all 14 arch ids, exits 0 and writes nothing to stderr."""
    rc, out, err = run_cli(["archs"])
    assert rc == 0, err
    assert err == ""
    rows = {
        line.split("|")[1].strip() for line in out.splitlines() if line.count("|") > 2
    }  # ASCII when piped
    rows.discard("id")
    assert rows == set(EXPECTED_IDS)


def test_archs_json_is_a_list_of_fourteen(archs_json: list[dict[str, Any]]) -> None:
    """``gpusim archs --json`` is a JSON list with one object per built-in arch, in id order."""
    assert isinstance(archs_json, list)
    assert len(archs_json) == 14
    assert [row["id"] for row in archs_json] == builtin_arch_ids()
    assert sorted(row["id"] for row in archs_json) == sorted(EXPECTED_IDS)


def test_archs_json_rows_have_headline_keys(archs_json: list[dict[str, Any]]) -> None:
    """Each row has id, sm_count, fp16_bf16_dense_tflops and fp16_ridge_flop_per_byte, all filled in."""
    for row in archs_json:
        for key in ("id", "sm_count", "fp16_bf16_dense_tflops", "fp16_ridge_flop_per_byte"):
            assert key in row, (row.get("id"), key)
        assert isinstance(row["sm_count"], int) and row["sm_count"] > 0
        assert row["fp16_bf16_dense_tflops"] > 0
        assert row["fp16_ridge_flop_per_byte"] > 0


def test_archs_json_h100_row(archs_json: list[dict[str, Any]]) -> None:
    """The H100 row reports 132 SMs, 989.4 dense FP16/BF16 TFLOPS and a ~295 FLOP/byte ridge."""
    h100 = next(row for row in archs_json if row["id"] == "h100")
    assert h100["sm_count"] == 132
    assert h100["fp16_bf16_dense_tflops"] == pytest.approx(989.4, rel=1e-3)
    assert h100["fp16_ridge_flop_per_byte"] == pytest.approx(989.4e12 / 3.35e12, rel=1e-3)


def test_archs_show_json(run_cli: RunCli) -> None:
    """``gpusim archs show h100 --json`` is the whole arch plus derived peaks and ridge points."""
    rc, out, err = run_cli(["archs", "show", "h100", "--json"])
    assert rc == 0, err
    data = json.loads(out)
    assert data["id"] == "h100"
    derived = data["derived"]
    assert derived["dense_peak_tflops"]["bf16"] == pytest.approx(989.4, rel=1e-3)
    assert derived["ridge_point_flop_per_byte"]["bf16"] == pytest.approx(989.4e12 / 3.35e12, rel=1e-3)
    assert set(derived["ridge_point_flop_per_byte"]) == set(derived["dense_peak_tflops"])
    assert data["sources"]


def test_archs_show_accepts_an_alias(run_cli: RunCli) -> None:
    """``gpusim archs show sm_90 --json`` shows the H100."""
    rc, out, err = run_cli(["archs", "show", "sm_90", "--json"])
    assert rc == 0, err
    assert json.loads(out)["id"] == "h100"


def test_archs_show_table_mentions_the_dense_peak(run_cli: RunCli) -> None:
    """``gpusim archs show h100`` prints tables including the 989.4 TFLOPS dense BF16 peak and the sources."""
    rc, out, err = run_cli(["archs", "show", "h100"])
    assert rc == 0, err
    assert "989.4" in out
    assert "ridge point" in out
    assert "sources" in out


@pytest.mark.parametrize("arch_id", EXPECTED_IDS)
def test_archs_show_every_arch(arch_id: str, run_cli: RunCli) -> None:
    """``gpusim archs show <id>`` renders every built-in arch without error."""
    rc, out, err = run_cli(["archs", "show", arch_id])
    assert rc == 0, err
    assert arch_id in out
    assert err == ""
