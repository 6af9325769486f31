"""Bad arch input: one line naming the file, the field and what was expected; exit status 2; no traceback.

Each case is checked twice: through the CLI (``gpusim archs show <path>``) and through the Python API
(``load_arch`` raising :class:`InputError`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gpusim.arch import builtin_arch_ids, load_arch
from gpusim.errors import GpusimError, InputError, UnknownNameError


@dataclass(frozen=True)
class BadField:
    """A copy of h100.yaml with one field changed or removed, and what the message must say."""

    case: str
    field_path: str
    expect: tuple[str, ...]
    changes: dict[str, Any] = field(default_factory=dict)
    delete: tuple[str, ...] = ()


BAD_FIELDS = [
    BadField("unknown_key", "sm_cout", ("unknown key",), changes={"sm_cout": 3}),
    BadField("unknown_nested_key", "memory.hbm_bandwith_bytes_per_s", ("unknown key",),
             changes={"memory.hbm_bandwith_bytes_per_s": 3.35e12}),
    BadField("missing_field", "sm_count", ("required", "missing"), delete=("sm_count",)),
    BadField("missing_nested_field", "clocks.tensor_clock_mhz", ("required", "missing"),
             delete=("clocks.tensor_clock_mhz",)),
    BadField("negative_bandwidth", "memory.hbm_bandwidth_bytes_per_s", ("expected a number >= 1000000", "-1"),
             changes={"memory.hbm_bandwidth_bytes_per_s": -1}),
    BadField("zero_bandwidth", "memory.hbm_bandwidth_bytes_per_s", ("expected a number >= 1000000", "got integer 0"),
             changes={"memory.hbm_bandwidth_bytes_per_s": 0}),
    BadField("string_for_integer", "sm_count", ("expected an integer", "'lots'"), changes={"sm_count": "lots"}),
    BadField("string_for_number", "clocks.boost_clock_mhz", ("expected a number", "'fast'"),
             changes={"clocks.boost_clock_mhz": "fast"}),
    BadField("fraction_for_integer", "sm_count", ("expected an integer", "13.5"), changes={"sm_count": 13.5}),
    BadField("bool_for_integer", "sm_count", ("expected an integer", "boolean true"), changes={"sm_count": True}),
    BadField("null_for_integer", "sm_count", ("expected an integer", "null"), changes={"sm_count": None}),
    BadField("scalar_for_block", "memory", ("expected a mapping", "integer 5"), changes={"memory": 5}),
    BadField("scalar_for_list", "aliases", ("expected a list",), changes={"aliases": "h100x"}),
    BadField("string_for_bool", "features.cp_async", ("expected true or false",),
             changes={"features.cp_async": "sometimes"}),
    BadField("unknown_choice", "generation", ("expected one of", "'hopper'", "'pascal'"),
             changes={"generation": "pascal"}),
    BadField("unknown_dtype_key", "tensor_cores.mma_sync.dtypes.fp17", ("expected one of", "'bf16'"),
             changes={"tensor_cores.mma_sync.dtypes.fp17": {"flops_per_clk_per_sm": 1}}),
    BadField("list_for_block", "sm.tmem", ("expected a mapping",), changes={"sm.tmem": [1, 2]}),
    BadField("bad_compute_capability", "compute_capability", ("expected text matching",),
             changes={"compute_capability": "nine"}),
    BadField("inconsistent_features", "features.wgmma", ("tensor_cores.wgmma",),
             changes={"features.wgmma": False}),
]  # fmt: skip


def _assert_one_line(message: str) -> None:
    assert "Traceback" not in message
    assert message.strip() and "\n" not in message.strip(), message


def _assert_cli_error(result: tuple[int, str, str], *needles: str) -> str:
    rc, out, err = result
    _assert_one_line(err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("gpusim: error: "), err
    assert rc == 2, (rc, err)
    assert out == ""
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _assert_api_error(target: str | Path, *needles: str) -> InputError:
    with pytest.raises(InputError) as info:
        load_arch(target)
    message = str(info.value)
    _assert_one_line(message)
    for needle in needles:
        assert needle in message, (needle, message)
    return info.value


def _bad_file(arch_yaml: Callable[..., Path], bad: BadField) -> Path:
    return arch_yaml(changes=bad.changes, delete=bad.delete, name=f"{bad.case}.yaml")


# ---- bad fields ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_FIELDS, ids=lambda b: b.case)
def test_bad_field_via_cli(
    bad: BadField, arch_yaml: Callable[..., Path], run_cli: Callable[..., Any]
) -> None:
    """``gpusim archs show <bad file>``: one stderr line with the path, the field and what was expected; rc 2."""
    path = _bad_file(arch_yaml, bad)
    _assert_cli_error(run_cli(["archs", "show", path]), str(path), bad.field_path, *bad.expect)


@pytest.mark.parametrize("bad", BAD_FIELDS, ids=lambda b: b.case)
def test_bad_field_via_api(bad: BadField, arch_yaml: Callable[..., Path]) -> None:
    """``load_arch(<bad file>)`` raises InputError whose one-line message names the path, field, expectation."""
    path = _bad_file(arch_yaml, bad)
    _assert_api_error(path, str(path), bad.field_path, *bad.expect)


def test_field_is_quoted_in_the_message(arch_yaml: Callable[..., Path]) -> None:
    """The message says ``field '<dotted path>'`` so the field cannot be confused with the value."""
    path = arch_yaml(changes={"memory.hbm_bandwidth_bytes_per_s": -1})
    _assert_api_error(path, "field 'memory.hbm_bandwidth_bytes_per_s'")


def test_several_problems_are_counted_on_the_same_line(arch_yaml: Callable[..., Path]) -> None:
    """With several bad fields the first is described and the rest counted, still on one line."""
    path = arch_yaml(changes={"sm_count": "lots", "clocks.boost_clock_mhz": -5, "sm_cout": 1})
    _assert_api_error(path, str(path), "sm_count", "(and 2 more problems)")


# ---- unreadable files ----------------------------------------------------------------------------


def _unreadable(kind: str, tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    if kind == "nonexistent":
        return tmp_path / "no_such_arch.yaml", ("file not found",)
    if kind == "directory":
        path = tmp_path / "a_directory.yaml"
        path.mkdir()
        return path, ("is a directory",)
    if kind == "invalid_yaml":
        path = tmp_path / "broken.yaml"
        path.write_text("id: x\nname: y\nsm_count: [1, 2\nclocks: {}\n", encoding="utf-8")
        return path, ("invalid YAML", "line 4")
    if kind == "top_level_list":
        path = tmp_path / "list.yaml"
        path.write_text("- id: h100\n- id: a100\n", encoding="utf-8")
        return path, ("expected a YAML mapping at the top level", "list")
    if kind == "empty_file":
        path = tmp_path / "empty.yaml"
        path.write_text("", encoding="utf-8")
        return path, ("empty",)
    if kind == "not_utf8":
        path = tmp_path / "binary.yaml"
        path.write_bytes(b"id: \xff\xfe\x00\n")
        return path, ("cannot read file",)
    if kind == "duplicate_key":
        path = tmp_path / "dup.yaml"
        path.write_text("id: a\nsm_count: 1\nsm_count: 2\n", encoding="utf-8")
        return path, ("line 3", "duplicate key 'sm_count'")
    if kind == "unconvertible_value":
        path = tmp_path / "date.yaml"
        path.write_text("id: a\nreleased: 2024-13-01\n", encoding="utf-8")
        return path, ("line 2", "cannot read '2024-13-01'")
    raise AssertionError(kind)


UNREADABLE = [
    "nonexistent",
    "directory",
    "invalid_yaml",
    "top_level_list",
    "empty_file",
    "not_utf8",
    "duplicate_key",
    "unconvertible_value",
]


@pytest.mark.parametrize("kind", UNREADABLE)
def test_unreadable_file_via_cli(kind: str, tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """A missing file, a directory, broken YAML, a non-mapping or undecodable file: one line, rc 2."""
    path, needles = _unreadable(kind, tmp_path)
    _assert_cli_error(run_cli(["archs", "show", path]), str(path), *needles)


@pytest.mark.parametrize("kind", UNREADABLE)
def test_unreadable_file_via_api(kind: str, tmp_path: Path) -> None:
    """The same unreadable files raise InputError naming the path and the problem, on one line."""
    path, needles = _unreadable(kind, tmp_path)
    _assert_api_error(path, str(path), *needles)


def test_relative_path_is_named_as_given(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    """A relative path that does not exist is reported as the user typed it."""
    _assert_cli_error(
        run_cli(["archs", "show", "missing/arch.yaml"], cwd=tmp_path), "missing/arch.yaml", "not found"
    )


# ---- unknown arch ids ----------------------------------------------------------------------------


def test_close_unknown_id_suggests_the_match_via_cli(run_cli: Callable[..., Any]) -> None:
    """``gpusim archs show h10``: one line naming the unknown arch and suggesting h100; rc 2."""
    _assert_cli_error(run_cli(["archs", "show", "h10"]), "unknown arch 'h10'", "did you mean 'h100'?")


def test_close_unknown_id_suggests_the_match_via_api() -> None:
    """load_arch("h10") raises UnknownNameError (an InputError) carrying the suggestion h100."""
    error = _assert_api_error("h10", "unknown arch 'h10'", "did you mean 'h100'?")
    assert isinstance(error, UnknownNameError)
    assert error.suggestion == "h100"


def test_far_unknown_id_lists_known_ids_via_cli(run_cli: Callable[..., Any]) -> None:
    """A name close to nothing lists every known arch id, on one line; rc 2."""
    err = _assert_cli_error(
        run_cli(["archs", "show", "quantum_accelerator"]), "unknown arch 'quantum_accelerator'"
    )
    assert "known:" in err
    for arch_id in builtin_arch_ids():
        assert arch_id in err


def test_far_unknown_id_lists_known_ids_via_api() -> None:
    """load_arch of a far-off name raises with every known id listed and no suggestion."""
    error = _assert_api_error("quantum_accelerator", "known:", *builtin_arch_ids())
    assert isinstance(error, UnknownNameError)
    assert error.suggestion is None


def test_input_errors_are_gpusim_errors() -> None:
    """InputError is a GpusimError, which the CLI turns into one line and exit status 2."""
    assert issubclass(InputError, GpusimError)
    assert issubclass(UnknownNameError, InputError)
