"""The schedule language: typed statements, range checks, register budgets, occupancy, the JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import gpusim
from gpusim.arch import archs_dir, load_arch
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.predictor import Skip, ignored_columns, problem_for
from gpusim.errors import InputError, ScheduleRefused
from gpusim.schedule.check import check_schedule
from gpusim.schedule.jsonschema import arch_json_schema, schedule_json_schema
from gpusim.schedule.load import builtin_schedule_names, load_schedule, schedules_dir
from gpusim.schedule.program import Mma, TmaLoad
from gpusim.yamlio import parse_yaml_text, read_yaml_mapping

PINGPONG = (schedules_dir() / "gemm_ws_pingpong.yaml").read_text()


def _variant(tmp_path: Path, old: str, new: str, name: str = "variant.yaml") -> str:
    assert old in PINGPONG
    path = tmp_path / name
    path.write_text(PINGPONG.replace(old, new))
    return str(path)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "          - wait: ab\n",
            "          - cuda: {ops: {bogus: 1}, elems: 1}\n          - wait: ab\n",
            "expected one of 'fp32', 'ex2'",
        ),
        ("instr: auto, a: smem}", "instr: auto, a: smam}", "expected one of 'smem', 'rmem' or 'tmem'"),
        ("    warps: 4\n", "    warps: -4\n", "roles.math.warps': expected a number >= 1"),
        (
            "release: {buf: ab, keep: 1}",
            "release: {bufs: ab, keep: 1}",
            "unknown key 'bufs'; did you mean 'buf'?",
        ),
        (
            "wait_async: {queue: wgmma, pending: 1}",
            "wait_async: {queue: wgmma, pending: -1}",
            "expected a number >= 0",
        ),
        ("          - wait: ab\n", "          - wiat: ab\n", "unknown op 'wiat'; did you mean 'wait'?"),
        (
            "wait_async: {queue: wgmma, pending: 1}",
            "wait_async: {queue: wgmm, pending: 1}",
            "expected one of",
        ),
        ("protocol: tma->threads", "protocol: tma->thread", "expected one of"),
        ("  ab: {space: smem, stages: STAGES,", "  ab: {space: smem, stages: 0,", "buffers.ab.stages"),
    ],
)
def test_bad_statement_fields_are_refused_with_the_path(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    """Unknown keys, closed sets and constant ranges are refused when the file is read, naming the field."""
    path = _variant(tmp_path, old, new)
    with pytest.raises(InputError) as info:
        load_schedule(path, load_arch("h100"))
    assert expected in str(info.value)
    assert path in str(info.value)


def test_empty_roles_are_refused(tmp_path: Path) -> None:
    """``roles: {}`` is not a schedule (it used to predict 3.4 us of nothing)."""
    path = tmp_path / "empty.yaml"
    path.write_text(PINGPONG[: PINGPONG.index("roles:")] + "roles: {}\n")
    with pytest.raises(InputError, match="at least one role"):
        load_schedule(str(path), load_arch("h100"))


def test_evaluated_values_are_range_checked_where_used(tmp_path: Path) -> None:
    """A size that evaluates negative is refused at the statement that uses it, with its path."""
    from gpusim.sim.engine import simulate

    path = _variant(tmp_path, "release: {buf: ab, keep: 1}", "release: {buf: ab, keep: 0 - BM}")
    arch = load_arch("h100")
    with pytest.raises(
        InputError, match=r"roles\.math\.program\[0\].*release: '0 - BM': expected a whole number >= 0"
    ):
        simulate(load_schedule(path, arch, {"M": 256, "N": 256, "K": 256}), arch)


def test_a_negative_warp_count_from_a_param_is_refused(tmp_path: Path) -> None:
    """warps: -4 through a parameter gives an error, not threads_per_cta: -96 (the param's own default is
    negative: a --set of a negative value over a non-negative default is refused earlier, at the param)."""
    path = _variant(tmp_path, "    warps: 4\n", "    warps: WARPS\n").replace("", "")
    text = Path(path).read_text().replace("  BM: 128\n", "  BM: 128\n  WARPS: 4 - BM // 16\n")
    Path(path).write_text(text)
    with pytest.raises(InputError, match=r"roles\.math\.warps: expected a whole number >= 1, got -4"):
        load_schedule(path, load_arch("h100"))


def test_statements_are_typed_models() -> None:
    """The interpreter's statements carry typed op models, not mappings of text."""
    sched = load_schedule("gemm_ws_pingpong", load_arch("h100"))
    producer = sched.roles["producer"].program[0].body[0].body
    loads = [s.args for s in producer if s.op == "tma_load"]
    assert all(isinstance(a, TmaLoad) for a in loads)
    assert loads[0].operand == "A" and loads[0].multicast is not None
    maths = [s for s in sched.roles["math"].program[0].body[0].body[0].body if s.op == "mma"]
    assert isinstance(maths[0].args, Mma) and maths[0].args.unit == "wgmma"


