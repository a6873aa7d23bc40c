"""Notebooks: JupyterLab run as a task, reached through the master's proxy at `/proxy/notebook-<id>/lab`.

A notebook's config is a command's (`COMMAND_SPEC`: resources, environment, bind mounts, workspace, ...) with no
entrypoint of its own: `shape` writes it. JupyterLab starts under the service wrapper (harness/service.py), which
picks its port, fills its base path (`/proxy/notebook-<id>/`) and reports it once it answers, and, with
`--busy jupyter:<notebook_idle_type>`, tells the master while the notebook is in use (master/tasks/idle.py stops it
after `idle_timeout`, else the master config's `notebook_timeout`).

How JupyterLab is set up behind the proxy (jupyter_server 2.x):
- `IdentityProvider.token` comes from the task's service token (env `JUPYTER_TOKEN`, copied from
  `STALWART_SERVICE_TOKEN` by `sh`, so the token is in no command line and no log). The proxy sends it with every
  request (`Authorization: token ...`); no browser ever holds it. A token-authenticated request skips Jupyter's
  XSRF check, which is right here: the master checks a cookie-borne change's `Origin` before forwarding it.
- `allow_remote_access`: the proxy keeps the caller's `Host` (the master's name), which Jupyter would otherwise
  refuse for a server on a loopback address; `--ip=0.0.0.0`: the master reaches the server at its agent's address.
- `stalwart.harness.jupyter_proxied`: JupyterLab would write the token into its pages (and its code send it, which
  the master would refuse); that server extension keeps it out.
- `root_dir=.`: the task's working directory (its context), as Determined's notebooks start there.
- No calls out: no update checks, and a read-only extension manager (no PyPI search, no installs from the UI).
"""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config.provider import duration_s
from stalwart.master.queries import agents as agent_rows
from stalwart.master.queries.rows import Conn
from stalwart.scheduler.planner import impossible

IDLE_TYPES = ("kernels_or_terminals", "kernel_connections", "activity")
"""Determined's `notebook_idle_type`s; the same as the wrapper's probes (harness/busy.py NOTEBOOK_IDLE_TYPES,
tests/unit/test_notebook_shape.py keeps the two equal)."""
DEFAULT_IDLE_TYPE = "kernels_or_terminals"
DESCRIPTION = "JupyterLab notebook"

JUPYTER_OPTIONS = (
    "--no-browser", "--allow-root", "--ip=0.0.0.0", "--port={port}", "--ServerApp.base_url={base_url}",
    "--ServerApp.allow_remote_access=True", "--ServerApp.root_dir=.",
    "--ServerApp.jpserver_extensions=stalwart.harness.jupyter_proxied=True",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
)


def entrypoint(idle_type: str) -> list[str]:
    """The command a notebook runs: the service wrapper, with its busy probe, starting JupyterLab."""
    jupyter = 'JUPYTER_TOKEN="$STALWART_SERVICE_TOKEN" exec python3 -m jupyterlab ' + " ".join(JUPYTER_OPTIONS)
    return ["python3", "-m", "stalwart.harness.service", "--busy", f"jupyter:{idle_type}", "--", "sh", "-c", jupyter]


def shape(config: dict[str, Any]) -> dict[str, Any]:
    """A notebook's config (a template merged in) as the command config it runs as: its idle settings checked, its
    entrypoint JupyterLab (an `entrypoint` given, e.g. by a template shared with commands, is replaced)."""
    idle_type = config.get("notebook_idle_type", DEFAULT_IDLE_TYPE)
    if idle_type not in IDLE_TYPES:
        raise ConfigError(f"notebook_idle_type: {idle_type!r} is not one of {', '.join(IDLE_TYPES)} "
                          f"(default {DEFAULT_IDLE_TYPE}: the notebook is in use while a kernel or terminal exists)")
    timeout = config.get("idle_timeout")
    if timeout is not None and duration_s(timeout) is None:
        raise ConfigError(f"idle_timeout: expected a duration such as 30s, 20m or 1h (or seconds; 0: never), "
                          f"got {timeout!r}")
    return {**config, "notebook_idle_type": idle_type, "entrypoint": entrypoint(idle_type),
            "description": config.get("description") or DESCRIPTION}


def slots_warning(conn: Conn, slots: int, pool: str) -> str | None:
    """Like an experiment's (scheduling/fit.py): a notebook is accepted even if no set of its pool's agents could
    hold its slots, since such agents may join later, but its owner is told (None: it fits, or the pool has no
    agents yet)."""
    sizes = agent_rows.size_counts(conn, pool)
    if not sizes or impossible(slots, pool, sizes) is None:
        return None
    total = sum(size * n for size, n in sizes.items())
    return (f"resources.slots: {slots} slots asked, but the largest agent in pool '{pool}' has {max(sizes)} "
            f"(the pool has {total} in all); the notebook will wait until agents that fit join")
