"""The column store of recorded spans: merging, reading back, and moving spans across a fast-forward jump."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusim.sim.spanlog import BusyLog, SpanLog


def test_reads_back_what_was_recorded() -> None:
    log = SpanLog()
    log.append(0.0, 1.0, "load")
    log.append(2.0, 3.5, "store")
    log.append(4.0, 5.0, "load")
    assert list(log) == [(0.0, 1.0, "load"), (2.0, 3.5, "store"), (4.0, 5.0, "load")]
    assert list(log.intervals()) == [(0.0, 1.0), (2.0, 3.5), (4.0, 5.0)]
    assert log[-1] == (4.0, 5.0, "load") and log[0] == (0.0, 1.0, "load") and len(log) == 3
    assert log.labels == ["load", "store"]  # each label stored once
    assert list(pickle.loads(pickle.dumps(log))) == list(log)
    assert not SpanLog()


def test_extend_or_add_merges_only_a_continuation_with_the_same_label() -> None:
    log = SpanLog()
    log.extend_or_add(0.0, 1.0, "mma")
    log.extend_or_add(1.0, 2.0, "mma")  # continues it
    log.extend_or_add(2.0, 3.0, "exp")  # another label
    log.extend_or_add(3.5, 4.0, "exp")  # a gap
    log.append(4.0, 5.0, "exp")  # appended spans are never lengthened
    log.extend_or_add(5.0, 6.0, "exp")
    assert list(log) == [(0.0, 2.0, "mma"), (2.0, 3.0, "exp"), (3.5, 4.0, "exp"), (4.0, 5.0, "exp"),
                         (5.0, 6.0, "exp")]  # fmt: skip


def test_unlabelled_spans_merge_whatever_work_they_were() -> None:
    log = BusyLog()
    log.extend_or_add(0.0, 1.0, "mma")
    log.extend_or_add(1.0, 2.0, "exp")
    log.append(3.0, 4.0, "load")
    assert list(log) == [(0.0, 2.0, ""), (3.0, 4.0, "")]


def test_a_jump_keeps_spans_before_it_cuts_the_crossing_one_and_moves_the_rest() -> None:
    log = SpanLog([(0.0, 1.0, "a"), (1.0, 2.0, "b"), (2.5, 4.0, "c"), (4.0, 5.0, "d")])
    log.continue_after(3.0, 10.0)
    assert list(log) == [
        (0.0, 1.0, "a"),
        (1.0, 2.0, "b"),
        (2.5, 3.0, "c"),
        (13.0, 14.0, "c"),
        (14.0, 15.0, "d"),
    ]
    log.extend_or_add(15.0, 16.0, "d")  # a jump ends any merging: the next span is new
    assert log[-1] == (15.0, 16.0, "d") and len(log) == 6


def _fifo(raw: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """Spans as a FIFO server books them: each starts after the previous one ended (gap >= 0)."""
    out, t = [], 0.0
    for gap, duration, label in raw:
        out.append((t + gap, t + gap + duration, label))
        t += gap + duration
    return out


_spans = st.lists(st.tuples(st.floats(0, 10), st.floats(0.01, 20), st.sampled_from("abc")), max_size=12).map(
    _fifo
)


@given(_spans, st.floats(0, 300), st.floats(0, 50))
def test_a_jump_moves_time_and_nothing_else(
    spans: list[tuple[float, float, str]], start: float, shift: float
) -> None:
    """Busy time per label is kept, nothing is busy inside the skipped stretch, what ended before the
    jump is untouched, and the spans stay ordered by start where they were."""
    log = SpanLog(spans)
    log.continue_after(start, shift)
    busy_only = BusyLog(spans)
    busy_only.continue_after(start, shift)
    assert list(busy_only.intervals()) == list(log.intervals())
    after = list(log)

    def busy(items: list[tuple[float, float, str]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for a, b, label in items:
            out[label] = out.get(label, 0.0) + (b - a)
        return out

    for label, total in busy(spans).items():
        assert abs(busy(after)[label] - total) <= 1e-9 * max(1.0, total)
    assert all(b <= start or a >= start + shift for a, b, _ in after)
    before = [s for s in spans if s[1] <= start]
    assert after[: len(before)] == before
    assert [a for a, _, _ in after] == sorted(a for a, _, _ in after)


@pytest.mark.parametrize("name", ["gemm_ws_pingpong", "attn_fa3_fwd", "mla_decode_flashmla"])
def test_the_attribution_reads_the_same_from_busy_intervals_as_from_a_full_recording(name: str) -> None:
    """An attribution-only run records agents and ports without labels and no samples; its attribution
    and its SM end times are those of a fully recorded run."""
    from test_golden import PROBLEMS

    import gpusim
    from gpusim.report.attribution import attribute
    from gpusim.report.timeline import sm_end_ns
    from gpusim.sim.engine import simulate

    full = gpusim.predict(name, record=True, **PROBLEMS[name]).timeline
    busy = simulate(full.sched, full.arch, record="spans")
    assert type(busy.sms[0].servers["fp32.0"].spans) is BusyLog
    assert type(full.sms[0].servers["fp32.0"].spans) is SpanLog
    assert busy.net.hbm_rate_samples is None and full.net.hbm_rate_samples is not None
    assert attribute(busy) == attribute(full)
    assert [sm_end_ns(busy, i) for i in range(len(busy.sms))] == [
        sm_end_ns(full, i) for i in range(len(full.sms))
    ]


def test_simulate_refuses_an_unknown_recording() -> None:
    import gpusim
    from gpusim.errors import InputError
    from gpusim.sim.engine import simulate

    run = gpusim.predict("gemm_ws_pingpong", record=True, M=512, N=512, K=512).timeline
    with pytest.raises(InputError, match=r"record=.*expected True, False or 'spans'"):
        simulate(run.sched, run.arch, record="timeline")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        simulate(run.sched, run.arch, record=1)  # type: ignore[arg-type]
