"""Is a task's server in use? Probes the service wrapper (harness/service.py) runs while its server runs; each
"yes" goes to the master as the task's activity (`POST /api/v1/allocations/{id}/activity`), so its idle timeout
starts over (master/tasks/idle.py).

- `jupyter:<notebook_idle_type>`, Determined's three notebook rules: `kernels_or_terminals` (busy while any kernel
  or terminal exists), `kernel_connections` (while some kernel has a connection: an open notebook tab), `activity`
  (while JupyterLab saw API traffic or a busy kernel since the last probe). Asked of JupyterLab's REST API with the
  service token; `/api/status` itself counts as no activity.
- `sshd`: busy while the shell's sshd has a session open (a child process per connection).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from stalwart.process_tree import parent_of_each

NOTEBOOK_IDLE_TYPES = ("kernels_or_terminals", "kernel_connections", "activity")


@dataclass
class Server:
    """The running server a probe asks."""

    pid: int
    port: int
    base_url: str  # /proxy/<task id>/
    token: str
    seen: dict[str, float] = field(default_factory=dict)  # what a probe keeps between calls


Probe = Callable[[Server], bool]


def _jupyter_get(server: Server, path: str) -> object:
    url = f"http://127.0.0.1:{server.port}{server.base_url}{path}"
    answer = httpx.get(url, headers={"Authorization": f"token {server.token}"}, timeout=5.0)
    answer.raise_for_status()
    return answer.json()


def _stamp(text: object) -> float:
    if not isinstance(text, str):
        return 0.0
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _jupyter(idle_type: str) -> Probe:
    def probe(server: Server) -> bool:
        if idle_type == "activity":
            status = _jupyter_get(server, "api/status")
            last = _stamp(status.get("last_activity") if isinstance(status, dict) else None)
            before, server.seen["last_activity"] = server.seen.get("last_activity", last), last
            busy_kernels = isinstance(status, dict) and bool(status.get("kernels")) and last > before
            return last > before or busy_kernels
        kernels = _jupyter_get(server, "api/kernels")
        kernels = kernels if isinstance(kernels, list) else []
        if idle_type == "kernel_connections":
            return any(int(k.get("connections") or 0) > 0 for k in kernels if isinstance(k, dict))
        terminals = _jupyter_get(server, "api/terminals")
        return bool(kernels) or bool(terminals)
    return probe


def _sshd(server: Server) -> bool:
    return any(parent == server.pid for parent in parent_of_each().values())


def probe_named(name: str) -> Probe:
    """The probe `name` names (`jupyter:<idle type>`, `sshd`); ValueError naming the choices otherwise."""
    kind, _, arg = name.partition(":")
    if kind == "jupyter" and arg in NOTEBOOK_IDLE_TYPES:
        return _jupyter(arg)
    if name == "sshd":
        return _sshd
    raise ValueError(f"unknown busy probe {name!r}: use sshd or jupyter:<one of {', '.join(NOTEBOOK_IDLE_TYPES)}>")
