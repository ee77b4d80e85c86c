"""The engine is pure Python: nothing under engine/ may import Qt."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"PySide6", "shiboken6"}


def _imported_top_modules(source: str, filename: str) -> set[str]:
    tree = ast.parse(source, filename=filename)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def test_no_engine_file_imports_qt():
    files = sorted((ROOT / "engine").rglob("*.py"))
    assert files, "engine/ has no Python files"
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in files
        if (found := _imported_top_modules(path.read_text(), str(path)) & FORBIDDEN)
    }
    assert offenders == {}


def test_importing_engine_does_not_load_qt():
    check = (
        "import taskloom.engine, sys; "
        "bad = {'PySide6', 'shiboken6'} & set(sys.modules); assert not bad"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def _taskloom_imports() -> dict[str, set[str]]:
    """taskloom/'s modules and the taskloom/ modules each imports, anywhere in it
    (inside functions too: a lazy import is still a cycle when both run)."""
    folder = ROOT / "taskloom"
    modules = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found.update(
                    [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                )
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] == "taskloom":
                    found.update(parts[1:2] or [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "taskloom" and len(parts) > 1:
                        found.add(parts[1])
        graph[path.stem] = (found & modules) - {path.stem}
    return graph


def test_the_app_layer_has_no_import_cycle():
    # app.py, launcher.py and watching.py imported each other (issue 23 item 5).
    graph = _taskloom_imports()
    assert {"app", "launcher", "watching"} <= graph.keys()
    assert graph["launcher"] and graph["watching"]  # it sees lazy and relative imports
    cycles = []
    for start in graph:
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert cycles == []
