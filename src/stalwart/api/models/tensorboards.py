"""TensorBoards: start one over experiments or trials, describe, list, kill (a task of kind `tensorboard`)."""

from __future__ import annotations

from pydantic import Field

from stalwart.api.models.common import Id, JsonObject, Request, Response
from stalwart.api.models.tasks import Command


class CreateTensorboard(Request):
    experiment_ids: list[Id] = Field(default_factory=list, max_length=100,
                                     description="the experiments it shows, every trial of each")
    trial_ids: list[Id] = Field(default_factory=list, max_length=100,
                                description="or the trials it shows (not with experiment_ids)")
    config: str | JsonObject | None = Field(default=None, description="YAML text or a mapping: the task's config "
                                            "(resources, environment, idle_timeout, ...); no entrypoint")
    owner: str | None = Field(default=None, max_length=128)
    template: str | None = Field(default=None, min_length=1, max_length=256, description="a configuration template "
                                 "merged under the config (docs/templates.md); the merged config is stored")


class TensorboardEnvelope(Response):
    tensorboard: Command


class TensorboardList(Response):
    tensorboards: list[Command]
