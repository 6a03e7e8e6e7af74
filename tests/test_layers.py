"""The core reads as its pipeline: no module imports from a room above its own, and no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import evalshift_core

PACKAGE = Path(evalshift_core.__file__).parent

# Lowest first. A module may import from its own room and from any room listed before it.
# config validates the stages' settings, so it sits above them; no stage reads evalshift.yaml.
LAYERS = (
    ("_exceptions", "_models", "_io", "_progress", "_limits", "_shapes", "_parallel", "simulator"),
    ("store",),
    ("ingest",),
    ("promote",),
    ("replay",),
    ("evaluators",),
    ("analysis",),
    ("report",),
    ("config",),
    ("_compare", "_evaluation"),
    ("cli", "__init__", "__main__"),
)
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}


def _room(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def _runtime_nodes(tree: ast.AST):
    """Every node of the module except what sits under ``if TYPE_CHECKING:`` (never imported at run time)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in ast.walk(child))
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported evalshift_core module) for every run-time import in the file, lazy ones included."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = []
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ((node.module,) if node.module else ()))
            else:
                name = node.module or ""
            targets = [name] if node.module else [f"{name}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, t) for t in targets if t.startswith("evalshift_core.") or t == "evalshift_core"]
    return found


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_imports_from_a_room_above_its_own():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _room(_module(path))
        for line, target in _imports(path):
            there = _room(target)
            if there in RANK and here in RANK and RANK[there] > RANK[here]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {here} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle_between_modules():
    modules = {_module(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for _, target in _imports(path):
            # "from pkg import name" names a module or a member: keep the longest known module.
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != name and not name.startswith(target + "."):  # a package's own __init__
                edges.add(target)
        graph[name] = edges

    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)