def test_pingpong_128x256_is_refused_with_register_numbers() -> None:
    """The issue's case: a 128x256 fp32 accumulator per warpgroup needs 256 registers per thread."""
    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"BN": 256, "STAGES": 3, "MATH_REGS": 64})
    with pytest.raises(ScheduleRefused, match=r"32,768 registers .* = 256 registers per thread > 255"):
        check_schedule(sched, arch)
    small = load_schedule("gemm_ws_pingpong", arch, {"MATH_REGS": 64})
    with pytest.raises(ScheduleRefused, match=r"need 128 registers per thread .* more than its 64"):
        check_schedule(small, arch)


@pytest.mark.parametrize(
    ("bm", "bn", "regs_per_thread"),
    [(64, 128, 128), (128, 160, 160), (128, 192, 192), (256, 128, 192), (256, 160, None)],
)
def test_deepgemm_registers_follow_its_waves(bm: int, bn: int, regs_per_thread: int | None) -> None:
    """DeepGEMM holds one 64-row wave's accumulator plus every wave's promoted result: BM 256 x BN 128
    (two waves per math warpgroup) fits setmaxnreg 232 with 64 + 128 registers; 256 x 160 does not."""
    arch = load_arch("h800")
    sched = load_schedule("gemm_fp8_deepgemm", arch, {"BM": bm, "BN": bn})
    if regs_per_thread is None:
        with pytest.raises(ScheduleRefused, match=r"need 240 registers per thread .* more than its 232"):
            check_schedule(sched, arch)
        return
    rmem = sum(b.bytes for b in sched.buffers.values() if b.space == "rmem") // 4
    assert rmem // (sched.roles["math"].warps * 32) == regs_per_thread
    check_schedule(sched, arch)


def test_occupancy_is_computed_unless_pinned() -> None:
    """ctas_per_sm: auto takes the most CTAs that every budget allows; a pinned value is kept."""
    arch = load_arch("a100")
    pinned = load_schedule("gemm_sync", arch)
    assert pinned.launch.ctas_pinned and pinned.launch.ctas_per_sm == 1
    stream = load_schedule("stream", arch)
    auto = load_schedule("gemm_ws_pingpong", load_arch("h100"))
    assert not auto.launch.ctas_pinned and auto.launch.ctas_per_sm == 1  # 227 KiB ring: one CTA per SM
    budgets = check_schedule(stream, arch)
    assert budgets.ctas_per_sm == stream.launch.ctas_per_sm


def test_small_tiles_get_more_ctas_per_sm(tmp_path: Path) -> None:
    """A GEMM whose shared memory and registers leave room runs several CTAs per SM."""
    arch = load_arch("h100")
    sched = load_schedule("gemm_ws_pingpong", arch, {"STAGES": 2, "BN": 64, "MATH_REGS": 96})
    budgets = check_schedule(sched, arch)
    assert sched.launch.ctas_per_sm == budgets.ctas_per_sm >= 2
    assert budgets.registers_per_sm <= budgets.registers_limit_per_sm
    assert budgets.smem_bytes_per_sm <= arch.sm.smem_bytes_per_sm


@pytest.fixture(scope="module")
def schedule_schema() -> dict:
    return schedule_json_schema()


@pytest.mark.parametrize("name", builtin_schedule_names())
def test_every_shipped_schedule_validates_against_the_json_schema(name: str, schedule_schema: dict) -> None:
    """``gpusim schema --json`` accepts every file in schedules/ (and parts/)."""
    data = read_yaml_mapping(schedules_dir() / f"{name}.yaml")
    jsonschema.validate(data, schedule_schema)


