"""`stalwart resource-pool|rp ...`: which workspaces may use a resource pool (bind, unbind, list-bindings).

A pool bound to no workspace is every workspace's; once bound, only the experiments and commands of the
workspaces it is bound to may ask for it."""

from __future__ import annotations

import click

from stalwart.api.models.workspaces import PoolBindingList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options


@click.group("resource-pool", cls=AliasedGroup, aliases={"bindings": "list-bindings"})
def resource_pool() -> None:
    """Choose which workspaces may use a resource pool.

    A pool bound to no workspace is every workspace's; once bound, only the experiments and commands of the
    workspaces it is bound to may ask for it. `rp` is short for `resource-pool`."""


def _said(answer: PoolBindingList) -> str:
    if not answer.workspaceNames:
        return f"Pool {answer.pool} is bound to no workspace: every workspace may use it."
    return f"Pool {answer.pool} is bound to: {', '.join(answer.workspaceNames)} (only they may use it)."


@resource_pool.command("bind")
@click.argument("pool")
@click.argument("workspace_names", nargs=-1, required=True)
@click.pass_context
def bind(ctx: click.Context, pool: str, workspace_names: tuple[str, ...]) -> None:
    """Reserve a pool for some workspaces, adding to its list.

    Admins only. POOL is bound to each of WORKSPACE_NAMES, besides those it is bound to already; from now on only
    the bound workspaces' new work may ask for it. `unbind` takes workspaces off the list."""
    client = client_of(ctx)
    ids = [client.workspace_by_name(name).id for name in workspace_names]
    output.console.print(_said(client.bind_pool(pool, ids)))


@resource_pool.command("unbind")
@click.argument("pool")
@click.argument("workspace_names", nargs=-1, required=True)
@click.pass_context
def unbind(ctx: click.Context, pool: str, workspace_names: tuple[str, ...]) -> None:
    """Take workspaces off a pool's list of users.

    Admins only. POOL is no longer bound to WORKSPACE_NAMES; a pool left bound to no workspace is open to every
    workspace again. `bind` adds workspaces."""
    client = client_of(ctx)
    ids = [client.workspace_by_name(name).id for name in workspace_names]
    output.console.print(_said(client.unbind_pool(pool, ids)))


@resource_pool.command("list-bindings")
@click.argument("pool")
@format_options
@click.pass_context
def list_bindings(ctx: click.Context, pool: str, fmt: output.Format) -> None:
    """List the workspaces a pool is bound to.

    Only they may use POOL; an empty list means every workspace may. It changes nothing."""
    answer = client_of(ctx).pool_bindings(pool)
    if fmt is output.Format.TABLE and not answer.workspaceIds:
        output.console.print(_said(answer))
        return
    output.emit(fmt, ["Pool", "Workspace ID", "Workspace"],
                [(answer.pool, i, n) for i, n in zip(answer.workspaceIds, answer.workspaceNames, strict=False)],
                json_data=answer)
