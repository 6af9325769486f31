"""rank-check scoring: pairwise order, ties within 0.5% count as wrong, the top pick's share; grouping."""

from __future__ import annotations

from pathlib import Path

from gpusim.calibrate.measurements import COLUMNS
from gpusim.explore.executors import InlineExecutor
from gpusim.explore.rankcheck import AblationRow, _score, rank_check, read_ablations


def _rows(tmp_path: Path, lines: list[str], with_group: bool = True) -> Path:
    header = ",".join([*COLUMNS, "ablation"] if with_group else COLUMNS)
    path = tmp_path / "ablation.csv"
    path.write_text(header + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line(value: float, params: str, group: str = "g") -> str:
    return f"test,h100,gemm_ws_pingpong,bf16,512,512,512,1,,,,,,time,{value},us,,{params},{group}"


def test_scoring_counts_ties_as_wrong(tmp_path: Path) -> None:
    rows = read_ablations([_rows(tmp_path, [_line(10, "BN=64"), _line(12, "BN=128"), _line(15, "STAGES=2")])])
    for row, measured, predicted in zip(rows, (10, 12, 15), (5.0, 5.01, 4.0), strict=True):
        row.measured_us, row.predicted_us = measured, predicted
    result = _score("g", rows)
    assert result.pairs == 3
    assert result.ties == 1  # 5.0 vs 5.01 is within 0.5%
    assert result.agree == 0  # the tie is wrong, and the 15 us row is predicted fastest
    assert result.top_pick_share == 10 / 15


def test_rows_without_the_column_group_by_problem(tmp_path: Path) -> None:
    path = _rows(tmp_path, [_line(10, "BN=64").rsplit(",", 1)[0], _line(12, "BN=128").rsplit(",", 1)[0]],
                 with_group=False)  # fmt: skip
    rows = read_ablations([path])
    assert len({r.group for r in rows}) == 1


def test_unknown_parameter_is_skipped_with_its_name(tmp_path: Path) -> None:
    path = _rows(tmp_path, [_line(10, "BOGUS=1"), _line(12, "BN=128")])
    results = rank_check([path], "calibrated", InlineExecutor())
    skipped = [r.skipped for r in results[0].rows if r.skipped]
    assert skipped and "BOGUS" in skipped[0]
    assert isinstance(results[0].rows[1], AblationRow) and results[0].rows[1].predicted_us is not None