def test_parts_and_examples_validate_against_the_json_schema(schedule_schema: dict) -> None:
    """Shared parts and the tutorial examples are written in the same format."""
    files = [
        *(schedules_dir() / "parts").glob("*.yaml"),
        *(Path(__file__).parents[1] / "examples").glob("*.yaml"),
    ]
    for path in files:
        jsonschema.validate(read_yaml_mapping(path), schedule_schema)


def test_the_json_schema_refuses_what_the_loader_refuses(schedule_schema: dict) -> None:
    """An unknown op key and a bad closed-set value fail the JSON Schema too."""
    data = parse_yaml_text(PINGPONG, "pingpong")
    data["roles"]["math"]["program"][0]["do"][0]["do"][0]["do"][0] = {"wiat": "ab"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schedule_schema)


@pytest.mark.parametrize("path", sorted(archs_dir().glob("*.yaml")), ids=lambda p: p.stem)
def test_every_arch_validates_against_the_json_schema(path: Path) -> None:
    """``gpusim schema arch --json`` accepts every file in archs/."""
    jsonschema.validate(read_yaml_mapping(path), arch_json_schema())


def test_schema_command(run_cli) -> None:  # type: ignore[no-untyped-def]
    """``gpusim schema --json`` prints a JSON Schema; ``gpusim schema`` lists every op."""
    rc, out, err = run_cli(["schema", "--json"])
    assert rc == 0, err
    assert json.loads(out)["title"] == "gpusim schedule"
    rc, out, err = run_cli(["schema"])
    assert rc == 0, err
    assert "tma_load:" in out and "wait_async:" in out
    rc, out, err = run_cli(["schema", "archs"])
    assert rc == 2 and "unknown kind" in err


def test_an_undeclared_symbol_is_refused_before_simulating(tmp_path: Path) -> None:
    """A misspelt injected symbol (k_ends) is refused by the check, naming the statement and the closest."""
    path = _variant(tmp_path, "          - wait: ab\n", "          - wait: ab\n            if: k < k_ends\n")
    arch = load_arch("h100")
    with pytest.raises(
        InputError, match=r"for\.do\[0\]\.wait: 'k < k_ends': unknown symbol 'k_ends'; did you mean 'k_end'"
    ):
        check_schedule(load_schedule(path, arch), arch)


def _row(schedule: str, params: dict) -> Measurement:  # type: ignore[type-arg]
    return Measurement(index=0, file="rows.csv", line=2, source="test", arch="h800", schedule=schedule,
                       dtype="fp8_e4m3", dims={"M": 4096, "N": 7168, "K": 7168, "batch": 1}, metric="throughput",
                       value=1.0, unit="TFLOPS", params=params)  # fmt: skip


def test_measured_params_use_the_vocabulary_and_aliases() -> None:
    """A row's BM=128;BN=160 reaches the DeepGEMM schedule as that tile (BLOCK_N is an alias of BN)."""
    assert problem_for("gemm_fp8_deepgemm", _row("gemm_fp8_deepgemm", {"BM": 128, "BN": 160}))["BN"] == 160
    assert problem_for("gemm_fp8_deepgemm", _row("gemm_fp8_deepgemm", {"BLOCK_N": 112}))["BN"] == 112
    arch = load_arch("h800")
    wide = load_schedule("gemm_fp8_deepgemm", arch, {"BLOCK_M": 128, "BLOCK_N": 160})
    assert (wide.env["BM"], wide.env["BN"]) == (128, 160)


def test_a_row_naming_an_unknown_parameter_is_skipped_with_the_key() -> None:
    """BOGUS=1 is not silently dropped: the row is skipped naming BOGUS; descriptive keys are kept out."""
    with pytest.raises(Skip, match="no parameter 'BOGUS'"):
        problem_for("gemm_fp8_deepgemm", _row("gemm_fp8_deepgemm", {"BOGUS": 1}))
    with pytest.raises(Skip, match=r"no parameter 'BLOCK_N'.*closest it has is 'BN'"):
        problem_for("gemm_ws_pingpong", _row("gemm_ws_pingpong", {"BLOCK_N": 64}))
    kept = problem_for(
        "gemm_fp8_deepgemm", _row("gemm_fp8_deepgemm", {"app": "DeepSpeech", "bytes_moved": 1})
    )
    assert "app" not in kept and kept["M"] == 4096
    assert ignored_columns(_row("gemm_fp8_deepgemm", {})) == ["batch"]


