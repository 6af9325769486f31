"""Field docstrings of the schema models, read from their source only when documentation needs them.

The arch and schedule models document each field with a string literal under it (an attribute
docstring). Pydantic can copy those into each field's ``description`` when the class is created
(``use_attribute_docstrings``), but that reads and tokenizes every model's source at import: about a
sixth of the time ``import gpusim.api`` takes. Only the JSON Schemas and ``gpusim schema`` show the
descriptions, so they read them here, parsing each module's source once.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache
from itertools import pairwise
from typing import Any


@cache
def _module_docstrings(module_name: str) -> dict[str, dict[str, str]]:
    """Per class name defined at the top level of the module: field name -> its attribute docstring."""
    module = sys.modules.get(module_name)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return {}
    out: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = _class_docstrings(node)
    return out


def _class_docstrings(node: ast.ClassDef) -> dict[str, str]:
    docs: dict[str, str] = {}
    for stmt, following in pairwise(node.body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


def field_docstrings(cls: type) -> dict[str, str]:
    """Field name -> attribute docstring for ``cls``, inherited ones included (a subclass's own wins)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        module = getattr(klass, "__module__", None)
        if module is None or klass is object:
            continue
        docs.update(_module_docstrings(module).get(klass.__qualname__, {}))
    return docs


def field_description(model: Any, name: str) -> str | None:
    """The description of field ``name`` of a pydantic ``model``: an explicit one, else its docstring."""
    info = model.model_fields[name]
    return info.description or field_docstrings(model).get(name)
