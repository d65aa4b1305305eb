"""The package's layers import one way: no module imports, even inside a function, one that imports it back.

Read from the sources (ast), so an import inside a function counts as much as one at the top: it runs
later, not never, and a circle of imports is a circle of layers whichever moment it closes. Names are
resolved as Python resolves them: `from . import state` is the module attention_explorer.state, `from
.models import MODELS` the package attention_explorer.models (its __init__), and importing a submodule
runs the packages above it. The views page.py names lazily (views.<module>, imported by views/__init__.py's
__getattr__) are not import statements and are not seen; they are views, which import no layer above
them (docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "attention_explorer"
SOURCE = Path(__file__).resolve().parents[1] / "py" / PACKAGE


def _modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (a package is named by its __init__.py)."""
    out = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.AST) -> set[str]:
    """The package's modules an Import or ImportFrom node of `module` names (empty for anything else)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name == PACKAGE or a.name.startswith(PACKAGE + ".")}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        here = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(here[: len(here) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
        return set()
    # `from base import name`: the submodule base.name when there is one, else an attribute of base
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}


def imports(module: str) -> set[str]:
    """The package's modules `module` imports anywhere in its file (top level, functions, classes),
    with the packages above each one that importing it runs (not those `module` is itself inside)."""
    named = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        named |= _targets(module, node)
    own = {".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 2)}
    above = {".".join(t.split(".")[:k]) for t in named for k in range(1, t.count(".") + 1)}
    return (named | above) - own


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_graph_reader_sees_imports_inside_functions_and_resolves_names():
    assert "attention_explorer.custom_attention" in imports("attention_explorer.state")  # inside functions
    assert "attention_explorer.models" in imports("attention_explorer.state")  # `from . import models`
    assert "attention_explorer.views.markup" in imports("attention_explorer.tour")
    assert "attention_explorer.views" in imports("attention_explorer.tour")  # runs the package above it
    assert "attention_explorer.models" not in imports("attention_explorer.models.designed")  # its own package
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_state_does_not_import_the_tour():
    """The tour is above state (its questions run the model through state.compute): state reads the
    steps from tour_steps, plain data, and never imports tour.py, not even inside a function."""
    assert "attention_explorer.tour" not in imports("attention_explorer.state")
    assert "attention_explorer.tour_steps" in imports("attention_explorer.state")
    assert not {m for m in imports("attention_explorer.tour_steps") if m != PACKAGE}, "tour_steps is plain data"


def test_tour_imports_state_at_its_top():
    tree = ast.parse(MODULES["attention_explorer.tour"].read_text(encoding="utf-8"))
    top = set().union(*(_targets("attention_explorer.tour", node) for node in tree.body))
    assert "attention_explorer.state" in top
    inside = set().union(
        *(
            _targets("attention_explorer.tour", node)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(f)
        )
    )
    assert "attention_explorer.state" not in inside, "state is imported once, at the top"


def test_no_import_circle_among_the_packages_modules():
    graph = {m: imports(m) & set(MODULES) for m in MODULES}
    assert _circles(graph) == []
