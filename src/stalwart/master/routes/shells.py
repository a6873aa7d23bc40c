"""/api/v1/shells: start a shell (an sshd reached by `ssh` through the master), list, describe, kill, and its key.

A shell is a task of kind `shell` (master/tasks/shells.py); `stalwart shell open` fetches its key (its owner
alone) and runs `ssh` with the master's proxy as the tunnel (`/proxy/shell-<id>/`, master/proxy/tcp_tunnel.py).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from stalwart.api.errors import ForbiddenError
from stalwart.api.models.shells import CreateShell, ShellEnvelope, ShellKey, ShellList
from stalwart.api.models.tasks import Command
from stalwart.api.routes_table import lookup
from stalwart.master.identity import sessions
from stalwart.master.proxy import target
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import responses, route
from stalwart.master.routes.tasks import ShowAll
from stalwart.master.service import Master
from stalwart.master.tasks import listing, shells, starting

router = APIRouter(prefix="/api/v1", tags=["shells"])
KEY_PATH = "/api/v1/shells/{shell_id}/key"


def _describe(m: Master, shell_id: int) -> Command:
    return Command.model_validate(listing.describe(m, shell_id, shells.KIND))


@route(router, "POST", "/shells")
async def create(request: Request, payload: CreateShell) -> ShellEnvelope:
    """config: YAML text or a mapping (resources, environment, idle_timeout, ...); context: base64 .tgz."""
    m = master(request)
    ident = request.state.identity
    shell_id = await starting.start(m, ident, ident.username, starting.config_of(payload.config),
                                    template=payload.template, context=payload.context or None,
                                    kind=shells.KIND, shape=shells.shaper(m))
    return ShellEnvelope(shell=_describe(m, shell_id))


@route(router, "GET", "/shells")
async def list_shells(request: Request, show_all: ShowAll = False) -> ShellList:
    """The shells of the workspaces the caller may view tasks in."""
    found = listing.visible(master(request), request.state.identity, show_all=show_all, kind=shells.KIND)
    return ShellList(shells=[Command.model_validate(t) for t in found])


@route(router, "GET", "/shells/{shell_id}")
async def describe(request: Request, shell_id: IdPath) -> ShellEnvelope:
    return ShellEnvelope(shell=_describe(master(request), shell_id))


@route(router, "POST", "/shells/{shell_id}/kill")
async def kill(request: Request, shell_id: IdPath) -> ShellEnvelope:
    found = listing.kill(master(request), shell_id, shells.KIND, request.state.identity.username)
    return ShellEnvelope(shell=Command.model_validate(found))


async def key(request: Request, response: Response, shell_id: IdPath) -> ShellKey:
    """The shell's private key and login user, for its owner alone (like opening it through the proxy)."""
    m = master(request)
    ident = sessions.authenticate_proxied(m, request, websocket=False)
    if not request.headers.get("authorization"):  # a page a task serves could read it with its owner's cookie
        raise ForbiddenError("a shell's key goes to the CLI (an access token: Authorization: Bearer TOKEN), never "
                             "to a browser: run `stalwart shell open ID`")
    found = shells.private_key_of(
        m, shell_id, lambda task: target.check_may_open(m, ident, task, f"{shells.KIND}-{shell_id}"))
    response.headers["cache-control"] = "no-store"
    return ShellKey.model_validate(found)


# Not `route(...)`: its auth kind is the proxy's (the shell's owner alone, which no permission of a role expresses),
# checked by early_auth and the handler, as routes/proxy.py's routes are.
router.add_api_route(KEY_PATH.removeprefix("/api/v1"), key, methods=["GET"], response_model=ShellKey,
                     responses=responses(lookup("GET", KEY_PATH)))
