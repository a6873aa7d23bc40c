"""Commands and tasks: run a program on the cluster, describe, list, kill, follow logs."""

from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import Field

from stalwart.api.models.common import Id, JsonObject, Request, Response, Timestamp


class CreateCommand(Request):
    config: Union[str, JsonObject] = Field(description="YAML text or a mapping with `entrypoint`")
    context: Optional[str] = Field(default=None, description="base64 of a context .tgz")
    owner: Optional[str] = Field(default=None, max_length=255)


class Command(Response):
    id: Id
    type: str
    description: Optional[str] = None
    state: str
    owner: Optional[str] = None
    resource_pool: Optional[str] = None
    created_at: Timestamp
    ended_at: Optional[Timestamp] = None
    exit_code: Optional[int] = None
    result: Optional[str] = None
    entrypoint: Any = None
    pending_reason: Optional[str] = None


class CommandEnvelope(Response):
    command: Command


class TaskList(Response):
    tasks: list[Command]


class TaskEnvelope(Response):
    task: Command
