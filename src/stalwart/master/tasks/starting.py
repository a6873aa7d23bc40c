"""Starting a task of any kind from an API call: a template merged under its config, the config checked and its
context read off the event loop, its workspace and project found, the caller's `create_commands` there checked, and
the task stored with its allocation. Each kind's route (commands, notebooks, TensorBoards, shells) builds its config
(a notebook's entrypoint, a shell's key) and starts it here."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from typing import Any

import yaml

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest
from stalwart.master import offload
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.service import Master
from stalwart.master.tasks import commands
from stalwart.master.templates import expansion
from stalwart.master.workspaces import placement

Shape = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns a kind's config (the template merged in) into the command config it runs as (fills its entrypoint)."""


def config_of(given: str | dict[str, Any] | None) -> dict[str, Any]:
    """A task's config from a request body: a mapping, or YAML text of one (none: {})."""
    config: Any = given if given is not None else {}
    if isinstance(config, str):
        try:
            config = yaml.safe_load(config) or {}
        except yaml.YAMLError as err:
            raise InvalidRequest(f"config: not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise InvalidRequest("config: expected a mapping (the task's config)")
    return config


def _archive(context: str | None) -> bytes | None:
    if not context:
        return None
    try:
        return base64.b64decode(context, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory") from None


def _check(m: Master, config: dict[str, Any], context: str | None) -> tuple[bytes | None, dict[str, Any]]:
    archive = _archive(context)
    return archive, commands.check_command(m, config, archive, read_archive=offload.archive_names)


async def start(m: Master, ident: Identity, owner: str, config: dict[str, Any], *, template: str | None,
                context: str | None, kind: str = "command", shape: Shape | None = None) -> int:
    """Start a task of `kind` for `owner` (the caller); its id. `shape` makes the command config of a kind's
    config once the template is merged in (a template is merged once, here: the merged config is what is stored)."""
    merged = expansion.expand(m, ident, template, config, keys=commands.COMMAND_SPEC)
    if shape is not None:
        merged = shape(merged)
    # Off the event loop: decoding a big context, and reading the archive (in a worker process, see offload).
    archive, checked = await asyncio.to_thread(_check, m, merged, context)
    with m.db.begin() as conn:  # the config's workspace and project (else Uncategorized); it needs create_commands
        project = placement.project_for(conn, checked)
    authz.require(m, ident, P.CREATE_COMMANDS, placement.target(project))
    return commands.create_command(m, merged, archive, owner, checked=checked, project=project, kind=kind)
