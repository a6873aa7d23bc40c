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


# Routes parse the typed request, call a domain function and return the model; state machines decide what
# happens; the UI's page models shape what they read. None of them holds SQL: reads and writes go through
# master/queries/. The only other home of SQL is service.py, which owns the database (the Master object's cluster
# values and its get_row) and sits below queries/ in the layers.
SQL_HOMES = ("queries/", "service.py")
SQL_MARKS = ("import sqlalchemy", "from sqlalchemy", "stalwart.db import tables", "stalwart.db.tables",
             ".execute(", "sa.select", "sa.insert", "sa.update", "sa.delete", "sa.text(")


def _sql_lines(path: pathlib.Path) -> list[str]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        if any(mark in code for mark in SQL_MARKS):
            out.append(f"{path.relative_to(MASTER.parents[1])}:{n}: {line.strip()}")
    return out


def _no_sql_modules() -> list[pathlib.Path]:
    """Every module of the master but those of SQL_HOMES."""
    return [p for p in sorted(MASTER.rglob("*.py"))
            if not p.relative_to(MASTER).as_posix().startswith(SQL_HOMES)]


def test_no_module_of_the_master_outside_queries_holds_sql():
    paths = _no_sql_modules()
    assert len(paths) > 50, "the walk of the master's modules found too few: is MASTER right?"
    assert all((MASTER / home).exists() for home in SQL_HOMES), "a home of SQL is gone: update SQL_HOMES"
    found = [hit for path in paths for hit in _sql_lines(path)]
    assert found == [], "SQL belongs in master/queries/:\n" + "\n".join(found)
