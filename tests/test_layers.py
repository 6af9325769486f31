"""Layers point one way: no import cycles among gpusim's modules (module-level imports), no private
names imported from another package, and the report layer never runs a simulation."""

from __future__ import annotations

import ast
from pathlib import Path

import gpusim

PACKAGE = Path(gpusim.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool) -> list[tuple[str, list[str]]]:
    """(module, names) imported by ``path``; with ``top_level_only``, only module-level statements."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:  # `if TYPE_CHECKING:` blocks do not run
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpusim"):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("gpusim")]
    return out


def _graph() -> dict[str, set[str]]:
    """Module -> the gpusim modules it imports anywhere (in functions too: a lazy import is still a
    dependency, so the layers must not point both ways even there)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for module, names in _imports(path, top_level_only=False):
            deps |= {f"{module}.{n}" for n in names if f"{module}.{n}" in modules} or {module}
        graph[name] = {d for d in deps if d in modules and d != name and d != "gpusim"}
    return graph


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep] if dep in stack else [node, dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_no_private_names_across_packages() -> None:
    for path in PACKAGE.rglob("*.py"):
        here = _module_name(path).rsplit(".", 1)[0]
        for module, names in _imports(path, top_level_only=False):
            package = module.rsplit(".", 1)[0] if module.count(".") > 1 else module
            if package == here or module == here:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{path.name} imports {private} from {module}"


def test_report_layer_never_simulates() -> None:
    for path in (PACKAGE / "report").glob("*.py"):
        for module, names in _imports(path, top_level_only=False):
            assert module not in ("gpusim.sim.engine", "gpusim.api") or "simulate" not in names, path.name
            assert "predict" not in names, path.name
