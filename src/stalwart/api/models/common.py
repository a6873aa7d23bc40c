"""Shared field types of the REST models: ids, timestamps, metric values, JSON objects, base classes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_ID = 2**63 - 1
Id = Annotated[int, Field(ge=0, le=MAX_ID, description="a database id (signed 64-bit column, never negative)")]
RunId = Annotated[int, Field(ge=0, le=2**31 - 1, description="a trial run number (signed 32-bit column)")]
Steps = Annotated[int, Field(ge=0, le=MAX_ID, description="steps_completed (signed 64-bit column)")]
Uuid = Annotated[str, Field(min_length=1, max_length=64, description="a checkpoint uuid")]
AllocationId = Annotated[str, Field(min_length=1, max_length=64, description="an allocation id (hex uuid)")]
AgentId = Annotated[str, Field(min_length=1, max_length=255, description="an agent id")]
JobId = Annotated[str, Field(min_length=1, max_length=64, description="a job id (hex uuid)")]
Name = Annotated[str, Field(max_length=1024)]
Timestamp = Annotated[float, Field(ge=0, allow_inf_nan=False, description="seconds since the Unix epoch")]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
JsonObject = dict[str, Any]

NonFinite = Literal["NaN", "Infinity", "-Infinity"]
"""How NaN and the infinities travel (api/metric_values.py, docs/metrics.md)."""
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
MetricNumber = int | FiniteFloat | NonFinite
"""A metric's number on the wire: a JSON number, or "NaN" / "Infinity" / "-Infinity"."""
MetricValue = MetricNumber | bool | str | None | list[Any] | dict[str, Any]
"""Any value a metric may hold (numbers as MetricNumber; nested dicts and lists are kept as they are)."""
MetricName = Annotated[str, Field(max_length=256)]
GroupName = Annotated[str, Field(min_length=1, max_length=64)]
Metrics = dict[MetricName, MetricValue]


class Response(BaseModel):
    """Base of response bodies: faithful to today's shapes, so fields the master adds later are kept.

    Response models build their validators on first use (`defer_build`): a trial imports the client, and with it
    every model, but parses only a few kinds of answer (this saves ~30 ms of each trial's start). Request models
    do not: FastAPI builds them as body parameters, and a deferred one makes it warn."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class Request(BaseModel):
    """Base of request bodies: today's master ignores fields it does not know, so the models do too."""

    model_config = ConfigDict(extra="ignore")


class Empty(Response):
    """`{}`: the answer of actions that have nothing to report."""


class Warnings(Response):
    warnings: list[str] = Field(default_factory=list, max_length=1000)
