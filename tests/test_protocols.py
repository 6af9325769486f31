"""Static synchronisation checks: bracketing, stage tags and barrier use are refused with the rule broken."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import pytest

from gpusim.arch import load_arch
from gpusim.errors import DeadlockError, InputError
from gpusim.schedule.check import check_schedule
from gpusim.schedule.load import load_schedule
from gpusim.schedule.protocols import check_protocols
from gpusim.sim.engine import simulate

H100 = load_arch("h100")

VALID = """
schedule: protocol_demo
reference_arch: h100
problem: {M: 256, N: 256, K: 256, dtype: bf16}
params: {KT: 4}
launch:
  grid: {m: 2}
buffers:
  ab: {space: smem, stages: 2, bytes: 1024, protocol: tma->threads}
barriers:
  done: {kind: event, count: 1}
  order: {kind: turnstile, members: consumer}
roles:
  producer:
    warps: 1
    program:
    - tiles: {}
      do:
      - for: {k: KT}
        do:
        - acquire: ab
        - tma_load: {buf: ab, bytes: 1024}
  consumer:
    warps: 4
    program:
    - tiles: {}
      do:
      - turn: order
        do:
        - for: {k: KT}
          do:
          - wait: ab
          - release: ab
      - arrive: done
      - wait: {bar: done}
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "protocol_demo.yaml"
    path.write_text(text)
    return load_schedule(str(path), H100)


def test_valid_demo_passes_and_runs(tmp_path: Path) -> None:
    """The base schedule is accepted and simulates to completion."""
    sched = _load(tmp_path, VALID)
    check_schedule(sched, H100)
    assert simulate(sched, H100).kernel_ns > 0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("          - release: ab\n", "", "waits on 'ab' but never releases it"),
        ("        - tma_load: {buf: ab, bytes: 1024}\n", "", "issues no tma_load into it"),
        ("        - for: {k: KT}\n          do:\n          - wait: ab",
         "        - for: {j: KT}\n          do:\n          - wait: ab", "cannot name the stage of 'ab'"),
        ("          - wait: ab\n          - release: ab\n", "          - arrive: done\n", "no role waits on it"),
        ("      - turn: order\n", "      - turn: ordr\n", "unknown turnstile 'ordr'; did you mean 'order'"),
        ("      - arrive: done\n", "", "waits on event 'done' but no role arrives at it"),
        ("      - arrive: done\n", "      - sync: done\n", "'done' is a event barrier; sync needs named"),
    ],
)  # fmt: skip
def test_broken_synchronisation_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    """Each broken rule is one clear error naming the buffer or barrier."""
    assert old in VALID
    with pytest.raises(InputError, match=message):
        check_schedule(_load(tmp_path, VALID.replace(old, new)), H100)


def test_at_names_a_stage_outside_the_loop(tmp_path: Path) -> None:
    """A wait outside the producer's loop may name its stage with at: (the protocol rules accept it);
    waiting again for a stage already consumed and freed is a deadlock, which the balance check
    (gpusim/schedule/balance.py) reports before simulating and the simulator reports without it."""
    extra = "      - wait: {buf: ab, at: {k: 0}}\n      - release: ab\n"
    sched = _load(tmp_path, VALID.replace("      - arrive: done\n", "      - arrive: done\n" + extra))
    check_protocols(sched)
    with pytest.raises(
        DeadlockError, match=r"waits for stage \{'k': 0\} of the tile, which it already released"
    ):
        check_schedule(sched, H100)
    with (
        patch("gpusim.schedule.check.check_balance", lambda *_: frozenset()),
        pytest.raises(DeadlockError, match="waiting for stage"),
    ):
        simulate(sched, H100)
