"""Saying why a job waits: while a command or an experiment is queued, `cmd run` and `e create --follow` print that
it is queued and why (its pool, the slots it waits for, its place in the pool's queue, the jobs holding the slots,
the scheduler's reason), from the job queue (`GET /api/v1/jobs`), instead of a silence that reads as a lost master."""

from __future__ import annotations

import time

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.api.models.jobs import Job
from stalwart.cli import output
from stalwart.client import Client

POLL_S = 1.0
"""How often the queue is read while a job waits."""
GRACE_S = 3.0
"""How long a job that requests no slot yet (its allocation not made by the scheduling pass) is still waited for."""
NAMED = 3
"""At most this many jobs holding the pool's slots are named."""


def job_of(jobs: list[Job], kind: str, entity_id: int) -> Job | None:
    """The job of the experiment or command (`kind`: EXPERIMENT or COMMAND), or None once it has left the queue."""
    return next((j for j in jobs if j.type == kind and j.entity_id == entity_id and not j.limited), None)


def _name(job: Job) -> str:
    if job.limited or job.entity_id is None:
        return "a job you may not view"
    what = f"{job.type.lower()} {job.entity_id}"
    return f"{what} ({job.name})" if job.name else what


def _slots(n: int) -> str:
    return f"{n} slot{'' if n == 1 else 's'}"


def describe(job: Job, jobs: list[Job], what: str) -> str:
    """One sentence: `what` is queued in its pool, at its place in that pool's queue, waiting for its slots, which
    the named jobs hold; then the scheduler's reason when it gave one."""
    pool = [j for j in jobs if j.resource_pool == job.resource_pool]
    place = 1 + sum(1 for j in pool if j is not job and (j.queue_position or 0) < (job.queue_position or 0))
    holders = [j for j in pool if j is not job and j.slots_allocated > 0]
    text = (f"{what} is queued in pool {job.resource_pool}, place {place} in its queue: it waits for "
            f"{_slots(job.slots_requested)}")
    if holders:
        named = ", ".join(f"{_name(j)}: {_slots(j.slots_allocated)}" for j in holders[:NAMED])
        more = f" and {len(holders) - NAMED} more" if len(holders) > NAMED else ""
        text += f", held by {named}{more}"
    text += "."
    if job.reason:
        text += f" The scheduler says: {job.reason.rstrip('.')}."
    return text


def _read_queue(client: Client) -> list[Job] | None:
    """The job queue; None when it cannot be read (no permission, or another refusal): then nothing is said."""
    while True:
        try:
            return client.list_jobs().jobs
        except MasterUnavailable as err:
            output.info(f"{err}; trying again...")
            time.sleep(POLL_S)
        except StalwartError:
            return None


def wait_while_queued(client: Client, kind: str, entity_id: int, what: str, hint: str = "") -> None:
    """Return once the job holds its slots or has left the queue. Meanwhile say why it waits (`hint` after the first
    such line), and again whenever that changes."""
    said = ""
    started = time.monotonic()
    while True:
        jobs = _read_queue(client)
        job = job_of(jobs, kind, entity_id) if jobs is not None else None
        if jobs is None or job is None or job.state != "QUEUED":
            break
        if job.slots_requested == 0 and not job.reason:
            if time.monotonic() - started > GRACE_S:
                break  # it asks for no slot: nothing to wait for
        else:
            text = describe(job, jobs, what)
            if text != said:
                output.info(text + (f" {hint}" if hint and not said else ""))
                said = text
        time.sleep(POLL_S)
    if said:
        output.info(f"{what} has left the queue.")
