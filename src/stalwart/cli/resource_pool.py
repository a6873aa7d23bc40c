"""`stalwart resource-pool|rp ...`: the resource pools and their size now (list), and which workspaces may use a pool
(bind, unbind, list-bindings).

A pool bound to no workspace is every workspace's; once bound, only the experiments and commands of the
workspaces it is bound to may ask for it."""

from __future__ import annotations

import click

from stalwart.api.models.elastic import ElasticInstance, PoolInstances
from stalwart.api.models.workspaces import PoolBindingList, ResourcePool, ResourcePoolList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options


@click.group("resource-pool", cls=AliasedGroup, aliases={"bindings": "list-bindings", "ls": "list"})
def resource_pool() -> None:
    """List resource pools; choose which workspaces may use one.

    `list` shows every pool with its resource manager, nodes, slots and runs; `describe` an elastic pool's cloud
    instances and the provisioner's decisions. A pool bound to no workspace is
    every workspace's; once bound, only the experiments and commands of the workspaces it is bound to may ask
    for it. `rp` is short for `resource-pool`."""


POOL_COLUMNS = ["Name", "Description", "Type", "Scheduler", "Default", "Nodes", "Accepting", "Slots", "Used", "Free",
                "Pending", "Running"]


def _pool_row(p: ResourcePool) -> tuple[object, ...]:
    defaults = "/".join(kind for kind, is_it in (("compute", p.defaultComputePool), ("aux", p.defaultAuxPool))
                        if is_it)
    sizes: tuple[object, ...] = (p.numAgents, p.acceptingAgents, p.slotsAvailable, p.slotsUsed, p.slotsFree)
    if p.error is not None:
        sizes = ("?",) * len(sizes)
    return (p.name, p.description, p.type, p.schedulerType, defaults, *sizes, p.pendingRuns, p.runningRuns)


@resource_pool.command("list")
@format_options
@click.pass_context
def list_pools(ctx: click.Context, fmt: output.Format) -> None:
    """List the resource pools with their nodes, slots and runs.

    Every pool of the master config, in its order: its resource manager (agent or slurm), what orders its queue,
    whether it is the default compute or aux pool, its nodes (agents or Slurm nodes) and those taking new work,
    its slots in all, used and free, and its runs waiting and running. A pool whose engine could not be asked
    shows `?` and, under the table, why. `--json` prints the master's answer (`GET /api/v1/resource-pools`)."""
    pools = client_of(ctx).resource_pools()
    output.emit(fmt, POOL_COLUMNS, [_pool_row(p) for p in pools], json_data=ResourcePoolList(resourcePools=pools))
    if fmt is output.Format.TABLE:
        for p in pools:
            if p.error is not None:
                output.console.print(f"Pool {p.name}: {p.error}")


INSTANCE_COLUMNS = ["Instance", "Agent", "State", "Launched", "Registered", "Idle since", "Ended", "Reason"]


def _instance_row(i: ElasticInstance) -> tuple[object, ...]:
    state = "IDLE" if i.state == "RUNNING" and i.idleSince is not None else i.state
    return (i.id, i.agentId, state, output.when(i.launchedAt), output.when(i.registeredAt), output.when(i.idleSince),
            output.when(i.endedAt), i.reason or "")


def _describe_lines(got: PoolInstances) -> list[str]:
    if got.provider is None:
        return [f"Pool {got.pool} has no provider: its agents join it on their own (docs/elastic-agents.md)."]
    lines = [f"Pool {got.pool}: {got.provider} instances, {got.minInstances} to {got.maxInstances}, "
             f"{got.instanceSlots} slot(s) each. Last decisions, newest first:"]
    for d in got.decisions:
        done = [f"launched {', '.join(d.launched)}"] if d.launched else []
        done += [f"terminated {t.instance} ({t.reason})" for t in d.terminated]
        lines.append(f"  {output.when(d.at)}: {'; '.join([*done, *d.notes])}")
    return lines


@resource_pool.command("describe")
@click.argument("name")
@format_options
@click.pass_context
def describe_pool(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """Show an elastic pool's instances and last decisions.

    Each cloud instance the master launched for pool NAME: starting (its agent has not registered yet), running,
    idle (since when), terminating and the last ended ones, each with the reason it ended (idle past
    max_idle_agent_period, never registered within max_agent_starting_period, a spot interruption); then what the
    provisioner decided, newest first. `--json` prints the master's answer
    (`GET /api/v1/resource-pools/NAME/instances`)."""
    got = client_of(ctx).pool_instances(name)
    output.emit(fmt, INSTANCE_COLUMNS, [_instance_row(i) for i in got.instances], json_data=got)
    if fmt is output.Format.TABLE:
        for line in _describe_lines(got):
            output.console.print(line, markup=False)


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
