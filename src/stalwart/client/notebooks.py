"""Notebooks: start JupyterLab as a task, describe, list, kill (their logs: the task routes)."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import notebooks
from stalwart.client.endpoints import Api, body, endpoint

N = "/api/v1/notebooks"

CREATE = endpoint("POST", N, notebooks.NotebookEnvelope, notebooks.CreateNotebook)
LIST = endpoint("GET", N, notebooks.NotebookList)
DESCRIBE = endpoint("GET", N + "/{notebook_id}", notebooks.NotebookEnvelope)
KILL = endpoint("POST", N + "/{notebook_id}/kill", notebooks.NotebookEnvelope)


class NotebooksApi(Api):
    def create_notebook(self, config: str | dict[str, Any] | None = None, context_b64: str | None = None, *,
                        template: str | None = None) -> notebooks.NotebookEnvelope:
        """`config`: the task's (resources, idle_timeout, notebook_idle_type, ...; no entrypoint); `context_b64`:
        base64 of a .tgz of its directory; `template`: a configuration template merged under the config."""
        fields: dict[str, Any] = {}
        if config is not None:
            fields["config"] = config
        if context_b64 is not None:
            fields["context"] = context_b64
        if template is not None:
            fields["template"] = template
        return self.call(CREATE, json_body=body(notebooks.CreateNotebook, **fields))

    def list_notebooks(self, *, include_ended: bool = False) -> notebooks.NotebookList:
        return self.call(LIST, params={"all": str(include_ended).lower()})

    def get_notebook(self, notebook_id: int) -> notebooks.NotebookEnvelope:
        return self.call(DESCRIBE, path={"notebook_id": notebook_id})

    def kill_notebook(self, notebook_id: int) -> notebooks.NotebookEnvelope:
        return self.call(KILL, path={"notebook_id": notebook_id}, json_body={})
