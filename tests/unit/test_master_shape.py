"""The master's inside keeps its shape (ARCHITECTURE.md, "The master"): no import of the master inside a function."""

import ast
import pathlib

MASTER = pathlib.Path(__file__).resolve().parents[2] / "src" / "stalwart" / "master"


def _function_level_master_imports(path: pathlib.Path) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(fn):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name == "stalwart.master" or name.startswith("stalwart.master."):
                    found.append(f"{path.relative_to(MASTER.parents[1])}:{node.lineno}: {name}")
    return found


def test_no_module_of_the_master_imports_the_master_inside_a_function():
    # an import inside a function hides a cycle between the master's modules; allocations and the task-kind
    # registry (allocations/kinds.py) are what break those cycles now
    found = [hit for path in sorted(MASTER.rglob("*.py")) for hit in _function_level_master_imports(path)]
    assert found == []
