"""`stalwart job|j list|update` and `stalwart e set priority|weight|max-slots`: the job queue."""

from __future__ import annotations

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.jobs import Job
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.client import Client


@click.group("job", cls=AliasedGroup, aliases={"ls": "list", "u": "update"})
def job() -> None:
    """List and reorder the job queue.

    Every experiment and command is a job in its resource pool's queue; the scheduler gives free slots in queue
    order (the priority policy: most urgent priority first, then queue position) or by weight (the fair-share
    policy). `e set` and `cmd set` change an experiment's or a command's keys too. `j` is short for `job`."""


def print_jobs(jobs: list[Job], fmt: output.Format = output.Format.TABLE, json_data: object = None) -> None:
    output.emit(
        fmt, ["#", "Job ID", "Type", "ID", "Name", "Owner", "State", "Priority", "Weight", "Pool", "Slots (alloc/req)",
         "Submitted", "Note"],
        [(j.queue_position, j.job_id, (j.task_kind or j.type).upper(), j.entity_id or "", j.name or "", j.owner or "",
          j.state, j.priority, j.weight, j.resource_pool, f"{j.slots_allocated}/{j.slots_requested}",
          output.when(j.submitted_at),
          "another workspace's job: shown without its details" if j.limited else j.reason or "")
         for j in jobs], json_data=json_data,
    )


@job.command("list")
@click.option("-p", "--resource-pool", default=None, help="Only jobs of this pool.")
@format_options
@click.pass_context
def list_jobs(ctx: click.Context, resource_pool: str | None, fmt: output.Format) -> None:
    """List jobs in queue order, with priority, weight and pool.

    A row per job not yet ended: its queue position, the experiment or command it is, its state (QUEUED, or
    SCHEDULED once it holds slots), priority, weight, pool, slots held and asked for, and why it waits. It changes
    nothing; `update` does."""
    data = client_of(ctx).list_jobs(resource_pool=resource_pool or None)
    print_jobs(data.jobs, fmt, data)


@job.command("update")
@click.argument("job_id")
@click.option("-p", "--priority", type=int, default=None, help="1 (most urgent) .. 99.")
@click.option("-w", "--weight", type=float, default=None, help="Fair-share weight (> 0).")
@click.option("--resource-pool", default=None, help="Move the job to another pool.")
@click.option("--ahead-of", default=None, metavar="JOB_ID", help="Put it just ahead of this job.")
@click.option("--behind-of", default=None, metavar="JOB_ID", help="Put it just behind this job.")
@click.pass_context
def update(ctx: click.Context, job_id: str, priority: int | None, weight: float | None, resource_pool: str | None,
           ahead_of: str | None, behind_of: str | None) -> None:
    """Change a job's priority, weight, pool or queue position.

    Only what is given changes, on the next scheduling pass: --priority, --weight, --resource-pool, and
    --ahead-of or --behind-of another job of the same priority. JOB_ID is the job id `list` shows. `e set` and
    `cmd set` change the same keys by experiment or command id."""
    changes = any(v is not None for v in (priority, weight, resource_pool))
    if not changes and not ahead_of and not behind_of:
        raise InvalidRequest("nothing to update: give --priority, --weight, --resource-pool, --ahead-of or --behind-of")
    if ahead_of and behind_of:
        raise InvalidRequest("give only one of --ahead-of and --behind-of")
    client = client_of(ctx)
    if changes:
        client.update_job(job_id, priority=priority, weight=weight, resource_pool=resource_pool)
    if ahead_of or behind_of:
        client.move_job(job_id, ahead_of=ahead_of, behind_of=behind_of)
    reply = client.get_job(job_id).job
    output.console.print(f"Job {job_id}: priority {reply.priority}, weight {reply.weight}, pool "
                         f"{reply.resource_pool}, queue position {reply.queue_position}.")


SET_KEYS = {"priority": ("priority", int), "weight": ("weight", float), "max-slots": ("max_slots", int)}


def set_job_value(client: Client, kind: str, key: str, entity_id: int, value: str) -> None:
    """Set one scheduling key (SET_KEYS) of an experiment or a command, and say what it is now."""
    field, cast = SET_KEYS[key]
    try:
        parsed = cast(value)
    except ValueError:
        expected = "an integer" if cast is int else "a number"
        raise InvalidRequest(f"{key}: expected {expected}, got {value!r}") from None
    if kind == "experiment":
        job = client.update_experiment_job(entity_id, **{field: parsed}).job
    else:
        job = client.update_command_job(entity_id, **{field: parsed}).job
    output.console.print(f"{kind.capitalize()} {entity_id}: {key} is now {getattr(job, field)} "
                         f"(job {job.job_id}, queue position {job.queue_position}).")


def set_command(kind: str, keys: tuple[str, ...]) -> click.Command:
    """`<noun> set KEY ID VALUE` for experiments (priority, weight, max-slots) or commands (priority)."""

    @click.command("set")
    @click.argument("key", type=click.Choice(keys))
    @click.argument("entity_id", type=int)
    @click.argument("value")
    @click.pass_context
    def set_(ctx: click.Context, key: str, entity_id: int, value: str) -> None:
        set_job_value(client_of(ctx), kind, key, entity_id, value)

    set_.__doc__ = (f"Set a {kind}'s {' or '.join(keys)} in the job queue.\n\n"
                    f"KEY is {' or '.join(keys)}; ENTITY_ID the {kind}'s id; VALUE the new value (priority: 1 most "
                    f"urgent .. 99). It takes effect on the next scheduling pass; `job update` changes the same "
                    f"keys by job id, and can move a job ahead of another.")
    set_.help = set_.__doc__
    return set_
