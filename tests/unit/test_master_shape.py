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


# Routes parse the typed request, call a domain function and return the model; state machines decide
# what happens. Neither holds SQL: reads and writes go through master/queries/ (one module per table).
NO_SQL = [
    "routes/*.py",
    "experiments/experiments.py", "experiments/trials.py", "experiments/searching.py", "experiments/finishing.py",
    "allocations/lifecycle.py", "allocations/containers.py",
    "tasks/commands.py",
    "cluster/agents.py",
    "scheduling/scheduling.py", "scheduling/jobs.py",
]
SQL_MARKS = ("import sqlalchemy", "from sqlalchemy", "stalwart.db import tables", "stalwart.db.tables",
             ".execute(", "sa.select", "sa.insert", "sa.update", "sa.delete", "sa.text(")


def _sql_lines(path: pathlib.Path) -> list[str]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        if any(mark in code for mark in SQL_MARKS):
            out.append(f"{path.relative_to(MASTER.parents[1])}:{n}: {line.strip()}")
    return out


def test_no_route_or_state_machine_module_holds_sql():
    paths = sorted({p for pattern in NO_SQL for p in MASTER.glob(pattern)})
    assert len(paths) >= len(NO_SQL), "a module listed in NO_SQL is gone: update the list"
    found = [hit for path in paths for hit in _sql_lines(path)]
    assert found == [], "SQL belongs in master/queries/:\n" + "\n".join(found)
