"""YAML reading: YAML 1.2 floats (``3.35e12``), one-line errors naming the file and line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusim.errors import InputError
from gpusim.yamlio import parse_yaml_text, read_yaml_mapping


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3.35e12", 3.35e12),
        ("1e9", 1e9),
        ("1E9", 1e9),
        ("80e9", 80e9),
        ("10.0e12", 10.0e12),
        ("-2.5e-3", -2.5e-3),
        ("+4e+2", 400.0),
        ("1.5", 1.5),
        ("141.6", 141.6),
        ("1.", 1.0),
        (".5", 0.5),
        ("-.5", -0.5),
        (".5e3", 500.0),
    ],
)
def test_exponent_floats_parse_as_float(text: str, value: float) -> None:
    """Numbers with an exponent but no dot (``1e9``, ``3.35e12``) are floats, not strings (YAML 1.2)."""
    parsed = parse_yaml_text(f"x: {text}\n", "t.yaml")["x"]
    assert type(parsed) is float
    assert parsed == value


@pytest.mark.parametrize(("text", "value"), [("132", 132), ("-1", -1), ("0", 0), ("65536", 65536)])
def test_plain_integers_stay_integers(text: str, value: int) -> None:
    """Integers without a dot or exponent stay ints, so integer fields accept them."""
    parsed = parse_yaml_text(f"x: {text}\n", "t.yaml")["x"]
    assert type(parsed) is int
    assert parsed == value


@pytest.mark.parametrize("text", ['"9.0"', "'1e9'", "!!str 1e9", "HBM3", "sm_90", "1e", "e9", "1.2.3", "._"])
def test_strings_stay_strings(text: str) -> None:
    """Quoted numbers and things that only look numeric stay strings."""
    assert isinstance(parse_yaml_text(f"x: {text}\n", "t.yaml")["x"], str)


def test_special_floats() -> None:
    """``.inf`` and ``.nan`` still parse as floats."""
    data = parse_yaml_text("a: .inf\nb: -.inf\nc: .nan\n", "t.yaml")
    assert data["a"] == math.inf and data["b"] == -math.inf and math.isnan(data["c"])


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_python_float_text_round_trips(value: float) -> None:
    """Any finite float written as Python writes it (``1e+16``, ``3.35e-05``, ``0.1``) reads back exactly."""
    for text in (repr(value), f"{value:e}", f"{value:.3E}"):
        parsed = parse_yaml_text(f"x: {text}\n", "t.yaml")["x"]
        assert type(parsed) is float, text
        assert parsed == float(text), text


def test_syntax_error_names_source_and_line() -> None:
    """A YAML syntax error is one InputError line naming the source and the (1-based) line."""
    text = "a: 1\nb: 2\nc: [1, 2\nd: 4\n"
    with pytest.raises(InputError) as info:
        parse_yaml_text(text, "archs/broken.yaml")
    message = str(info.value)
    assert message.startswith("archs/broken.yaml: line 4: invalid YAML: ")
    assert "\n" not in message


def test_bad_indentation_names_the_line() -> None:
    """A tab or bad indentation on line 3 is reported as line 3."""
    with pytest.raises(InputError, match=r"^t\.yaml: line 3: invalid YAML: "):
        parse_yaml_text("a: 1\nb: 2\n\tc: 3\n", "t.yaml")


def test_bad_character_names_the_line() -> None:
    """A control character (a reader error, which has no mark) still names its line."""
    with pytest.raises(InputError, match=r"^t\.yaml: line 2: invalid YAML: .*character"):
        parse_yaml_text("a: 1\nb: 2\x01\n", "t.yaml")


@pytest.mark.parametrize("text", ["!!float abc", "!!int 1.5", "2024-13-01", "0b_"])
def test_unconvertible_scalar_is_a_yaml_error_with_its_line(text: str) -> None:
    """A scalar YAML cannot convert (bad tag value, impossible date) is an InputError naming the line."""
    with pytest.raises(InputError, match=r"^t\.yaml: line 2: invalid YAML: cannot read "):
        parse_yaml_text(f"a: 1\nx: {text}\n", "t.yaml")


def test_duplicate_key_is_refused() -> None:
    """A key written twice in one mapping is an error naming the second occurrence's line."""
    with pytest.raises(InputError, match=r"^t\.yaml: line 4: invalid YAML: duplicate key 'x'$"):
        parse_yaml_text("a:\n  x: 1\n  y: 2\n  x: 3\n", "t.yaml")


def test_merge_keys_may_be_overridden() -> None:
    """A YAML merge (``<<: *anchor``) followed by an override is not a duplicate."""
    data = parse_yaml_text("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n", "t.yaml")
    assert data["d"] == {"x": 3, "y": 2}


def test_python_tags_are_refused() -> None:
    """The loader is safe: python object tags are an InputError, not code execution."""
    with pytest.raises(InputError, match="invalid YAML"):
        parse_yaml_text("x: !!python/object/apply:os.getcwd []\n", "t.yaml")


def test_read_yaml_mapping_reads_a_mapping(tmp_path: Path) -> None:
    """read_yaml_mapping returns the top-level mapping of a file."""
    path = tmp_path / "ok.yaml"
    path.write_text("a: 1e9\nb: [1, 2]\n", encoding="utf-8")
    assert read_yaml_mapping(path) == {"a": 1e9, "b": [1, 2]}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("- 1\n- 2\n", "got list"),
        ("42\n", "got int"),
        ("just text\n", "got str"),
        ("", "empty"),
        ("# only\n", "empty"),
    ],
)
def test_read_yaml_mapping_refuses_non_mappings(tmp_path: Path, content: str, needle: str) -> None:
    """A file whose top level is not a mapping is one InputError line naming the file and what it holds."""
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_yaml_mapping(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert needle in message
    assert "\n" not in message


def test_builtin_files_parse_alike_with_the_fast_loader() -> None:
    """The package's own files go through libyaml (when present) and read exactly as the bounded loader reads them."""
    from gpusim.resources import builtin_dir
    from gpusim.yamlio import is_builtin_file, parse_yaml_text, read_yaml_mapping

    path = builtin_dir("archs") / "h100.yaml"
    assert is_builtin_file(path)
    assert read_yaml_mapping(path) == parse_yaml_text(path.read_text(), str(path))
    for text in ("a: 1\na: 2\n", "a: !!float abc\n"):
        with pytest.raises(InputError):
            parse_yaml_text(text, "f", builtin=True)
    assert parse_yaml_text("x: 3.35e12\n", "f", builtin=True) == {"x": 3.35e12}


def test_user_files_are_not_builtin(tmp_path) -> None:
    from gpusim.yamlio import is_builtin_file

    assert not is_builtin_file(tmp_path / "h100.yaml")
