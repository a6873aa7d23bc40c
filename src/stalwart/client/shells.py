"""Shells: start, list, describe, kill; the owner's key; where a shell's tunnel through the master is."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import shells
from stalwart.client.endpoints import Api, body, endpoint

S = "/api/v1/shells"

CREATE = endpoint("POST", S, shells.ShellEnvelope, shells.CreateShell)
LIST = endpoint("GET", S, shells.ShellList)
DESCRIBE = endpoint("GET", S + "/{shell_id}", shells.ShellEnvelope)
KILL = endpoint("POST", S + "/{shell_id}/kill", shells.ShellEnvelope)
KEY = endpoint("GET", S + "/{shell_id}/key", shells.ShellKey)


class ShellsApi(Api):
    def create_shell(self, config: str | dict[str, Any] | None = None, context_b64: str | None = None, *,
                     template: str | None = None) -> shells.ShellEnvelope:
        """`config`: YAML text or a mapping (resources, environment, idle_timeout...; a shell's entrypoint is the
        master's); `context_b64`: base64 of a context .tgz, its working directory; `template`: merged under it."""
        fields: dict[str, Any] = {"config": config if config is not None else {}}
        if template is not None:
            fields["template"] = template
        if context_b64 is not None:
            fields["context"] = context_b64
        return self.call(CREATE, json_body=body(shells.CreateShell, **fields))

    def list_shells(self, *, include_ended: bool = False) -> shells.ShellList:
        return self.call(LIST, params={"all": str(include_ended).lower()})

    def get_shell(self, shell_id: int) -> shells.ShellEnvelope:
        return self.call(DESCRIBE, path={"shell_id": shell_id})

    def kill_shell(self, shell_id: int) -> shells.ShellEnvelope:
        return self.call(KILL, path={"shell_id": shell_id}, json_body={})

    def shell_key(self, shell_id: int) -> shells.ShellKey:
        """The shell's private key (OpenSSH) and login user: its owner's alone. Keep it out of logs and files
        others can read."""
        return self.call(KEY, path={"shell_id": shell_id})

    def shell_tunnel_target(self, shell_id: int) -> tuple[str, dict[str, str]]:
        """The WebSocket URL of the shell's tunnel through the master, and the headers that authenticate it."""
        url = "ws" + self.url.removeprefix("http") + f"/proxy/shell-{shell_id}/"
        auth = self._http.headers.get("authorization")
        return url, ({"Authorization": auth} if auth else {})
