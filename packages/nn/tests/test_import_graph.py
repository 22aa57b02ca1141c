"""lamina-nn's modules import one another without a circle: dependencies point down.

Every import counts, at the top of a file or inside a function: an import moved
into a function still ties the two modules together, it only hides the circle
until the function runs. A submodule's own parent packages are not arrows
(Python has already started them when the submodule is imported).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules of lamina-nn that ``name`` (at ``path``) imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            # `from pkg import sub` imports the module pkg.sub when there is one
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source
                       for a in node.names]
        else:
            continue
        yield from (t for t in targets if t in modules and t != name)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imported(name, path, modules)) for name, path in modules.items()}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order, the first repeated at the
    end), or None when there is none."""
    done: set[str] = set()
    for root in sorted(graph):
        if root in done:
            continue
        path, on_path = [root], {root}
        stack = [(root, iter(sorted(graph[root])))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return [*path[path.index(child):], child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return None


def test_find_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]


def test_the_parser_sees_imports_inside_functions_and_relative_ones():
    graph = _graph()
    assert "lamina.models._checkpoint" in graph["lamina.models._loading"]
    assert "lamina.models.recipes" in graph["lamina.models._loading"]
    # inside a function, for cost
    assert "lamina.distributed" in graph["lamina.models._data_parallel"]
    assert "lamina.distributed._reduce_op" in graph["lamina.distributed._nccl"]


@pytest.mark.parametrize("package", ["lamina.models", "lamina.distributed", "lamina"])
def test_no_import_circle(package):
    graph = _graph()
    inside = {m: {t for t in ts if t.startswith(package)}
              for m, ts in graph.items() if m.startswith(package)}
    circle = find_circle(inside)
    assert circle is None, "import circle: " + " -> ".join(circle or [])