def test_word_valued_symbols_refuse_values_outside_their_choices() -> None:
    """``choices`` lists the words a symbol takes: a typo is refused naming the closest word."""
    with pytest.raises(InputError, match=r"stream takes op one of copy, .*did you mean 'triad'"):
        gpusim.predict("stream", "h100", attribute=False, op="trid", bytes=1 << 20)
    with pytest.raises(InputError, match=r"layout one of contiguous, masked; did you mean 'masked'"):
        gpusim.predict("gemm_fp8_deepgemm", "h800", attribute=False, layout="mask")
    assert gpusim.predict("stream", "h100", attribute=False, op="triad", bytes=1 << 20).time_us > 0


def test_raster_may_be_an_expression_giving_one_of_the_orders(tmp_path: Path) -> None:
    """``raster:`` takes the four words or an expression giving one; anything else names the field."""
    words = "scheduler: {kind: static_persistent, raster: along_m, swizzle: 8}"
    as_expr = _variant(tmp_path, words, words.replace("along_m", "\"'along_n' if BM > 64 else 'along_m'\""))
    along_n = _variant(tmp_path, words, words.replace("along_m", "along_n"), name="along_n.yaml")
    got = gpusim.predict(as_expr, "h100", attribute=False, M=2048, N=4096, K=1024)
    want = gpusim.predict(along_n, "h100", attribute=False, M=2048, N=4096, K=1024)
    assert got.time_us == want.time_us
    typo = _variant(tmp_path, words, words.replace("along_m", "alnog_m"), name="typo.yaml")
    with pytest.raises(
        InputError, match=r"launch.scheduler.raster: expected one of along_m.*did you mean 'along_m'"
    ):
        gpusim.predict(typo, "h100", attribute=False)
    wrong = _variant(tmp_path, words, words.replace("along_m", "\"'diagonal'\""), name="wrong.yaml")
    with pytest.raises(InputError, match=r"launch.scheduler.raster: .*got diagonal"):
        gpusim.predict(wrong, "h100", attribute=False)


def test_requires_refuses_values_that_break_a_condition_with_the_values_it_read(tmp_path: Path) -> None:
    path = _variant(
        tmp_path, "requires:\n", "requires:\n  even_k: {check: K % 128 == 0, why: whole 128-wide k-blocks}\n"
    )
    assert gpusim.predict(path, "h100", M=256, N=256, K=512, costs="datasheet").time_us > 0
    with pytest.raises(InputError, match=r"requires\.even_k: K % 128 == 0 does not hold \(whole 128-wide "
                                         r"k-blocks\); here K=520"):  # fmt: skip
        gpusim.predict(path, "h100", M=256, N=256, K=520, costs="datasheet")


def test_requires_of_a_part_apply_and_merge_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"requires\.gqa_groups: .* here heads=16, heads_kv=5"):
        load_schedule("attn_fa3_fwd", load_arch("h100"), {"heads": 16, "heads_kv": 5})
    with pytest.raises(InputError, match=r"requires\.epilogue_tile: .* EPI_M=48"):
        load_schedule("gemm_ws_cooperative", load_arch("h100"), {"EPI_M": 48})
    cooperative = (schedules_dir() / "gemm_ws_cooperative.yaml").read_text()
    lifted = tmp_path / "lifted.yaml"
    lifted.write_text(cooperative + "requires: {epilogue_tile: null}\n")
    assert load_schedule(str(lifted), load_arch("h100"), {"EPI_M": 48}).env["EPI_M"] == 48


def test_a_requires_check_that_cannot_be_evaluated_names_its_field(tmp_path: Path) -> None:
    path = _variant(tmp_path, "requires:\n", "requires:\n  bad: {check: KK > 0}\n")
    with pytest.raises(InputError, match=r"requires\.bad\.check: .*'KK'"):
        load_schedule(path, load_arch("h100"), {})
