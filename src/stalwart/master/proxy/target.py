"""Where `/proxy/{task_id}/...` goes, and who may go there.

A task's proxy id is its kind and number (`notebook-3`, `shell-4`, `tensorboard-5`, `command-6`): the service
was started with `/proxy/<that id>/` as its base path. Its address is the agent that runs its allocation (as
the master sees that agent) and the port the task reported once its server answered; the host is never the
task's to choose, so the proxy reaches nothing but the agents' machines.

Who may open it (docs/tasks.md, "Interactive tasks and the proxy"): a notebook, a shell or a command runs code
as its owner, and a page it serves runs script on the master's own address with the visitor's cookies, so its
owner alone opens it, not even an admin. A TensorBoard serves only files, to whoever may read every experiment
it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from stalwart.api import permissions as P
from stalwart.api.errors import ForbiddenError, InvalidStateError, NotFoundError
from stalwart.api.states import TASK_KINDS
from stalwart.master.allocations import containers
from stalwart.master.identity import authz, tokens
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import allocations as allocation_rows, commands as command_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

KINDS = TASK_KINDS
OWNER_ONLY = ("command", "notebook", "shell")


@dataclass(frozen=True)
class Target:
    """A task's service as the proxy reaches it."""

    task_id: str
    allocation_id: str  # what runs it: traffic through the proxy is its activity (tasks/idle.py)
    host: str  # its agent's address, as the master sees it
    port: int
    service_token: str

    @property
    def base_url(self) -> str:
        """http://host:port"""
        return f"http://{_bracketed(self.host)}:{self.port}"


def parse(task_id: str) -> tuple[str, int]:
    """`notebook-3` → ('notebook', 3); NotFoundError for what is no task's proxy id."""
    kind, _, number = task_id.rpartition("-")
    if kind not in KINDS or not (number.isascii() and number.isdigit()) or len(number) > 18:
        raise NotFoundError(f"no task {task_id!r}: the proxy's paths are /proxy/<kind>-<number>/... with kind one of "
                            f"{', '.join(KINDS)} (see `stalwart cmd list`)")
    return kind, int(number)


def resolve(m: Master, conn: Conn, ident: Identity, task_id: str) -> Target:
    """The service of `task_id`, for `ident` (403 unless allowed; 404, 409 while it serves nothing)."""
    kind, number = parse(task_id)
    try:
        task = command_rows.get(conn, number)
    except NotFoundError:
        task = None
    if task is None or (task["kind"] or "command") != kind:
        raise NotFoundError(f"task {task_id} not found (see `stalwart cmd list`)") from None
    check_may_open(m, ident, task, task_id)
    alloc = allocation_rows.running_of_command(conn, number)
    if alloc is None or alloc["service_port"] is None:
        state = command_rows.state_of(conn, number)
        raise InvalidStateError(f"task {task_id} serves nothing now (it is {state}): a task's server answers once it "
                                f"has started, until the task ends; `stalwart cmd logs {number}` shows how far it got")
    host = containers.addresses(conn, alloc["id"])[0]
    return Target(task_id, alloc["id"], host.strip("[]"), int(alloc["service_port"]),
                  tokens.service_token(m.secret, alloc["id"]))


def check_may_open(m: Master, ident: Identity, task: Row, task_id: str) -> None:
    """The owner alone opens a notebook, a shell or a command; a TensorBoard, whoever may read its experiments."""
    kind = task["kind"] or "command"
    if kind in OWNER_ONLY:
        if ident.username != task["owner"]:
            raise ForbiddenError(f"only {task['owner']}, who started {task_id}, may open it: a {kind} runs its "
                                 "owner's code, and its pages run with the visitor's credentials")
        return
    served = (task["config"].get("tensorboard") or {}).get("experiment_ids") or []
    for target in authz.targets_of(m, [("exp_id", exp_id) for exp_id in served]):
        authz.require(m, ident, P.VIEW_EXPERIMENTS, target)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
