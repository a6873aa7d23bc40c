"""TensorBoards: start one over experiments or trials, describe, list, kill (their logs: the task routes)."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import tensorboards
from stalwart.client.endpoints import Api, body, endpoint

T = "/api/v1/tensorboards"

CREATE = endpoint("POST", T, tensorboards.TensorboardEnvelope, tensorboards.CreateTensorboard)
LIST = endpoint("GET", T, tensorboards.TensorboardList)
DESCRIBE = endpoint("GET", T + "/{tensorboard_id}", tensorboards.TensorboardEnvelope)
KILL = endpoint("POST", T + "/{tensorboard_id}/kill", tensorboards.TensorboardEnvelope)


class TensorboardsApi(Api):
    def create_tensorboard(self, *, experiment_ids: list[int] | None = None, trial_ids: list[int] | None = None,
                           config: str | dict[str, Any] | None = None,
                           template: str | None = None) -> tensorboards.TensorboardEnvelope:
        """A TensorBoard of every trial of `experiment_ids`, or of `trial_ids`; `config`: the task's (resources,
        idle_timeout, ...); `template`: a configuration template merged under it."""
        fields: dict[str, Any] = {"experiment_ids": list(experiment_ids or []), "trial_ids": list(trial_ids or [])}
        if config is not None:
            fields["config"] = config
        if template is not None:
            fields["template"] = template
        return self.call(CREATE, json_body=body(tensorboards.CreateTensorboard, **fields))

    def list_tensorboards(self, *, include_ended: bool = False) -> tensorboards.TensorboardList:
        return self.call(LIST, params={"all": str(include_ended).lower()})

    def get_tensorboard(self, tensorboard_id: int) -> tensorboards.TensorboardEnvelope:
        return self.call(DESCRIBE, path={"tensorboard_id": tensorboard_id})

    def kill_tensorboard(self, tensorboard_id: int) -> tensorboards.TensorboardEnvelope:
        return self.call(KILL, path={"tensorboard_id": tensorboard_id}, json_body={})
