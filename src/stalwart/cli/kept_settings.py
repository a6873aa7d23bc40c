"""What a home keeps across `stalwart down` for its next start: the master config its cluster runs with
(`up --config F` copies F there) and the port its master last listened on."""

from __future__ import annotations

import os
import pathlib

from stalwart.api.errors import InvalidStateError
from stalwart.cli import home as homes, output

KEPT_CONFIG = "master-config.yaml"
KEPT_PORT = "master-port"
"""The port this home's master last listened on, kept across `down` so that every later `up` serves the same URL."""


def kept_config(base: pathlib.Path) -> pathlib.Path:
    """Where the home keeps the master config its cluster runs with (`stalwart up --config F` copies F there)."""
    return base / KEPT_CONFIG


def kept_port_file(base: pathlib.Path) -> pathlib.Path:
    """Where the home keeps the port its master last listened on (see KEPT_PORT)."""
    return base / KEPT_PORT


def kept_port(base: pathlib.Path) -> int | None:
    """The port this home's master last listened on; None before its first start (or if the file is unreadable)."""
    text = read_text(kept_port_file(base))
    if text is None or not text.strip().isdigit() or not 0 < int(text) < 65536:
        return None
    return int(text)


def refuse_new_config(base: pathlib.Path, rec: homes.LocalRecord, config: str) -> None:
    """`up --config F` while this home's cluster runs: F is not applied to a running master, so anything but the
    config it runs with is refused (the same one: nothing to do)."""
    running = rec.get("config")
    running_with = read_text(pathlib.Path(running)) if running else None
    if running_with is not None and pathlib.Path(config).read_text() == running_with:
        return
    what = f"another master config ({running})" if running else "no master config"
    raise InvalidStateError(f"this home's cluster is already running ({base}) with {what}; {config} was not "
                            f"applied. Stop it first with `stalwart down`, then `stalwart up --config {config}`")


def read_text(path: pathlib.Path) -> str | None:
    """The file's text; None when it cannot be read."""
    try:
        return path.read_text()
    except OSError:
        return None


def keep(path: pathlib.Path, text: str | None) -> None:
    """Write `text` to `path`, readable by this user only (a master config may hold passwords); None: remove it."""
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.touch(mode=0o600, exist_ok=True)
    os.chmod(path, 0o600)
    path.write_text(text)


def config_to_use(base: pathlib.Path, config: str | None) -> str | None:
    """The master config a new start uses: `config` (copied into the home first, private: it may hold
    passwords), else the one the home kept from an earlier `up --config`, else none."""
    kept = kept_config(base)
    if config is not None:
        keep(kept, pathlib.Path(config).read_text())
        return str(kept)
    if kept.is_file():
        output.info(f"Using the master config kept in {kept} (from `stalwart up --config`; give --config to "
                    f"change it).")
        return str(kept)
    return None
