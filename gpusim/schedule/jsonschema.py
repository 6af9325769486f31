"""JSON Schemas of the schedule format and of arch files, for editors and for checking files.

Editors that read ``# yaml-language-server: $schema=<file>`` (VS Code's YAML extension and others)
complete and check a schedule against the file ``gpusim schema --json > schedule.schema.json`` writes.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from gpusim.fielddocs import field_description, field_docstrings
from gpusim.schedule.expr import Expr

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _Generator(GenerateJsonSchema):
    """Writes expression defaults as the number or text they were written as."""

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, Expr):
            return dft({}) if dft.is_constant else dft.text
        return super().encode_default(dft)

    def model_schema(self, schema: Any) -> Any:
        """A model's properties described by its fields' docstrings (read from the source only here)."""
        json_schema = super().model_schema(schema)
        cls = schema.get("cls")
        properties = json_schema.get("properties") if isinstance(json_schema, dict) else None
        if cls is None or not properties:
            return json_schema
        docs = field_docstrings(cls)
        for name, info in cls.model_fields.items():
            key = (info.alias or name) if self.by_alias else name
            prop = properties.get(key)
            if isinstance(prop, dict) and info.description is None and docs.get(name):
                prop["description"] = docs[name]
        return json_schema


def schedule_json_schema() -> dict[str, Any]:
    """The JSON Schema of a schedule file as authored (composition keys included)."""
    from gpusim.schedule.schema import AuthoredScheduleSpec

    schema = AuthoredScheduleSpec.model_json_schema(
        mode="validation", by_alias=True, schema_generator=_Generator
    )
    _allow_null_removal(schema)
    return {"$schema": SCHEMA_DIALECT, "title": "gpusim schedule", **_without_title(schema)}


def _allow_null_removal(node: Any, top: bool = True) -> None:
    """``null`` removes an inherited key (gpusim.schedule.compose.merge): allowed as the value of every
    entry of a mapping (params, buffers, mixes, roles, launch fields ...) and of every top-level key."""
    if isinstance(node, dict):
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            node["additionalProperties"] = {"anyOf": [extra, {"type": "null"}]}
        if top:
            for name, prop in list(node.get("properties", {}).items()):
                if name != "$schema":
                    node["properties"][name] = {"anyOf": [prop, {"type": "null"}]}
        for key, value in node.items():
            if key != "properties" or not top:
                _allow_null_removal(value, top=False)
            else:
                for prop in value.values():
                    _allow_null_removal(prop, top=False)
    elif isinstance(node, list):
        for item in node:
            _allow_null_removal(item, top=False)


def arch_json_schema() -> dict[str, Any]:
    """The JSON Schema of an arch file."""
    from gpusim.arch import Arch

    schema = Arch.model_json_schema(mode="validation", by_alias=True, schema_generator=_Generator)
    return {"$schema": SCHEMA_DIALECT, "title": "gpusim architecture", **_without_title(schema)}


def _without_title(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "title"}


def op_reference() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """Every op: (name, summary, [(field, type, default, description)]) from the statement models."""
    from gpusim.schedule.program import STATEMENT_MODELS

    out = []
    for op, stmt_model in STATEMENT_MODELS.items():
        field_name = "for_" if op == "for" else op
        args_model = _args_model(stmt_model, field_name)
        fields = []
        if args_model is not None:
            for name, info in args_model.model_fields.items():
                schema = args_model.model_json_schema(
                    mode="validation", by_alias=True, schema_generator=_Generator
                )
                prop = schema.get("properties", {}).get(info.alias or name, {})
                default = "required" if info.is_required() else _default_text(prop.get("default"))
                fields.append(
                    (
                        info.alias or name,
                        _type_text(prop),
                        default,
                        (field_description(args_model, name) or "").strip(),
                    )
                )
        doc = (args_model.__doc__ or "").strip().splitlines()[0] if args_model is not None else ""
        out.append((op, doc, fields))
    return out


def _args_model(stmt_model: Any, field_name: str) -> Any:
    from gpusim.schedule.program import ForLoop, OpArgs

    if field_name == "for_":
        return ForLoop
    annotation = stmt_model.model_fields[field_name].annotation
    candidates = [annotation, *getattr(annotation, "__args__", ())]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, OpArgs):
            return candidate
    return None


def _default_text(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if value == {}:
        return "{}"
    return str(value)


def _type_text(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return str(prop["const"])
    if "anyOf" in prop:
        parts = [_type_text(p) for p in prop["anyOf"]]
        parts = [p for p in parts if p != "null"]
        if parts == ["number", "boolean", "string"]:
            return "expr"
        return " | ".join(dict.fromkeys(parts))
    if prop.get("type") == "array":
        items = prop.get("prefixItems") or [prop.get("items", {})]
        return "[" + ", ".join(_type_text(i) for i in items) + "]"
    if prop.get("type") == "object":
        return "mapping"
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    return str(prop.get("type", "expr"))
