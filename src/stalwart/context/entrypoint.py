"""Check that the file an experiment's entrypoint runs is part of its context."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable

_TRIAL_CLASS = re.compile(r"^[\w.]+:[\w.]+$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O"})
_MAX_LISTED = 10


def check_entrypoint(entrypoint: str | list[str], names: Iterable[str]) -> list[str]:
    """Problems with `entrypoint` given the context's archive paths; empty when it looks fine."""
    try:
        argv = list(entrypoint) if isinstance(entrypoint, (list, tuple)) else shlex.split(entrypoint)
    except ValueError as err:
        return [f"entrypoint: cannot parse {entrypoint!r}: {err}"]
    if not argv:
        return ["entrypoint: it is empty"]
    return _check_command(argv, _Tree(names))


class _Tree:
    """The context's files and the directories they imply."""

    def __init__(self, names: Iterable[str]) -> None:
        names = list(names)
        given_dirs = {_clean(n) for n in names if n.endswith("/")}
        self.files = {_clean(n) for n in names if not n.endswith("/")} - given_dirs - {""}
        self.dirs = (given_dirs | {posixpath.dirname(n) for n in self.files}) - {""}
        for d in list(self.dirs):
            while (d := posixpath.dirname(d)) and d not in self.dirs:
                self.dirs.add(d)
        self.files -= self.dirs  # a bare directory name given without its trailing '/'

    def has_file(self, rel: str) -> bool:
        return rel in self.files

    def exists(self, rel: str) -> bool:
        return rel in self.files or rel in self.dirs

    def missing(self, what: str, rel: str, hint: str = "") -> str:
        return f"entrypoint: {what} is not in the context directory ({hint}{self._listing(rel)})"

    def _listing(self, rel: str) -> str:
        directory = posixpath.dirname(rel)
        while directory and directory not in self.dirs:
            directory = posixpath.dirname(directory)
        children = sorted(
            [f for f in self.files if posixpath.dirname(f) == directory]
            + [d + "/" for d in self.dirs if posixpath.dirname(d) == directory]
        )
        if not children:
            return "the context directory is empty"
        more = ", ..." if len(children) > _MAX_LISTED else ""
        return "files there: " + ", ".join(children[:_MAX_LISTED]) + more


def _clean(name: str) -> str:
    norm = posixpath.normpath(name.strip())
    return "" if norm in (".", "/") or norm.startswith(("../", "/")) or norm == ".." else norm


def _relative(path: str) -> str | None:
    """`path` relative to the context root, or None when it cannot be a context file."""
    if path.startswith(("/", "~")) or "$" in path:
        return None
    norm = posixpath.normpath(path)
    return None if norm == ".." or norm.startswith("../") else norm


def _check_command(argv: list[str], tree: _Tree) -> list[str]:
    argv = _strip_env(argv)
    if not argv:
        return []
    if len(argv) == 1 and _TRIAL_CLASS.match(argv[0]):
        return _check_trial_class(argv[0], tree)
    program = posixpath.basename(argv[0])
    if _PYTHON.match(program):
        return _check_python(argv[1:], tree)
    if program in _SHELLS:
        return _check_shell(argv[1:], tree)
    if _looks_like_script(argv[0]):
        return _check_path(argv[0], tree)
    return []


def _strip_env(argv: list[str]) -> list[str]:
    """Drop leading `NAME=value` words and an `env [options]` prefix."""
    i = 0
    if argv and argv[0] == "env":
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in ("-u", "--unset") else 1
    while i < len(argv) and _ASSIGNMENT.match(argv[i]):
        i += 1
    return argv[i:]


def _looks_like_script(word: str) -> bool:
    return not word.startswith(("/", "-")) and ("/" in word or word.endswith((".sh", ".py")))


def _check_path(path: str, tree: _Tree) -> list[str]:
    rel = _relative(path)
    if rel is None or tree.exists(rel):
        return []
    return [tree.missing(repr(path), rel)]


def _check_trial_class(spec: str, tree: _Tree) -> list[str]:
    module = spec.split(":", 1)[0]
    base = module.replace(".", "/")
    candidates = (f"{base}.py", f"{base}/__init__.py")
    if any(tree.has_file(c) for c in candidates):
        return []
    hint = f"expected {candidates[0]} or {candidates[1]}; "
    return [tree.missing(f"trial class module {module!r}", candidates[0], hint)]


def _check_python(args: list[str], tree: _Tree) -> list[str]:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m":
            return _check_module_run(args[i + 1 :], tree)
        if arg.startswith("-m") and not arg.startswith("--"):
            return _check_module_run([arg[2:], *args[i + 1 :]], tree)
        if arg == "-" or (arg.startswith("-c") and not arg.startswith("--")):
            return []  # stdin or inline code
        if arg.startswith("-"):
            i += 2 if arg in _PYTHON_OPTIONS_WITH_VALUE else 1
            continue
        return _check_path(arg, tree)
    return []


def _check_module_run(rest: list[str], tree: _Tree) -> list[str]:
    if not rest:
        return []
    module, args = rest[0], rest[1:]
    top = module.split(".", 1)[0]
    if tree.exists(top) or tree.has_file(top + ".py"):
        return _check_local_module(module, tree)
    return _check_launched(args, tree)  # an installed module, perhaps a launcher


def _check_local_module(module: str, tree: _Tree) -> list[str]:
    base = module.replace(".", "/")
    candidates = (f"{base}.py", f"{base}/__main__.py")
    if any(tree.has_file(c) for c in candidates):
        return []
    hint = f"expected {candidates[0]} or {candidates[1]}; "
    return [tree.missing(f"module {module!r}", candidates[0], hint)]


def _check_launched(args: list[str], tree: _Tree) -> list[str]:
    """What a launcher (`python3 -m determined.launch.X [opts --] cmd...`) runs in turn."""
    if "--" in args:
        args = args[args.index("--") + 1 :]
    if len(args) >= 2 and args[0] == "--trial":
        return _check_trial_class(args[1], tree)
    if args and args[0].startswith("--trial="):
        return _check_trial_class(args[0].split("=", 1)[1], tree)
    return _check_command(args, tree)


def _check_shell(args: list[str], tree: _Tree) -> list[str]:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return []  # `bash -c ...` / `bash -lc ...`: inline commands are not checked
        if arg in _SHELL_OPTIONS_WITH_VALUE:
            i += 2
            continue
        if arg.startswith(("-", "+")):
            i += 1
            continue
        return _check_path(arg, tree)
    return []
