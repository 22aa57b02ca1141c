"""lamina.ndarray's modules form a tree: no import cycle at run time, and no
import inside a function or below the top of a file."""

from __future__ import annotations

import ast
from pathlib import Path

import lamina.ndarray

PACKAGE = Path(lamina.ndarray.__file__).parent


def _runtime_imports(tree: ast.Module) -> set[str]:
    """Sibling modules imported at module level, outside ``if TYPE_CHECKING:``."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {a.name for a in node.names}
    return found


def test_no_imports_inside_functions_or_below_definitions() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not inner, f"{path.name}: import inside {node.name}()"
        first_def = next((i for i, n in enumerate(tree.body)
                          if isinstance(n, (ast.FunctionDef, ast.ClassDef))), len(tree.body))
        late = [n for n in tree.body[first_def:] if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not late, f"{path.name}: import below the first definition (line {late[0].lineno})"


def test_modules_form_a_tree() -> None:
    graph = {p.stem: _runtime_imports(ast.parse(p.read_text())) - {"conformance"}
             for p in PACKAGE.glob("_*.py")}
    state: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        assert state.get(name) != "open", f"import cycle: {' -> '.join(path + (name,))}"
        state[name] = "open"
        for dep in graph.get(name, ()):
            visit(dep, path + (name,))
        state[name] = "done"

    for name in graph:
        visit(name, ())
    assert "_ndarray" not in graph["_compute"] and "_creation" not in graph["_compute"]
