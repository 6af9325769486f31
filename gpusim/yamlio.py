"""YAML reading with one-line errors and floats written as ``3.35e12`` (YAML 1.2 style)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpusim.errors import InputError


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's parser when present: ~10x faster) that also reads ``1e12`` and ``3.35e12``
    as floats, as YAML 1.2 does."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Construct a value; a scalar that cannot be converted (``!!float abc``, ``2024-13-01``) is a YAML error."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, OverflowError) as exc:
            shown = repr(node.value) if isinstance(node, yaml.ScalarNode) else "this value"
            if len(shown) > 60:
                shown = shown[:57] + "..."
            kind = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {shown} as {kind}: {exc}", node.start_mark
            ) from None


_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:float"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def _construct_mapping_no_duplicates(
    loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False
) -> Any:
    """Refuse a key written twice in one mapping (PyYAML would silently keep the last value)."""
    seen: set[str] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if key_node.value in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key '{key_node.value}'",
                key_node.start_mark,
            )
        seen.add(key_node.value)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_no_duplicates)


def parse_yaml_text(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error becomes an InputError naming ``source`` and the line."""
    try:
        return yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" line {mark.line + 1}:"
        elif isinstance(getattr(exc, "position", None), int):  # yaml.reader.ReaderError: a bad character
            where = f" line {text.count(chr(10), 0, exc.position) + 1}:"  # type: ignore[attr-defined]
        else:
            where = ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}:{where} invalid YAML: {' '.join(str(problem).split())}") from None


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping at the top level."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read file: {exc.__class__.__name__}: {exc}") from None
    data = parse_yaml_text(text, str(path))
    if data is None:
        raise InputError(f"{path}: the file is empty, expected a YAML mapping at the top level")
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a YAML mapping at the top level, got {type(data).__name__}")
    return data
