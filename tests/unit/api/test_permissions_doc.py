"""docs/users.md's permission table is the registry's (`stalwart.api.permissions.REGISTRY`), row for row.

After adding or changing a permission, rewrite the table with `.venv/bin/python tests/unit/api/test_permissions_doc.py`.
"""

from __future__ import annotations

import pathlib
import sys

from stalwart.api.permissions import REGISTRY, Rule

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "users.md"
START = "<!-- permissions table: generated from stalwart.api.permissions.REGISTRY -->"
END = "<!-- end of permissions table -->"
WHO = {Rule.ANYONE: "every active user", Rule.OWNER: "its owner, and admins", Rule.ADMIN: "admins only"}


def table() -> str:
    """The table as the doc holds it: one row per permission, in the registry's order."""
    rows = ["| Permission | What it allows | Who has it (basic mode) |", "|---|---|---|"]
    rows += [f"| `{p.name}` | {p.description} | {WHO[p.basic]} |" for p in REGISTRY.values()]
    return "\n".join(rows)


def documented(text: str) -> str:
    assert START in text and END in text, f"{DOC} lacks the markers around its permission table"
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def test_the_docs_table_is_the_registry() -> None:
    assert documented(DOC.read_text()) == table(), (
        "docs/users.md's permission table differs from stalwart.api.permissions.REGISTRY: rewrite it with "
        "`.venv/bin/python tests/unit/api/test_permissions_doc.py`")


def rewrite() -> None:
    head, rest = DOC.read_text().split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{table()}\n{END}{tail}")


if __name__ == "__main__":
    rewrite()
    sys.exit(0)
