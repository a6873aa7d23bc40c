"""The public surface of Determined's SDK (`determined.experimental.client`, release 0.38.1), read from its source
files with `ast` (the package is installed without its dependencies, so it is not imported), and Stalwart's SDK's
surface read with `inspect`, both in one form to compare: functions and methods by their parameters (names, kinds,
defaults) and the kind of value they return (a list, an iterator, or anything else)."""

from __future__ import annotations

import ast
import enum
import inspect
import pathlib
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "positional", "keyword_only", "*args" or "**kwargs"
    default: str | None  # the default's normalized source text; None when it has none


@dataclass(frozen=True)
class CallShape:
    params: tuple[Param, ...]
    returns: str  # "list", "iterator" or "other"


@dataclass
class ClassShape:
    methods: dict[str, CallShape]
    attributes: set[str]  # properties and the public attributes set in __init__
    members: set[str]  # an enum's members


def return_kind(annotation: str | None) -> str:
    text = (annotation or "").replace("typing.", "")
    if re.match(r"(Iterator|Iterable|Generator)\b", text):
        return "iterator"
    if re.match(r"(List|list|Sequence)\b", text):
        return "list"
    return "other"


def normalize_default(text: str) -> str:
    """A default's text, the same for both: `OrderBy.ASC`, `None`, `5.0`, `'x'`..."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.split(".", text.count(".") - 1)[-1] if text.count(".") > 1 else text
    return repr(value)


# -- Determined, from its source ------------------------------------------------------------------------------------
def _params(fn: ast.FunctionDef, skip_self: bool) -> tuple[Param, ...]:
    args = fn.args
    positional = args.posonlyargs + args.args
    pos_defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [Param(a.arg, "positional", None if d is None else normalize_default(ast.unparse(d)))
           for a, d in zip(positional, pos_defaults, strict=True)]
    if args.vararg:
        out.append(Param(args.vararg.arg, "*args", None))
    out += [Param(a.arg, "keyword_only", None if d is None else normalize_default(ast.unparse(d)))
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg:
        out.append(Param(args.kwarg.arg, "**kwargs", None))
    return tuple(out[1:] if skip_self and out and out[0].name in ("self", "cls") else out)


def _function(fn: ast.FunctionDef, in_class: bool) -> CallShape:
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    returns = ast.unparse(fn.returns) if fn.returns else None
    return CallShape(_params(fn, in_class and not static), return_kind(returns))


def _decorated(fn: ast.FunctionDef, name: str) -> bool:
    return any(ast.unparse(d).split(".")[-1] == name or ast.unparse(d) == name for d in fn.decorator_list)


def _class_shape(node: ast.ClassDef) -> ClassShape:
    shape = ClassShape({}, set(), set())
    is_enum = any(ast.unparse(b).endswith("Enum") for b in node.bases)
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            if _decorated(item, "property"):
                shape.attributes.add(item.name)
            elif _decorated(item, "setter") or _decorated(item, "overload"):
                continue
            elif item.name == "__init__":
                shape.methods["__init__"] = _function(item, True)
                shape.attributes |= _self_attributes(item)
            elif not item.name.startswith("_"):
                shape.methods[item.name] = _function(item, True)
        elif is_enum and isinstance(item, ast.Assign):
            shape.members |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.Assign) and not is_enum:
            shape.attributes |= {t.id for t in item.targets if isinstance(t, ast.Name) and not t.id.startswith("_")}
    return shape


def _self_attributes(init: ast.FunctionDef) -> set[str]:
    found = set()
    for node in ast.walk(init):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        for t in targets:
            if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                    and not t.attr.startswith("_")):
                found.add(t.attr)
    return found


@dataclass
class Surface:
    functions: dict[str, CallShape]
    classes: dict[str, ClassShape]
    aliases: dict[str, str]  # a name the module exports for another exported class


def _module_file(root: pathlib.Path, module: str) -> pathlib.Path:
    path = root / module.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _find_class(root: pathlib.Path, module: str, name: str) -> tuple[ClassShape | None, str | None]:
    """The class `name` as module `module` defines or imports it; or the class an alias there names."""
    tree = ast.parse(_module_file(root, module).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return _class_shape(node), None
        if isinstance(node, ast.ImportFrom) and node.module and any((a.asname or a.name) == name for a in node.names):
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            return _find_class(root, node.module, original)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return None, ast.unparse(node.value)
    return None, None


def determined_surface(root: pathlib.Path) -> Surface:
    """`determined.experimental.client`'s public functions, and the public classes it imports, under `root`."""
    tree = ast.parse(_module_file(root, "determined.experimental.client").read_text())
    surface = Surface({}, {}, {})
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            surface.functions[node.name] = _function(node, False)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("determined.common.experim"):
            for alias in node.names:
                name = alias.asname or alias.name
                shape, target = _find_class(root, node.module, alias.name)
                if shape is not None:
                    surface.classes[name] = shape
                elif target is not None:
                    surface.aliases[name] = target
    return surface


