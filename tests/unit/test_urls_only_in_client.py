"""Only `stalwart.client` builds API URLs: no other module of the package holds an API path in a string.

Excluded: client/ (the one place that knows URLs), master/ (the server defines its routes),
api/routes_table.py and api/determined_routes/ (the routes as data); the UI's static JS is not Python and is not
read. A string is an API path when it holds "/api/v1", or starts with the first segment of an /api/v1 route
("/experiments", f"/trials/{id}/...", "/agents"...). Docstrings are prose and are not read; comments are not
strings.
"""

from __future__ import annotations

import ast
import pathlib

from stalwart.api.routes_table import ROUTES

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "stalwart"
EXCLUDED = ("client", "master", "api/routes_table.py", "api/determined_routes")
PREFIX = "/api/v1/"
SEGMENTS = sorted({r.path[len(PREFIX):].split("/")[0] for r in ROUTES if r.path.startswith(PREFIX)})


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _leading_text(node: ast.AST) -> str | None:
    """The text a string starts with: the whole constant, or an f-string's literal head."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value
    return None


def is_api_path(text: str) -> bool:
    if "/api/v1" in text:
        return True
    for segment in SEGMENTS:
        head = "/" + segment
        if text.startswith(head) and (len(text) == len(head) or text[len(head)] in "/{?"):
            return True
    return False


def api_paths_in(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string in `source` that is an API path."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    inside_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    hits = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inside_fstring:
            continue
        text = _leading_text(node)
        if text is not None and is_api_path(text):
            hits.append((getattr(node, "lineno", 0), text))
    return sorted(hits)


def _modules() -> list[pathlib.Path]:
    return [p for p in sorted(SRC.rglob("*.py"))
            if not any(p.relative_to(SRC).as_posix().startswith(e) for e in EXCLUDED)]


def test_the_detector_finds_api_paths_and_leaves_prose_alone() -> None:
    source = '''
"""Module prose may say GET /api/v1/experiments."""
a = client.get(f"/experiments/{exp_id}")
b = client.post("/agents", {})
c = "/api/v1/master"
d = f"/allocations/{aid}/exited"
e = pathlib.Path(f"/proc/{pid}/stat")
f = "/experimental/thing"
g = f"{url}/docs/rest-api/"
def h():
    """/trials/{id} in a docstring is prose."""
    return "/tasks"
'''
    assert [line for line, _text in api_paths_in(source)] == [3, 4, 5, 6, 12]


def test_no_module_outside_the_client_builds_an_api_url() -> None:
    modules = _modules()
    assert len(modules) > 50, "the scan found too few modules: is SRC right?"
    offenders = [f"{p.relative_to(SRC.parent.parent)}:{line}: {text!r}"
                 for p in modules for line, text in api_paths_in(p.read_text())]
    assert not offenders, ("API paths outside stalwart.client (add a method to the client and call it):\n"
                           + "\n".join(offenders))
