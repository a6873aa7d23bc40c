"""Notebooks: start JupyterLab as a task, describe, list, kill (a task of kind `notebook`)."""

from __future__ import annotations

from pydantic import Field

from stalwart.api.models.common import JsonObject, Request, Response
from stalwart.api.models.tasks import Command


class CreateNotebook(Request):
    config: str | JsonObject | None = Field(default=None, description="YAML text or a mapping: the task's config "
                                            "(resources, environment, idle_timeout, notebook_idle_type, ...); no "
                                            "entrypoint (a notebook runs JupyterLab)")
    context: str | None = Field(default=None, description="base64 of a context .tgz: the notebook's directory")
    owner: str | None = Field(default=None, max_length=128)
    template: str | None = Field(default=None, min_length=1, max_length=256, description="a configuration template "
                                 "merged under the config (docs/templates.md); the merged config is stored")


class NotebookEnvelope(Response):
    notebook: Command
    warnings: list[str] = Field(default_factory=list, max_length=100,
                                description="at start: why it may wait long (more slots than its pool's agents hold)")


class NotebookList(Response):
    notebooks: list[Command]
