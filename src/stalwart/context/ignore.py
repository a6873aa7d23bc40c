"""Which files of a context are left out: `.detignore` (gitignore syntax) plus built-in rules."""

from __future__ import annotations

from pathlib import Path

import pathspec

from stalwart.api.errors import ContextError

IGNORE_FILE = ".detignore"

# Always applied, after the user's own lines, so a `!` line cannot bring these back.
BUILTIN_IGNORES = ("__pycache__/", "*.py[co]", "*$py.class", "terraform", "terraform_data")


def load_ignore_spec(root: Path) -> pathspec.GitIgnoreSpec:
    """The ignore rules for one root (the context directory or one include directory)."""
    return pathspec.GitIgnoreSpec.from_lines([*_read_user_lines(root), *BUILTIN_IGNORES])


def is_ignored(spec: pathspec.GitIgnoreSpec, rel_path: str, is_dir: bool) -> bool:
    """Whether `rel_path` (posix, relative to its root) is ignored; dirs also match `dir/` rules."""
    return spec.match_file(rel_path + "/" if is_dir else rel_path)


def _read_user_lines(root: Path) -> list[str]:
    path = root / IGNORE_FILE
    if not path.is_file():
        return []
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as err:
        raise ContextError(f"cannot read {path}: {err.strerror or err}") from err
