"""Shells: starting one (its config), listing and describing them (as any task: tasks.Command), its key."""

from __future__ import annotations

from pydantic import Field

from stalwart.api.models.common import JsonObject, Request, Response
from stalwart.api.models.tasks import Command


class CreateShell(Request):
    config: str | JsonObject | None = Field(default=None, description="YAML text or a mapping: resources, "
                                            "environment, workspace, project, idle_timeout (no entrypoint: a shell "
                                            "runs sshd)")
    context: str | None = Field(default=None, description="base64 of a context .tgz: the shell's working directory")
    template: str | None = Field(default=None, min_length=1, max_length=256, description="a configuration template "
                                 "merged under the config (docs/templates.md); the merged config is stored")


class ShellEnvelope(Response):
    shell: Command


class ShellList(Response):
    shells: list[Command]


class ShellKey(Response):
    private_key: str = Field(description="the shell's private ed25519 key, in OpenSSH format (its owner's alone)")
    user: str | None = Field(default=None, description="the OS user the shell runs as (the owner's agent-user "
                                                       "link); none: the agent's own user")
