"""DeepGEMM's own block-size choice (deep_gemm ``get_best_config``), to compare with the tuner's pick.

DeepGEMM picks, among its legal candidates, the fewest waves (ceil(blocks / SMs)); on equal waves the
fullest last wave; on an equal last wave the smaller block in the dimension the two share, or else the
larger BLOCK_N (not larger than the problem). It then multicasts on A or B (cluster of 2) when M >= 512
and the block count along that side is even.
"""

from __future__ import annotations

from collections.abc import Iterable


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def deepgemm_pick(m: int, n: int, groups: int, num_sms: int,
                  legal: Iterable[tuple[int, int]]) -> tuple[int, int] | None:  # fmt: skip
    """The (BLOCK_M, BLOCK_N) DeepGEMM's wave heuristic chooses among ``legal`` block shapes."""
    best: tuple[int, int] | None = None
    best_waves = best_util = 0
    for bm, bn in legal:
        blocks = _ceil_div(m, bm) * _ceil_div(n, bn) * groups
        waves = _ceil_div(blocks, num_sms)
        util = blocks % num_sms or num_sms
        better = best is None or waves < best_waves
        if best is not None and waves == best_waves:
            better = util > best_util
            if util == best_util:
                better |= bm == best[0] and bn < best[1]
                better |= bn == best[1] and bm < best[0]
                better |= bm != best[0] and bn > best[1] and bn <= n and bm <= m
        if better:
            best, best_waves, best_util = (bm, bn), waves, util
    return best


def deepgemm_cluster(m: int, n: int, block_m: int, block_n: int) -> tuple[int, int]:
    """(CLUSTER_M, CLUSTER_N) DeepGEMM's multicast rule gives for the chosen blocks."""
    legal_on_a = _ceil_div(n, block_n) % 2 == 0  # A is shared by the CTAs along N
    legal_on_b = _ceil_div(m, block_m) % 2 == 0
    order = (True, False) if block_m > block_n else (False, True)  # try B first unless BLOCK_M > BLOCK_N
    for on_a in order:
        if m >= 512 and (legal_on_a if on_a else legal_on_b):
            return (1, 2) if on_a else (2, 1)
    return (1, 1)
