"""Commands and tasks: run a program on the cluster, describe, list, kill, follow logs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from stalwart.api.models.common import Id, JsonObject, Request, Response, Timestamp


class CreateCommand(Request):
    config: str | JsonObject = Field(description="YAML text or a mapping with `entrypoint`")
    context: str | None = Field(default=None, description="base64 of a context .tgz")
    owner: str | None = Field(default=None, max_length=128)
    template: str | None = Field(default=None, min_length=1, max_length=256, description="a configuration template "
                                 "merged under the config (docs/templates.md); the merged config is stored")


class Command(Response):
    id: Id
    type: str
    description: str | None = None
    state: str
    owner: str | None = None
    project_id: Id | None = None
    resource_pool: str | None = None
    workspace: str | None = Field(default=None, description="the name of its workspace")
    project: str | None = Field(default=None, description="the name of its project")
    created_at: Timestamp
    ended_at: Timestamp | None = None
    exit_code: int | None = None
    result: str | None = None
    end_reason: str | None = Field(default=None, description="why it ended, in words: 'killed by alice', "
                                                             "'idle for more than 30m (its idle_timeout)', ...")
    entrypoint: Any = None
    pending_reason: str | None = None
    kind: str = Field(default="command", description="command, notebook, tensorboard or shell; with the id, the "
                                                    "task's path under the master's proxy: /proxy/<kind>-<id>/")
    proxy_path: str | None = Field(default=None, description="where its server is reached through the master "
                                                             "(/proxy/<kind>-<id>/), while it serves one")
    config: dict[str, Any] | None = Field(default=None, description="its config as stored (a template merged in), "
                                                                    "secrets hidden; in one task's answers only")


class CommandEnvelope(Response):
    command: Command


class TaskList(Response):
    tasks: list[Command]


class TaskEnvelope(Response):
    task: Command
