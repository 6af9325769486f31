"""Kernel sequences: each kernel predicted alone, launches summed, PDL hiding the next launch on sm_90+."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusim.api import load_arch as gpusim_load_arch
from gpusim.arch import load_arch
from gpusim.errors import InputError, ScheduleRefused, UnknownNameError
from gpusim.sequence import is_sequence_file, load_sequence, predict_kernel, predict_sequence

SEQ = """
sequence: two_streams
problem: {n: 1048576}
kernels:
- name: first
  schedule: stream
  set: {op: copy, bytes: n * 4}
- name: second
  schedule: stream
  set: {op: scale, bytes: 2 * n * 4}
  launch: {launch}
  repeat: 2
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "seq.yaml"
    path.write_text(text)
    return path


def test_sequence_time_is_the_sum_of_its_kernels_launches_included(tmp_path: Path) -> None:
    arch = load_arch("h100")
    result = predict_sequence(load_sequence(_write(tmp_path, SEQ.replace("{launch}", "stream"))), arch)
    first = predict_kernel("stream", arch, {"op": "copy", "bytes": 1048576 * 4})
    second = predict_kernel("stream", arch, {"op": "scale", "bytes": 2 * 1048576 * 4})
    assert result.time_us == pytest.approx(first.time_us + 2 * second.time_us)
    assert [k.name for k in result.kernels] == ["first", "second"]


def test_pdl_hides_the_dependent_launch_behind_the_previous_kernel(tmp_path: Path) -> None:
    arch = gpusim_load_arch("h100", costs="calibrated")  # the fitted per-launch cost (the datasheet has none)
    assert arch.calibration.launch_overhead_ns > 0
    plain = predict_sequence(load_sequence(_write(tmp_path, SEQ.replace("{launch}", "stream"))), arch)
    pdl = predict_sequence(load_sequence(_write(tmp_path, SEQ.replace("{launch}", "pdl"))), arch)
    hidden = pdl.kernels[1].launch_hidden_us
    assert 0 < hidden <= arch.calibration.launch_overhead_ns / 1000
    assert pdl.time_us == pytest.approx(plain.time_us - 2 * hidden)


def test_pdl_is_refused_before_hopper(tmp_path: Path) -> None:
    seq = load_sequence(_write(tmp_path, SEQ.replace("{launch}", "pdl")))
    with pytest.raises(ScheduleRefused, match=r"compute capability 9\.0"):
        predict_sequence(seq, load_arch("a100"))


def test_overrides_reach_the_kernels_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    seq = load_sequence(_write(tmp_path, SEQ.replace("{launch}", "stream")))
    arch = load_arch("h100")
    small = predict_sequence(seq, arch, {"n": 1024})
    big = predict_sequence(seq, arch)
    assert small.time_us < big.time_us
    with pytest.raises(InputError, match="--set m: not a symbol"):
        predict_sequence(seq, arch, {"m": 1})


def test_an_unknown_schedule_is_named_with_its_place_in_the_file(tmp_path: Path) -> None:
    seq = load_sequence(
        _write(
            tmp_path,
            SEQ.replace("{launch}", "stream").replace(
                "schedule: stream\n  set: {op: scale", "schedule: straem\n  set: {op: scale"
            ),
        )
    )
    with pytest.raises(
        UnknownNameError,
        match=r"kernels\[1\] \(second\)\.schedule: unknown schedule 'straem'; did you mean 'stream'",
    ):
        predict_sequence(seq, load_arch("h100"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kernels: []", "kernels: expected a non-empty list"),
        ("kernels: [{name: a}]", r"kernels\[0\].schedule: required"),
        ("kernels: [{schedule: stream, launch: async}]", "'async' is not a launch kind"),
        ("kernels: [{schedule: stream, repeat: 0}]", r"repeat: expected a whole number from 1 to"),
        ("kernels: [{schedule: stream}]\nlayers: 2", "unknown key 'layers'"),
    ],
)
def test_bad_sequence_files_are_refused_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_sequence(_write(tmp_path, text))


EXAMPLE_SEQUENCES = sorted(
    p
    for p in (Path(__file__).parent.parent / "examples" / "sequences").glob("*.yaml")
    if is_sequence_file(str(p))
)


def test_the_examples_hold_the_layer_and_backward_sequences() -> None:
    assert {p.stem for p in EXAMPLE_SEQUENCES} >= {"llama3_8b_decode_layer", "fa3_backward", "fa2_backward"}


@pytest.mark.parametrize("path", EXAMPLE_SEQUENCES, ids=lambda p: p.stem)
def test_example_sequences_parse_with_every_schedule_and_symbol_known(path: Path) -> None:
    from gpusim.autotune import is_auto
    from gpusim.schedule.load import builtin_schedule_names
    from gpusim.sequence import resolve_sets

    seq = load_sequence(path)
    assert seq.kernels
    for step in seq.kernels:
        assert is_auto(step.schedule) or step.schedule in builtin_schedule_names()
        resolved = resolve_sets(step, seq.problem, step.name)
        assert all(not isinstance(v, str) or k in ("dtype", "op") for k, v in resolved.items()), resolved
