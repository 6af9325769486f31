"""Shipped schedules do not copy role bodies: a run of statements written twice belongs in a template.

The check reads each file of schedules/ and schedules/parts/ as written (before ``extends`` and ``use``
are resolved), normalises every statement list of its roles and templates (program, ``do`` and
``with`` bodies; comments and key order do not count) and fails where the same run of statements,
of at least ``MIN_STATEMENTS`` statements counting nested ones, stands in two places.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from gpusim.schedule.load import schedules_dir
from gpusim.yamlio import read_yaml_mapping

MIN_STATEMENTS = 4
"""Runs shorter than this (a wait and a release, a guard and a store) are idioms, not copies."""


def _weight(statement: Any) -> int:
    """Statements in ``statement``, counting those nested in its bodies."""
    if not isinstance(statement, dict):
        return 1
    return 1 + sum(_weight(s) for body in _bodies(statement) for s in body)


def _bodies(node: Any) -> Iterator[list[Any]]:
    """The statement lists directly inside a statement or a role (do, program, a template's list args)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("do", "program", "body") and isinstance(value, list):
                yield value
            elif key == "with" and isinstance(value, dict):
                yield from (v for v in value.values() if isinstance(v, list) and v and isinstance(v[0], dict))


def _statement_lists(node: Any) -> Iterator[list[Any]]:
    """Every statement list below ``node``, outermost first."""
    for body in _bodies(node):
        yield body
        for statement in body:
            yield from _statement_lists(statement)


def _file_lists(data: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    for name, role in (data.get("roles") or {}).items():
        for body in _statement_lists(role):
            yield f"roles.{name}", body
    for name, template in (data.get("templates") or {}).items():
        if isinstance(template, dict):
            for body in _statement_lists(template.get("role", template)):
                yield f"templates.{name}", body


def _runs(body: list[Any]) -> Iterator[tuple[int, str]]:
    """(start, normalised text) of every shortest run of statements weighing at least MIN_STATEMENTS."""
    for start in range(len(body)):
        weight = 0
        for stop in range(start, len(body)):
            weight += _weight(body[stop])
            if weight >= MIN_STATEMENTS:
                yield start, json.dumps(body[start : stop + 1], sort_keys=True)
                break


def _shipped_files() -> dict[str, dict[str, Any]]:
    root = schedules_dir()
    files = {p.stem: read_yaml_mapping(p) for p in sorted(root.glob("*.yaml"))}
    files.update({f"parts/{p.stem}": read_yaml_mapping(p) for p in sorted((root / "parts").glob("*.yaml"))})
    return files


def copied_runs(files: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(place, place, statements) for each run of statements that stands in two places."""
    seen: dict[str, list[tuple[str, str, int, int]]] = defaultdict(list)
    for file, data in files.items():
        for where, body in _file_lists(data):
            for start, text in _runs(body):
                seen[text].append((file, where, id(body), start))
    copies = []
    for text, places in seen.items():
        distinct = {(file, where, body, start) for file, where, body, start in places}
        if len({(body, start) for _, _, body, start in distinct}) < 2:
            continue
        first, *others = sorted(distinct, key=lambda p: (p[0], p[1], p[3]))
        copies.extend((f"{first[0]}: {first[1]}", f"{o[0]}: {o[1]}", text) for o in others)
    return copies


def test_no_role_body_is_copied() -> None:
    copies = copied_runs(_shipped_files())
    assert not copies, "copied statements (make a template in schedules/parts or the file's templates):\n" + (
        "\n".join(f"{a} ~ {b}: {text[:160]}" for a, b, text in copies[:10])
    )


@pytest.mark.parametrize("nested", [False, True])
def test_a_copied_body_is_found(nested: bool) -> None:
    """The check finds a copy, also one nested in a loop of another role, and ignores short idioms."""
    run = [{"acquire": "ab"}, {"tma_load": {"buf": "ab", "bytes": 1}}, {"wait": "ab"}, {"release": "ab"}]
    body: list[Any] = [{"for": {"k": 4}, "do": run}] if nested else list(run)
    files = {
        "one": {"roles": {"a": {"warps": 1, "program": list(run)}}},
        "two": {"roles": {"b": {"warps": 1, "program": [{"tiles": {}, "do": body}]}}},
    }
    copies = copied_runs(files)
    assert copies and {copies[0][0].split(":")[0], copies[0][1].split(":")[0]} == {"one", "two"}
    short = {name: {"roles": {"r": {"warps": 1, "program": run[:2]}}} for name in ("one", "two")}
    assert copied_runs(short) == []
