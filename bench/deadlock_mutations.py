"""Soundness and reach of the deadlock checks over late-deadlock mutations of shipped schedules.

For each case (a shipped schedule on its reference arch at a problem size the simulation runs in
seconds), every mutant of tests/late_deadlocks.py is classified by

- the static balance check (gpusim/schedule/balance.py, run from check_schedule),
- the untimed replay (gpusim/sim/untimed.py, run before the simulation) and the statements it ran,
- the simulation alone (both checks switched off): the ground truth.

A refusal of a mutant that the simulation completes is a false refusal (it must never happen); a
refused mutant that the simulation rejects with another error (an input error found while running)
counts as refused.
``--long``: the same schedules with long loops (64-256 k-tiles or KV blocks per unit), where the replay
jumps periods inside units (gpusim/sim/replayloops.py).
Usage: ``python bench/deadlock_mutations.py [--quick] [--long]``; prints one line per case and the totals.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from late_deadlocks import mutants

from gpusim.api import _resolve_schedule, load_arch
from gpusim.errors import DeadlockError, GpusimError
from gpusim.schedule.check import check_schedule
from gpusim.sim.engine import simulate
from gpusim.sim.scheduler import plan_work
from gpusim.sim.untimed import replay

CASES = [
    ("gemm_ws_pingpong", "h100", {"M": 4096, "N": 4096, "K": 512}),
    ("gemm_ws_cooperative", "h100", {"M": 4096, "N": 4096, "K": 512}),
    ("gemm_streamk", "h100", {"M": 2048, "N": 2048, "K": 2048}),
    ("gemm_tcgen05", "b200", {"M": 4096, "N": 4096, "K": 512}),
    ("gemm_fp8_deepgemm", "h800", {"M": 2048, "N": 2048, "K": 1024}),
    ("gemm_cp_async", "a100", {"M": 1024, "N": 1024, "K": 512}),
    ("attn_fa3_fwd", "h100", {"batch": 2, "heads": 8, "seqlen_q": 1024, "seqlen_kv": 1024, "head_dim": 128}),
    ("attn_fa3_fwd", "h100",
     {"batch": 2, "heads": 8, "seqlen_q": 1024, "seqlen_kv": 1024, "head_dim": 128, "causal": 1}),
    ("attn_fa2_fwd", "a100", {"batch": 2, "heads": 8, "seqlen_q": 1024, "seqlen_kv": 1024, "head_dim": 64}),
    ("attn_decode_splitkv", "h100", {}),
    ("mla_decode_flashmla", "h800", {}),
]  # fmt: skip

LONG_CASES = [
    ("gemm_ws_pingpong", "h100", {"M": 2048, "N": 2048, "K": 8192}),
    ("gemm_ws_cooperative", "h100", {"M": 2048, "N": 2048, "K": 8192}),
    ("gemm_tcgen05", "b200", {"M": 2048, "N": 2048, "K": 8192}),
    ("gemm_fp8_deepgemm", "h800", {"M": 1024, "N": 2048, "K": 8192}),
    ("gemm_cp_async", "a100", {"M": 1024, "N": 1024, "K": 4096}),
    ("attn_fa3_fwd", "h100", {"batch": 1, "heads": 4, "seqlen_q": 1024, "seqlen_kv": 16384, "head_dim": 128}),
    ("attn_fa2_fwd", "a100", {"batch": 1, "heads": 4, "seqlen_q": 512, "seqlen_kv": 8192, "head_dim": 64}),
]  # fmt: skip


def classify(sched, arch) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """(balance | untimed | simulation | completes | other, statements the replay ran)."""
    try:
        check_schedule(sched, arch)
    except DeadlockError:
        truth = _truth(sched, arch)
        return ("balance" if truth != "completes" else "FALSE balance"), 0
    except GpusimError:
        return "other", 0
    try:
        found = replay(sched, arch, plan_work(sched, arch))
    except GpusimError:
        return "other", 0
    steps = found.steps
    truth = _truth(sched, arch)
    if found.deadlock is not None:
        return ("untimed" if truth != "completes" else "FALSE untimed"), steps
    return ("simulation" if truth == "deadlock" else truth), steps


def _truth(sched, arch) -> str:  # type: ignore[no-untyped-def]
    with patch("gpusim.schedule.check.check_balance"), patch("gpusim.sim.engine.check_untimed"):
        try:
            simulate(sched, arch, max_events=3_000_000)
        except DeadlockError:
            return "deadlock"
        except GpusimError as err:
            return f"error {type(err).__name__}"
        except Exception as err:  # a simulator crash: reported, not hidden
            return f"CRASH {type(err).__name__}: {err}"
    return "completes"


def main() -> None:
    quick = "--quick" in sys.argv
    totals: Counter[str] = Counter()
    cases = LONG_CASES if "--long" in sys.argv else CASES
    for name, arch_id, problem in cases[:3] if quick else cases:
        arch = load_arch(arch_id)
        base = _resolve_schedule(name, arch, problem)
        counts: Counter[str] = Counter()
        start = time.perf_counter()
        most = 0
        for label, mutant in mutants(base):
            kind, steps = classify(mutant, arch)
            counts[kind] += 1
            most = max(most, abs(steps))
            if kind.startswith(("FALSE", "CRASH")):
                print(f"  FALSE REFUSAL: {name} {label}")
        totals.update(counts)
        print(f"{name} {arch_id} {problem}: {dict(counts)}; replay at most {most:,} statements; "
              f"{time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
    print(f"total: {dict(totals)}")


if __name__ == "__main__":
    main()
