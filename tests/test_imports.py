"""The harness's import graph: no circle, and no import that runs back up the pipeline.

Read from the sources with :mod:`ast` (every import, at module level or not, ``TYPE_CHECKING`` or
not): a subpackage may import its own modules and those of the subpackages before it in
:data:`LAYERS`, never one after it (``harness/__init__.py`` says why the order is the pipeline's).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parent.parent / "harness"
LAYERS = (
    ("errors", "layout", "records"),
    ("system",),
    ("matrix",),
    ("recorded",),
    ("classify",),
    ("prepare",),
    ("run",),
    ("probe",),
    ("report",),
    ("publish",),
    ("cli", "__main__"),
)
"""The harness's top-level modules and subpackages, each line after every one it may import."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(HARNESS.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(HARNESS.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The harness modules ``name`` imports: ``from P import M`` imports the module ``P.M`` when
    there is one (not ``P`` itself, whose ``__init__`` Python runs first but which need not import
    ``M`` back), ``from P import N`` of any other name imports ``P``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names):  # a name defined in ``base`` itself
                found.add(base)
    return {imported for imported in found if imported in known and imported != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def layer_of(name: str) -> int:
    """The index in :data:`LAYERS` of the module's top-level part (``harness`` itself: -1, importable by all)."""
    top = name.split(".")[1] if "." in name else ""
    if not top:
        return -1
    for index, layer in enumerate(LAYERS):
        if top in layer:
            return index
    raise AssertionError(f"{name}: not in LAYERS; add its subpackage there")


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_import_circle():
    assert circles(graph()) == []


def test_no_import_runs_back_up_the_pipeline():
    upward = sorted(
        f"{name} imports {target}"
        for name, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )
    assert upward == []


def test_the_checker_finds_a_circle_and_an_upward_import(tmp_path):
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert layer_of("harness.matrix.cells") > layer_of("harness.system.process") > layer_of("harness.errors")
    assert layer_of("harness.report.pages") > layer_of("harness.run.store")
    module = tmp_path / "harness" / "matrix" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text("from harness.run import store\nfrom ..run.runner import Interrupted\nfrom . import cells\n")
    known = {"harness.run.store", "harness.run.runner", "harness.run", "harness.matrix.cells", "harness.matrix"}
    assert imports_of("harness.matrix.m", module, known) == {
        "harness.run.store",
        "harness.run.runner",
        "harness.matrix.cells",
    }


@pytest.mark.parametrize("layer", [layer for layer in LAYERS[1:-1]])
def test_every_subpackage_states_its_contract(layer):
    for name in layer:
        init = HARNESS / name / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init}: no docstring"
