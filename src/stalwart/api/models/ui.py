"""The web UI's JSON page models (ETag'd GETs and the SSE `model` events): the fields the pages read."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from stalwart.api.models.agents import Agent
from stalwart.api.models.common import Id, JsonObject, Response
from stalwart.api.models.elastic import PoolInstances
from stalwart.api.models.experiments import Experiment
from stalwart.api.models.trials import LogEntry


class UiExperiment(Experiment):
    duration_s: float | None = None
    best: JsonObject | None = None
    can_edit: bool | None = Field(default=None, description="whether the caller may pause, kill or archive it "
                                                            "(edit_experiments: its owner and admins)")
    project_id: int | None = Field(default=None, description="the project it is in")
    project_name: str | None = None
    workspace_id: int | None = Field(default=None, description="the workspace of its project")
    workspace_name: str | None = None


class ExperimentsPage(Response):
    experiments: list[UiExperiment]
    total: int = Field(ge=0)
    offset: int = Field(ge=0)
    limit: int = Field(ge=0)
    sort: str
    order: str
    filters: dict[str, str]
    states: list[str]
    index_ready: bool


class ExperimentPage(Response):
    experiment: UiExperiment
    config_yaml: str | None = None
    searcher: JsonObject
    trials: list[JsonObject]
    trials_total: int = Field(ge=0)
    offset: int = Field(ge=0)
    limit: int = Field(ge=0)
    sort: str
    order: str
    hp_keys: list[str]
    metric_names: dict[str, list[str]]
    index_ready: bool


class HparamsTrial(Response):
    id: Id
    state: str
    hparams: JsonObject
    value: Any = None


class HparamsView(Response):
    experiment_id: Id
    metric: str | None = None
    smaller_is_better: bool
    hp_keys: list[str]
    hp_specs: JsonObject
    constants: JsonObject
    trials: list[HparamsTrial]
    index_ready: bool


class TrialPage(Response):
    series_urls: dict[str, str | None]
    trial: JsonObject
    experiment: JsonObject
    runs: list[JsonObject]
    checkpoints: list[JsonObject]


class TrialLogs(Response):
    logs: list[LogEntry]
    last_id: int = Field(ge=0)
    truncated: bool


class ClusterAgent(Agent):
    slots_detail: list[JsonObject] = Field(default_factory=list)


class Pool(Response):
    name: str
    agents: int = Field(ge=0)
    connected_agents: int = Field(ge=0)
    slots: int = Field(ge=0)
    used_slots: int = Field(ge=0)
    slot_types: list[str]


class ClusterPage(Response):
    agents: list[ClusterAgent]
    pools: list[Pool]
    pending_allocations: int = Field(ge=0)
    elastic: list[PoolInstances] | None = Field(default=None, description="each elastic pool's instances and the "
                                                                          "provisioner's last decisions")


class IndexStatus(Response):
    ready: bool
    rows_folded: int | None = None
    trials: int | None = None
    build_seconds: float | None = None
    memory_bytes: int | None = None
    error: str | None = None
