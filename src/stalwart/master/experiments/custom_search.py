"""Custom searchers run in a process of their own: the master talks to it through a `SearchMethod` proxy.

An experiment with `searcher: {name: custom, search_method: "module:Class"}` gets one worker
process (`stalwart.harness.searcher_worker`) started from its extracted context. The master keeps
the proxy in memory while the experiment lives (one per experiment, in `Master.custom_searchers`);
after a master restart the next event starts a new worker and restores it from the snapshot in the
database, so the search goes on where it was. The worker's state (the adapter's bookkeeping and
whatever the user's `save_method_state` writes) is snapshotted after every event like any searcher.

Failures of the user's code never reach the master as exceptions: a hook that raises, a worker that
dies or does not answer within `STALWART_CUSTOM_SEARCHER_TIMEOUT` seconds (default 120) turns into
`Shutdown(failure=True)` with a reason naming the method and the error, so the experiment ends in
ERROR with that message; loading errors at creation are a `ConfigError` naming
`searcher.search_method`.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config import secrets
from stalwart.context import safe_extract
from stalwart.searcher import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit

log = logging.getLogger(__name__)

_ACTIONS = {cls.__name__: cls for cls in (Create, Stop, Pause, Resume, Shutdown)}


class SearcherFailed(Exception):
    """The user's search method raised, or its process died or hung."""


def _timeout() -> float:
    return float(os.environ.get("STALWART_CUSTOM_SEARCHER_TIMEOUT", "120"))


class SearcherProcess(SearchMethod):
    """A `SearchMethod` whose every call is answered by the worker process."""

    def __init__(self, config: dict[str, Any], archive: bytes, label: str = "") -> None:
        self.spec = str(config["searcher"].get("search_method") or "")
        self.label = label
        self.workdir = tempfile.mkdtemp(prefix="stalwart-searcher-")
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.replies: queue.Queue[str | None] = queue.Queue()
        self.lock = threading.Lock()
        self.last_snapshot: dict[str, Any] | None = None
        self.last_progress = 0.0
        self.pid: int | None = None
        self.proc: subprocess.Popen[str] | None = None
        context = os.path.join(self.workdir, "context")
        safe_extract(archive, context, max_size=None)  # the master checked it against its limits when it came in
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stalwart.harness.searcher_worker", "--context", context, "--method", self.spec],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True,
        )
        threading.Thread(target=self._read_replies, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        try:
            hello = self._call("hello", config)
        except SearcherFailed:
            self.close()
            raise
        self.pid = int(hello["pid"])

    # -- plumbing -----------------------------------------------------------------------------
    def _read_replies(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            self.replies.put(line)
        self.replies.put(None)  # the worker ended

    def _read_stderr(self) -> None:
        assert self.proc and self.proc.stderr
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr_tail.append(line)
            log.info("custom searcher %s%s: %s", self.spec, f" ({self.label})" if self.label else "", line)

    def _tail(self) -> str:
        lines = [x for x in self.stderr_tail if x.strip()]
        return f"; its last output: {lines[-1]}" if lines else ""

    def _call(self, call: str, *args: Any) -> Any:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise SearcherFailed(f"the searcher process is not running (exit code {code}){self._tail()}")
            stdin = self.proc.stdin
            if stdin is None:
                raise SearcherFailed("the searcher process has no stdin to send calls to")
            try:
                stdin.write(json.dumps({"call": call, "args": list(args)}) + "\n")
                stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise SearcherFailed(f"the searcher process went away ({exc}){self._tail()}") from exc
            try:
                line = self.replies.get(timeout=_timeout())
            except queue.Empty:
                self.close()
                raise SearcherFailed(
                    f"{call} did not answer within {_timeout():.0f} s; the process was killed") from None
            if line is None:
                self.proc.wait(timeout=5)
                raise SearcherFailed(
                    f"the searcher process died during {call} (exit code {self.proc.returncode}){self._tail()}")
        reply = json.loads(line)
        if not reply["ok"]:
            log.warning("custom searcher %s failed in %s:\n%s", self.spec, call, reply.get("traceback", ""))
            what = "loading it" if call == "hello" else call
            raise SearcherFailed(f"{what} raised {reply['error']}")
        return reply["result"]

    def _actions(self, call: str, *args: Any) -> list[Action]:
        try:
            encoded = self._call(call, *args)
        except SearcherFailed as exc:
            return [Shutdown(failure=True, reason=f"custom searcher {self.spec}: {exc}")]
        out: list[Action] = []
        for item in encoded:
            item = dict(item)
            out.append(_ACTIONS[item.pop("type")](**item))
        return out

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- SearchMethod -------------------------------------------------------------------------
    def initial_operations(self) -> list[Action]:
        return self._actions("initial_operations")

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        return self._actions("on_validation_completed", request_id, metrics, steps_completed)

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        return self._actions("on_trial_exited", request_id, TrialExit(how).value)

    def progress(self, trial_progress: dict[str, float]) -> float:
        with contextlib.suppress(SearcherFailed):
            self.last_progress = float(self._call("progress", trial_progress))
        return self.last_progress

    def snapshot(self) -> dict[str, Any]:
        try:
            self.last_snapshot = self._call("snapshot")
        except SearcherFailed:
            if self.last_snapshot is None:
                raise
        return self.last_snapshot

    def restore(self, snapshot: dict[str, Any]) -> None:
        try:
            self._call("restore", snapshot)
        except SearcherFailed as exc:
            raise ConfigError(
                f"searcher.search_method: could not restore {self.spec} from its snapshot: {exc}") from exc
        self.last_snapshot = snapshot


def start(config: dict[str, Any], archive: bytes, label: str = "") -> SearcherProcess:
    """Start the worker for a custom searcher; a method that cannot be loaded is a ConfigError."""
    spec = config["searcher"].get("search_method")
    if not spec:
        raise ConfigError("searcher.search_method: required for a custom searcher",
                          details=["searcher.search_method: set it to 'module:Class', the SearchMethod "
                                   "subclass in your context directory"])
    try:
        return SearcherProcess(secrets.redact(config), archive, label)  # the user's code never sees a secret
    except SearcherFailed as exc:
        raise ConfigError(f"searcher.search_method: cannot load {spec!r} from the context: {exc}",
                          details=[f"searcher.search_method: {exc}"]) from None
