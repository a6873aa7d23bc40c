"""No function over 60 lines and no file over 450 lines in src, tests and bench (issue 27), migrations excepted:
a long function is steps without names, a long file more than one job."""

from __future__ import annotations

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
ROOTS = ("src/stalwart", "tests", "bench")
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 450


def _sources() -> list[pathlib.Path]:
    return [p for root in ROOTS for p in sorted((REPO / root).rglob("*.py")) if "migrations" not in p.parts]


def test_no_file_is_over_450_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in _sources() if (n := p.read_text().count("\n")) > MAX_FILE_LINES}
    assert long == {}, f"files over {MAX_FILE_LINES} lines (split them by job): {long}"


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for p in _sources():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(REPO)}:{node.lineno} {node.name}"] = n
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines, from def to last line (name their steps): {long}"
