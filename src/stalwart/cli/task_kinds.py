"""What the CLI groups of the task kinds share (`notebook`, `tensorboard`, `shell`): their config from --config-file
and --config, their context packed, waiting until a task's server answers through the proxy, and opening its
address."""

from __future__ import annotations

import base64
import os
import sys
import time
import webbrowser
from collections.abc import Callable
from typing import Any

from stalwart.api.errors import InvalidStateError
from stalwart.api.models.tasks import Command
from stalwart.cli import output
from stalwart.cli.config_file import read_config_mapping
from stalwart.config import apply_overrides
from stalwart.context import pack_context


def config_of(config_file: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """The task's config: the file's mapping (else {}), with the --config overrides applied."""
    data = read_config_mapping(config_file) if config_file else {}
    return apply_overrides(data, list(overrides)) if overrides else data


def context_of(context_dir: str | None) -> str | None:
    """--context's directory packed (base64, `.detignore` kept), its warnings shown; None without one."""
    if not context_dir:
        return None
    packed = pack_context(context_dir)
    for w in packed.warnings:
        output.warn(w)
    return base64.b64encode(packed.data).decode()


def wait_until_served(get: Callable[[], Command], what: str, group: str, timeout: float,
                      interval: float = 0.5) -> Command:
    """The task (`get` fetches it) once its server answers through the proxy; 409 if it ends first or `timeout`
    seconds pass. `what` names it in messages ("notebook 3"), `group` is its CLI group ("notebook")."""
    deadline = time.monotonic() + timeout
    while True:
        task = get()
        if task.proxy_path:
            return task
        if task.result != "ACTIVE":
            raise InvalidStateError(f"{what} ended before it served anything ({task.end_reason}); "
                                    f"`stalwart {group} logs {task.id}` shows why")
        if time.monotonic() > deadline:
            raise InvalidStateError(f"{what} does not answer yet after {timeout:.0f} s (still {task.state.lower()}); "
                                    f"`stalwart {group} logs {task.id}` shows how far it got, "
                                    f"`stalwart {group} open {task.id}` tries again")
        time.sleep(interval)


def has_display() -> bool:
    """Whether a browser could open here (a desktop, or an X or Wayland display)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def show_address(what: str, url: str, *, browser: bool) -> None:
    """Print where a task is (alone on its line, for scripts) and open it in a browser when asked and possible."""
    output.console.print(f"{what} is at:")
    print(url, flush=True)
    if browser and has_display():
        webbrowser.open(url)
