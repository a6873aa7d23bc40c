"""The process a custom searcher runs in: loads the user's search method class and answers the master.

The master starts `python -m stalwart.harness.searcher_worker --context DIR --method MOD:CLASS` for
each experiment with `searcher.name: custom`, so that the user's code never runs inside the master
and a crash or a hang in it cannot take the master down. The context directory comes first on
`sys.path`, then Stalwart's `determined` package (so `from determined import searcher` works).

Protocol: one JSON object per line. The master writes `{"call": NAME, "args": [...]}` to stdin;
the worker answers on its original stdout with `{"ok": true, "result": ...}` or
`{"ok": false, "error": "...", "traceback": "..."}`. Anything the user's code prints goes to
stderr, which the master keeps in its log. The worker exits when stdin closes (the master ended).

Calls: `hello` (load the class, instantiate it with no arguments, build the adapter with the
experiment config), `initial_operations`, `on_validation_completed(rid, metrics, steps)`,
`on_trial_exited(rid, how)`, `progress(per_trial)`, `snapshot`, `restore(snapshot)`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from stalwart.harness.compat import COMPAT_PATH
from stalwart.searcher import Action, Create, Pause, Resume, Shutdown, Stop, TrialExit
from stalwart.searcher.custom import CustomSearch

ACTION_TYPES = {cls.__name__: cls for cls in (Create, Stop, Pause, Resume, Shutdown)}


def encode_actions(actions: Sequence[Action]) -> list[dict[str, Any]]:
    return [{"type": type(a).__name__, **dataclasses.asdict(a)} for a in actions]


def load_method_class(spec: str) -> type:
    """`module:Class` or `pkg.module:Outer.Inner`, imported from the context directory."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"searcher.search_method: expected 'module:Class', got {spec!r}")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"searcher.search_method: module '{module_name}' has no attribute '{qualname}'")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"searcher.search_method: '{spec}' is not a class")
    return obj


class Worker:
    """Answers the master's calls with the user's search method (loaded by `hello`)."""

    def __init__(self, method_spec: str) -> None:
        self.method_spec = method_spec
        self.search: CustomSearch | None = None

    def hello(self, config: dict[str, Any]) -> dict[str, Any]:
        cls = load_method_class(self.method_spec)
        try:
            user = cls()
        except TypeError as exc:
            raise TypeError(f"{self.method_spec}() must be constructible with no arguments ({exc}); read settings "
                            "from the experiment's hyperparameters or constants in the module instead") from exc
        self.search = CustomSearch(user, config)
        return {"pid": os.getpid(), "class": f"{cls.__module__}.{cls.__qualname__}"}

    def handle(self, call: str, args: list[Any]) -> object:
        """The JSON-ready result of one call; `args` are the call's JSON arguments."""
        if call == "hello":
            return self.hello(*args)
        if self.search is None:
            raise RuntimeError("the search method is not loaded yet (no hello)")
        if call == "initial_operations":
            return encode_actions(self.search.initial_operations())
        if call == "on_validation_completed":
            rid, metrics, steps = args
            return encode_actions(self.search.on_validation_completed(rid, metrics, int(steps)))
        if call == "on_trial_exited":
            rid, how = args
            return encode_actions(self.search.on_trial_exited(rid, TrialExit(how)))
        if call == "progress":
            return float(self.search.progress(dict(args[0])))
        if call == "snapshot":
            return self.search.snapshot()
        if call == "restore":
            self.search.restore(args[0])
            return None
        raise ValueError(f"unknown call {call!r}")


def serve(worker: Worker, inp: Iterable[str], out: TextIO) -> None:
    for line in inp:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply: dict[str, object] = {"ok": True, "result": worker.handle(request["call"], request.get("args") or [])}
        except (Exception, SystemExit) as exc:  # every user error goes back to the master as text
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                     "traceback": "".join(traceback.format_exception(exc))}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", required=True, help="the experiment's extracted context directory")
    parser.add_argument("--method", required=True, help="searcher.search_method, as 'module:Class'")
    args = parser.parse_args(argv)
    # The protocol keeps the real stdout; the user's prints go to stderr.
    proto_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.path[:0] = [args.context, str(COMPAT_PATH)]
    for name in [m for m in sys.modules if m == "determined" or m.startswith("determined.")]:
        del sys.modules[name]
    os.chdir(args.context)
    serve(Worker(args.method), sys.stdin, proto_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
