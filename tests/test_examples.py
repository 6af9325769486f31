"""The tutorial schedules in examples/ (docs/schedule-format.md) load, check and predict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpusim
from gpusim.arch import load_arch
from gpusim.errors import ScheduleRefused
from gpusim.schedule.check import check_schedule
from gpusim.schedule.jsonschema import schedule_json_schema
from gpusim.schedule.load import load_schedule

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"


def test_row_softmax_predicts_bandwidth_bound() -> None:
    """The from-scratch row softmax runs, is bounded by HBM, and its occupancy follows its registers."""
    arch = load_arch("h100")
    sched = load_schedule(str(EXAMPLES / "row_softmax.yaml"), arch, {"rows": 4096, "cols": 4096})
    assert sched.launch.ctas_per_sm == 4  # 128 fp32 registers per thread for a 4096-wide row
    summary = gpusim.predict(str(EXAMPLES / "row_softmax.yaml"), arch, attribute=False, rows=4096, cols=4096)
    moved = 2 * 4096 * 4096 * 2
    assert summary.time_us * 1e-6 >= moved / arch.memory.hbm_bandwidth_bytes_per_s


def test_row_softmax_too_wide_for_registers_is_refused() -> None:
    """A 16384-wide row does not fit in one warp's registers: refused with the numbers."""
    arch = load_arch("h100")
    sched = load_schedule(str(EXAMPLES / "row_softmax.yaml"), arch, {"cols": 16384})
    with pytest.raises(ScheduleRefused, match="512 registers per thread > 255"):
        check_schedule(sched, arch)


def test_pingpong_variant_extends_the_shipped_gemm() -> None:
    """The 64x256 ping-pong variant keeps the shipped roles and predicts."""
    arch = load_arch("h100")
    sched = load_schedule(
        str(EXAMPLES / "gemm_pingpong_64x256.yaml"), arch, {"M": 1024, "N": 1024, "K": 1024}
    )
    assert set(sched.roles) == {"producer", "math"}
    assert sched.env["BM"] == 64 and sched.env["BN"] == 256
    summary = gpusim.predict(sched, arch, attribute=False, M=1024, N=1024, K=1024)
    assert 0 < summary.tflops < arch.dense_peak_tflops("bf16")


def test_the_published_schema_file_is_current() -> None:
    """docs/schedule.schema.json (for editors) is what ``gpusim schema --json`` prints."""
    published = json.loads((ROOT / "docs" / "schedule.schema.json").read_text())
    assert published == schedule_json_schema()


def test_the_reference_documents_every_op_and_field() -> None:
    """docs/schedule-format.md names every op and every field of every op."""
    from gpusim.schedule.jsonschema import op_reference

    text = (ROOT / "docs" / "schedule-format.md").read_text()
    for op, _, fields in op_reference():
        assert f"#### `{op}`" in text
        for name, *_ in fields:
            assert f"| `{name}` |" in text, (op, name)


def test_the_schema_accepts_null_removal_and_still_checks_values() -> None:
    """A schedule that extends another may drop an inherited entry with ``null`` (compose.merge); the
    editor schema accepts that, and still refuses a wrong value."""
    import jsonschema
    import yaml

    schema = schedule_json_schema()
    dropping = yaml.safe_load("extends: gemm_ws_pingpong\nbuffers: {c: null}\nmixes: {convert: null}\n")
    jsonschema.validate(dropping, schema)
    wrong = yaml.safe_load("extends: gemm_ws_pingpong\nbuffers: {c: {space: nowhere}}\n")
    with pytest.raises(jsonschema.ValidationError, match="nowhere"):
        jsonschema.validate(wrong, schema)


def test_field_descriptions_come_from_attribute_docstrings() -> None:
    """The models no longer copy docstrings at import; gpusim.fielddocs reads them for the docs."""
    from gpusim.arch import Clocks
    from gpusim.fielddocs import field_description
    from gpusim.schedule.jsonschema import arch_json_schema
    from gpusim.schedule.program import TmaLoad

    assert Clocks.model_fields["boost_clock_mhz"].description is None
    assert field_description(Clocks, "boost_clock_mhz")
    assert field_description(TmaLoad, "bytes") == "Bytes moved (per issuing CTA, before multicast sharing)."
    clocks = arch_json_schema()["$defs"]["Clocks"]["properties"]["boost_clock_mhz"]
    assert clocks["description"] == field_description(Clocks, "boost_clock_mhz")