# -- Stalwart, by inspect -------------------------------------------------------------------------------------------
_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional", inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
          inspect.Parameter.KEYWORD_ONLY: "keyword_only", inspect.Parameter.VAR_POSITIONAL: "*args",
          inspect.Parameter.VAR_KEYWORD: "**kwargs"}


def _default_text(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def stalwart_callable(fn: Any, method: bool = False) -> CallShape:
    """A function's shape; a method's (`method`, looked up on its class) without its `self`."""
    sig = inspect.signature(fn)
    listed = list(sig.parameters.values())[1 if method else 0:]
    params = tuple(Param(p.name, _KINDS[p.kind], None if p.default is inspect.Parameter.empty
                         else _default_text(p.default)) for p in listed)
    returns = sig.return_annotation
    text = None if returns is inspect.Signature.empty else returns if isinstance(returns, str) else str(returns)
    return CallShape(params, return_kind(text.replace("collections.abc.", "") if text else None))


def stalwart_attributes(cls: type) -> set[str]:
    """A class's public attributes: those its methods set on `self`, its properties and class attributes (with
    those of its bases)."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__ in ("enum", "builtins"):
            continue
        found |= {n for n, v in vars(klass).items() if not n.startswith("_") and not inspect.isfunction(v)}
        for node in ast.walk(ast.parse(inspect.getsource(klass))):
            if isinstance(node, ast.FunctionDef):
                found |= _self_attributes(node)
    return found


# -- comparing ------------------------------------------------------------------------------------------------------
def compare_callable(where: str, theirs: CallShape, ours: CallShape) -> list[tuple[str, str]]:
    """What a call valid against Determined's `theirs` could meet in `ours`: each (key, what differs). Extra
    parameters of ours are fine when they have defaults; Determined's `*args, **kwargs` pass-throughs are not
    compared."""
    out: list[tuple[str, str]] = []
    if theirs.returns != ours.returns:
        out.append((where, f"returns {ours.returns}, Determined's returns {theirs.returns}"))
    if [p.kind for p in theirs.params] == ["*args", "**kwargs"]:
        return out
    our_positional = [p for p in ours.params if p.kind == "positional"]
    by_name = {p.name: p for p in ours.params}
    for index, param in enumerate(theirs.params):
        key = f"{where}({param.name})"
        mine = by_name.get(param.name)
        if mine is None:
            out.append((key, "no such parameter"))
        elif param.kind == "positional" and (index >= len(our_positional) or our_positional[index] is not mine):
            out.append((key, f"not the positional parameter {index + 1}"))
        elif param.kind != mine.kind and not (param.kind == "keyword_only" and mine.kind == "positional"):
            out.append((key, f"a {mine.kind} parameter, Determined's is {param.kind}"))
        elif _default(param.default) != _default(mine.default):
            out.append((key, f"default {mine.default}, Determined's {param.default}"))
    theirs_names = {p.name for p in theirs.params}
    out += [(f"{where}({p.name})", "an extra parameter without a default") for p in ours.params
            if p.name not in theirs_names and p.default is None and p.kind not in ("*args", "**kwargs")]
    return out


def _default(text: str | None) -> str | None:
    return None if text is None else text.replace("ASCENDING", "ASC").replace("DESCENDING", "DESC")
