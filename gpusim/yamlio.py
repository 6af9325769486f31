"""YAML reading with one-line errors and floats written as ``3.35e12`` (YAML 1.2 style).

Reading of user files is bounded: file size, nesting depth and the number of values after alias
expansion, so a hostile file (an alias bomb, ``/dev/zero``, 10,000 nested lists) is refused quickly with
one line. The package's own files (archs/, schedules/, data/) are trusted and parsed by libyaml's C
parser when PyYAML has it (about 10x faster), with the same float and duplicate-key rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpusim.errors import InputError, quote
from gpusim.resources import builtin_dir
from gpusim.textfile import read_text_file

MAX_YAML_BYTES = 1 << 20
"""The largest YAML file read (the shipped arch and schedule files are under 16 KB)."""
MAX_YAML_DEPTH = 64
"""The deepest nesting of mappings and lists."""
MAX_YAML_VALUES = 200_000
"""The most values (scalars, lists, mappings) a document may hold once its aliases are expanded."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e12`` and ``3.35e12`` as floats, as YAML 1.2 does, and bounds the
    nesting depth and the alias-expanded size of a document."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Compose one node, counting depth and expanded size."""
        is_alias = self.check_event(yaml.AliasEvent)
        mark = self.peek_event().start_mark
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", mark
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._values += self._expanded_size(node, mark) if is_alias else 1
        if self._values > MAX_YAML_VALUES:
            raise yaml.composer.ComposerError(
                None, None, f"more than {MAX_YAML_VALUES:,} values once aliases are expanded", mark
            )
        return node

    def _expanded_size(self, node: yaml.Node, mark: yaml.Mark, active: frozenset[int] = frozenset()) -> int:
        key = id(node)
        if key in self._sizes:
            return self._sizes[key]
        if key in active:
            raise yaml.composer.ComposerError(None, None, "an alias refers to a value that contains it", mark)
        size = 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            size += self._expanded_size(child, mark, active | {key})
            if size > MAX_YAML_VALUES:
                break
        if len(active) == 0 or size > MAX_YAML_VALUES:
            self._sizes[key] = size
        return size

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Construct a value; a scalar that cannot be converted (``!!float abc``, ``2024-13-01``) is a YAML error."""
        return _construct_checked(self, yaml.SafeLoader, node, deep)


def _construct_checked(loader: Any, base: type, node: yaml.Node, deep: bool) -> Any:
    try:
        return base.construct_object(loader, node, deep=deep)
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
                f"duplicate key '{quote(key_node.value)}'",
                key_node.start_mark,
            )
        seen.add(key_node.value)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_no_duplicates)


_FAST_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _BuiltinLoader(_FAST_BASE):  # type: ignore[misc,valid-type]
    """The loader of the package's own files: libyaml's parser when present, the same float and
    duplicate-key rules as ``_Loader``, without the size bounds (the files are ours)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Construct a value; a scalar that cannot be converted is a YAML error."""
        return _construct_checked(self, _FAST_BASE, node, deep)


_BuiltinLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
_BuiltinLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_no_duplicates)


def _builtin_roots() -> tuple[Path, ...]:
    return tuple(builtin_dir(name).resolve() for name in ("archs", "schedules", "data"))


def is_builtin_file(path: Path) -> bool:
    """Whether ``path`` is one of the package's shipped files (read with the fast loader)."""
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError):
        return False
    return any(resolved.is_relative_to(root) for root in _builtin_roots())


def parse_yaml_text(text: str, source: str, *, builtin: bool = False) -> Any:
    """Parse YAML text; a syntax error becomes an InputError naming ``source`` and the line.

    ``builtin``: the text is one of the package's own files (fast C parser, no size bounds)."""
    if len(text) > MAX_YAML_BYTES:
        raise InputError(f"{source}: {len(text):,} characters is too long (limit {MAX_YAML_BYTES:,})")
    try:
        return yaml.load(text, Loader=_BuiltinLoader if builtin else _Loader)  # both SafeLoader kinds
    except RecursionError:
        raise InputError(f"{source}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" line {mark.line + 1}:"
        elif isinstance(getattr(exc, "position", None), int):  # yaml.reader.ReaderError: a bad character
            where = f" line {text.count(chr(10), 0, exc.position) + 1}:"  # type: ignore[attr-defined]
        else:
            where = ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["?"])[0]
        raise InputError(f"{source}:{where} invalid YAML: {quote(problem, 300)}") from None


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping at the top level."""
    text = read_text_file(Path(path), what="a YAML file", max_bytes=MAX_YAML_BYTES)
    data = parse_yaml_text(text, str(path), builtin=is_builtin_file(path))
    if data is None:
        raise InputError(f"{path}: the file is empty, expected a YAML mapping at the top level")
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a YAML mapping at the top level, got {type(data).__name__}")
    return data
